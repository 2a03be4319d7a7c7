/*
 * profile: measuring what plans are built on (memplan profile,
 * memplan-profile(1)).  On a GPU, exec_cuda_profile times each layer's
 * forward and backward with its real kernel (cuDNN/cuBLAS: verify/kop.h) and
 * every convolution algorithm per phase at the micro-batch sizes of mu-cuDNN
 * 3.4; everything around that measurement is host code tested in CI: which
 * micro-batches to measure (prof_batches), the result type (struct
 * mp_profile), and the writer that turns a measurement into a memplan-net/1
 * file (prof_apply).
 *
 * Owns struct mp_profile: its layers, their algorithms and the strings its
 * arena holds, released once by prof_release.
 */
#ifndef MP_PROFILE_H
#define MP_PROFILE_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "../analysis/net/net.h"
#include "../plan/ucudnn.h"

/* Which micro-batch sizes a convolution's algorithms are measured at: the
 * batch size policies of mu-cuDNN 3.4 (powerOfTwo, all, undivided). */
enum mp_prof_batches {
	PROF_BATCH_POW2 = UCUDNN_POW2, PROF_BATCH_ALL = UCUDNN_ALL, PROF_BATCH_FULL = UCUDNN_UNDIVIDED
};
const char *prof_batches_name(enum mp_prof_batches b); /* "pow2", "all", "full" */
int prof_batches_parse(const char *s);                 /* -1 when unknown */

struct mp_prof_opts {
	enum mp_prof_batches batches;
	uint32_t iters;           /* measured runs of each kernel, >= 1; the median counts */
	uint32_t warmup;          /* runs first and not measured */
};
void prof_opts_default(struct mp_prof_opts *o); /* pow2, 10 runs, 3 warm-up */

/*
 * The micro-batch sizes to measure a layer of batch samples at, ascending
 * and distinct (mu-cuDNN 3.4, step 1 of WR): PROF_BATCH_POW2 1, 2, 4, ...
 * below batch, then batch itself (O(log B) sizes: the sizes memplan plan
 * --workspace wr|wd searches, so pow2 measures all it asks for);
 * PROF_BATCH_ALL 1 to batch (O(B)); PROF_BATCH_FULL batch alone.  batch >= 1.
 * Returns a new array of *n sizes (the caller frees it): ucudnn_sizes.
 */
uint32_t *prof_batches(uint32_t batch, enum mp_prof_batches mode, uint32_t *n);

/* One convolution algorithm as measured. */
struct mp_prof_algo {
	const char *name;         /* e.g. "implicit_gemm"; static or in the profile's arena */
	uint32_t batch;           /* micro-batch measured at; 0 (or the layer's batch):
				   * the layer's full batch */
	uint64_t workspace_bytes; /* what the algorithm asked for at that batch */
	double fwd_ms, bwd_ms;    /* medians; < 0: the algorithm has no such phase
				   * (cuDNN's forward and backward algorithms differ) */
};

/* One layer as measured, or why it was not. */
struct mp_prof_layer {
	int32_t layer;            /* index in net->layers (the file's "layers" index) */
	bool measured;            /* false: the file's times stay; why says why */
	const char *why;          /* !measured: "a data layer: nothing runs on the GPU",
				   * kop's reason, ...; static or in the profile's arena */
	double fwd_ms, bwd_ms, update_ms; /* medians of the default implementation;
				   * fwd_ms >= 0 when measured; bwd_ms or update_ms < 0:
				   * that phase was not measured and keeps the file's time */
	uint64_t workspace_bytes; /* scratch the default implementation used (the larger
				   * of its phases'); becomes the layer's "workspace" */
	uint32_t n_algos;
	struct mp_prof_algo *algos; /* [n_algos] malloc'd, owned by the profile */
};

struct mp_profile {
	char device[128];         /* the GPU's name (cudaGetDeviceProperties) */
	uint32_t iters, warmup;   /* as measured (struct mp_prof_opts) */
	enum mp_prof_batches batches;
	uint32_t n_layers;
	struct mp_prof_layer *layers; /* [n_layers] malloc'd, owned: at most one entry per
				       * net layer, in any order; layers without one keep
				       * their times ("not measured") */
	struct mp_arena arena;    /* strings the measurer made (mp_arena_strdup) */
};

void prof_init(struct mp_profile *m);    /* empty: no layers */
void prof_release(struct mp_profile *m); /* frees what it owns; init again to reuse */

/*
 * The measured net: a deep copy of net_root (the JSON net was loaded from)
 * in which every measured layer's "time" is {"fwd", "bwd", "update"} with
 * the measured medians (a phase not measured keeps the file's value, from
 * its "time" or, where it had none, its first algorithm), its "workspace" is
 * the measured default's (absent when 0), and its "algos" are exactly the
 * measured ones ({"name", "batch" for micro-batches, "workspace", "time":
 * {"fwd", "bwd"} with the phases the algorithm has}; absent when none were
 * measured).  Layers not measured, and tensors and ops written directly,
 * stay as they were.  "time_source" becomes "measured:<device>" and
 * "generator" {"tool": "memplan profile", "iters", "warmup", "batches"}
 * (with the file's own generator, if any, as "from").  The result loads
 * with net_load_json.
 *
 * kept_why, when not NULL, is [net->n_layers]: NULL for measured layers,
 * otherwise why the layer kept its times ("not measured" for layers the
 * profile does not list); *n_kept counts them.  Strings are borrowed from m.
 *
 * Returns the new JSON (the caller's reference), or NULL with *err when m
 * does not fit net: a layer index out of range or listed twice, a time not
 * finite or beyond MP_MAX_MS, an algorithm without a name or a phase, above
 * the layer's batch or listed twice at one batch, a workspace above
 * MP_MAX_BYTES, no device name, or net_root with another number of layers.
 * O(layers + algorithms^2 per layer).
 */
json_t *prof_apply(const json_t *net_root, const struct mp_net *net, const struct mp_profile *m,
		      const char **kept_why, uint32_t *n_kept, struct mp_error *err);

/*
 * Measure net on CUDA device 0 (profile_cuda.cu; linked only in a memplan built
 * with MEMPLAN_CUDA): per layer with a real kernel (kop_build), o->warmup
 * runs then o->iters timed runs of its forward, backward and update, the
 * median of each; per convolution, every cuDNN algorithm of each phase at
 * prof_batches(batch, o->batches) with its workspace.  *out is initialised
 * here (prof_release it whatever the result).
 *
 * Returns 0; -1 with *err (a CUDA or cuDNN error); or EXEC_NO_DEVICE
 * (verify/exec.h) with *err when the CUDA runtime finds no usable device.
 */
int exec_cuda_profile(const struct mp_net *net, const struct mp_prof_opts *o, struct mp_profile *out,
		      struct mp_error *err);

#endif
