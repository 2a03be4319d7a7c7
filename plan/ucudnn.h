/*
 * ucudnn: mu-cuDNN's micro-batching policies (Oyama et al., sections 3.1-3.5).
 * A convolution kernel over a mini-batch of B samples may run as several
 * micro-batches, each with its own cuDNN algorithm, so that a fast algorithm
 * whose workspace only fits at small batch sizes can still be used.
 *
 *   WR  (3.2)    one workspace per kernel, reused by its micro-batches: the
 *                fastest configuration whose largest micro-batch workspace fits.
 *   D   (3.3.1)  the desirable (Pareto) configurations of one kernel: no other
 *                configuration is as fast with less workspace.
 *   WD  (3.3)    one workspace for many kernels, divided into segments: one
 *                desirable configuration per kernel minimising the total time
 *                with the segments' sum under a limit (0-1 ILP, GLPK).
 *
 * Performance comes from the caller through a callback, so the same code
 * plans from measured cuDNN timings or from a model.  Times are additive
 * (micro-batches of one kernel run one after another); a configuration's
 * workspace is the largest of its micro-batches' (they reuse one segment).
 *
 * Ties between configurations of equal time are broken deterministically:
 * WR prefers fewer micro-batches, then less workspace, then the lower
 * algorithm index at each size; the desirable set keeps, for each (time,
 * workspace) point, a configuration with the fewest micro-batches.  So the
 * fastest desirable configuration is exactly as fast as WR's and needs no
 * more workspace, but it may use more micro-batches when time ties.
 */
#ifndef MP_UCUDNN_H
#define MP_UCUDNN_H

#include <stdint.h>

#include "../analysis/base/util.h"

/* mu-cuDNN 3.4's batch size policies: the micro-batch sizes benchmarked in
 * step 1 of WR (all, powerOfTwo, undivided). */
enum ucudnn_policy { UCUDNN_POW2, UCUDNN_ALL, UCUDNN_UNDIVIDED };

/*
 * The sizes of a policy for a mini-batch of batch >= 1 samples, ascending and
 * distinct: UCUDNN_POW2 1, 2, 4, ... below batch, then batch itself
 * (O(log B) sizes); UCUDNN_ALL 1 to batch (O(B)); UCUDNN_UNDIVIDED batch
 * alone.  Returns a new array of *n sizes (the caller frees it).
 */
uint32_t *ucudnn_sizes(uint32_t batch, enum ucudnn_policy policy, uint32_t *n);

/*
 * Performance of one convolution kernel (one op, one phase) for micro-batch
 * size b with algorithm algo (< n_algos): return 0 and fill *ms (finite,
 * >= 0) and *ws_bytes, or -1 if the algorithm cannot run at that size.
 * Called at most once per (candidate size, algorithm) per planning call.
 */
typedef int (*ucudnn_perf_fn)(void *ctx, uint32_t b, uint32_t algo,
			      double *ms, uint64_t *ws_bytes);

struct ucudnn_kernel {
	uint32_t batch;         /* mini-batch size B, >= 1 */
	uint32_t n_algos;       /* algorithms 0 .. n_algos-1, >= 1 */
	const uint32_t *sizes;  /* [n_sizes] candidate micro-batch sizes, each in
				 * 1..batch, any order, duplicates ignored: the
				 * paper's policies are all (1..B), powerOfTwo
				 * (1, 2, 4, .., and B) and undivided (B) */
	uint32_t n_sizes;
	ucudnn_perf_fn perf;
	void *ctx;              /* passed to perf, borrowed */
};

/* One micro-configuration: run `batch` samples with algorithm `algo`. */
struct ucudnn_micro {
	uint32_t batch;
	uint32_t algo;
};

/* A configuration of one kernel: micro-batches summing exactly to B, listed
 * by batch descending, then algorithm ascending. */
struct ucudnn_config {
	uint32_t n;
	struct ucudnn_micro *micro; /* [n], owned */
	double ms;                  /* sum over the micro-batches */
	uint64_t ws_bytes;          /* max over the micro-batches */
};

/* Free c->micro and zero *c; NULL and a zeroed config are no-ops. */
void ucudnn_config_release(struct ucudnn_config *c);
/* Release c[0..n-1] and free the array c (which may be NULL). */
void ucudnn_configs_free(struct ucudnn_config *c, uint32_t n);

/*
 * WR (3.2): T(b) = min over candidate sizes b_u <= b of T_u(b_u) + T(b - b_u),
 * T(0) = 0, where T_u(b_u) is the fastest algorithm at b_u whose workspace is
 * <= ws_limit (UINT64_MAX: no limit).  Fills *out (caller releases it).
 * Returns 0, or -1 with *err for a malformed kernel, a perf value that is not
 * a time, or no configuration that fits (*out is then zeroed).
 * O(|sizes| |algos|) perf calls + O(B |sizes|) time, O(B) memory.
 */
int ucudnn_wr(const struct ucudnn_kernel *k, uint64_t ws_limit,
	      struct ucudnn_config *out, struct mp_error *err);

/*
 * The desirable configuration set of 3.3.1: C(b) = D(union over b_u, c_u in
 * C_u(b_u), c in C(b - b_u) of {c_u} + c), with every micro-configuration's
 * workspace <= ws_limit.  *out is a malloc'd array of *n_out >= 1 configs,
 * by workspace strictly ascending and time strictly descending; the last is
 * as fast as ucudnn_wr's answer.  Free with ucudnn_configs_free.  Returns 0,
 * or -1 with *err as ucudnn_wr (*out = NULL, *n_out = 0).
 * Time O(B |sizes| |U| P (log P + P)) worst case, memory O(B P), where U is
 * the Pareto front of the micro-configurations of one size (<= |algos|) and
 * P the largest front kept at any b; P <= |sizes| |algos| because a
 * configuration's workspace is one of its micro-batches' and the front's
 * workspaces are distinct (in practice P is about 10).
 */
int ucudnn_desirable(const struct ucudnn_kernel *k, uint64_t ws_limit,
		     struct ucudnn_config **out, uint32_t *n_out,
		     struct mp_error *err);

/*
 * WD (3.3): choose one desirable configuration per kernel (each computed
 * with ws_limit = total_limit) minimising the total time subject to the sum
 * of their workspaces <= total_limit: the 0-1 ILP of Eq. 1-4, solved with
 * GLPK (LP relaxation by glp_simplex, then glp_intopt, messages off).  The
 * solution is checked in exact bytes.  out[i] for ks[i] (caller releases
 * each); n_kernels = 0 succeeds with nothing to fill.  Returns 0, or -1 with
 * *err ("kernel 3: ..." for one kernel, or the limit is below the sum of the
 * kernels' smallest workspaces); out[] is then zeroed.
 * Without a binding limit no ILP is built (each kernel takes its fastest).
 */
int ucudnn_wd(const struct ucudnn_kernel *ks, uint32_t n_kernels,
	      uint64_t total_limit, struct ucudnn_config *out,
	      struct mp_error *err);

#endif
