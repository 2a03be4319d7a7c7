/*
 * exec: running a plan and holding its prediction to account (memplan
 * verify, DESIGN.md "Verify").  The replay engine (replay.c) issues a plan's
 * Schedule action by action to a backend (backend.h), checks that every
 * tensor an op reads is resident and holds exactly the bytes it was produced
 * with, and measures what the simulator predicted: peak device memory,
 * iteration time, stalls, bytes moved and the link bandwidth achieved.
 * Holding the measurement against the prediction is report.h's; whether a
 * CUDA device is present, probe.h's.
 *
 * Backends (backends.c registers those built):
 *   host (backend_host.c)  device memory is a host arena, copy engines are
 *                          threads throttled to the modelled link, compute
 *                          is a timed wait scaled by time_scale; runs
 *                          everywhere
 *   cuda (backend_cuda.cu) built only when nvcc is found (MEMPLAN_CUDA): one
 *                          device arena at the plan's offsets, a first-fit
 *                          pool in one device range, or cudaMallocAsync;
 *                          pinned host buffers, a compute and two copy
 *                          streams ordered by events; ops with shapes run
 *                          their cuDNN/cuBLAS kernels (kern_cuda.cu), the
 *                          others timed kernels
 *
 * Owns struct mp_exec_opts and struct mp_exec_result.
 */
#ifndef MP_EXEC_H
#define MP_EXEC_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "../plan/plan.h"

/* Where allocations go: the plan's static arena offsets, a first-fit pool of
 * 1 KiB blocks (SuperNeurons 3.2.1), or cudaMallocAsync (CUDA only). */
enum mp_exec_alloc { MP_EXEC_ARENA, MP_EXEC_POOL, MP_EXEC_ASYNC };
const char *mp_exec_alloc_name(enum mp_exec_alloc a);
int mp_exec_alloc_parse(const char *s); /* -1 */

/* What a compute action runs on the CUDA backend: its op's cuDNN/cuBLAS
 * kernel where it has one (verify/kop.h), or always a timed kernel of its
 * modelled duration.  The host backend always times. */
enum mp_exec_compute { MP_EXEC_REAL, MP_EXEC_TIMED };
const char *mp_exec_compute_name(enum mp_exec_compute c);
int mp_exec_compute_parse(const char *s); /* -1 */

/* The host backend's clock (memplan-verify(1) --clock).  VIRTUAL: every
 * action lasts exactly its modelled time on its engine's timeline, whatever
 * the host's real work took, and nothing sleeps: the timelines, so the order
 * of memory events and the measured peak, are sim_run's on any host; the
 * threads still move and check every byte, and compute still blocks until a
 * copy it waits for has really ended.  WALL: the timelines are anchored to the
 * real clock, actions sleep out their scaled time and work slower than the
 * model stretches them (an overrun).  The CUDA backend always runs on the
 * GPU's clock. */
enum mp_exec_clock { MP_EXEC_VIRTUAL, MP_EXEC_WALL };
const char *mp_exec_clock_name(enum mp_exec_clock c);

struct mp_exec_opts {
	enum mp_exec_alloc alloc;
	enum mp_exec_compute compute;
	uint32_t iters;           /* measured iterations, >= 1 */
	uint32_t warmup;          /* iterations run first and not measured */
	double time_scale;        /* wall time per modelled time, > 0 (1: real time) */
	uint64_t pool_bytes;      /* pool capacity; 0: the larger of the budget and the arena */
	enum mp_exec_clock clock; /* the host backend's; ignored by the CUDA backend */
	const double *op_factor;  /* [net->n_ops] or NULL: every compute and recompute of
				   * op k lasts its modelled time times op_factor[k] (ops
				   * that run slower or faster than the plan's net says:
				   * memplan-verify(1) --op-times); real kernels keep theirs */
};
void exec_opts_default(struct mp_exec_opts *o); /* arena, 5 iterations, 1 warm-up, scale 1, virtual */

/* One action as the median measured iteration ran it.  Times are wall
 * milliseconds from the iteration's start on the action's engine timeline
 * (see exec_host_run); bytes are the device bytes live after its memory
 * event, as sim_run's resident_bytes. */
struct mp_exec_act {
	double start_ms, end_ms;
	double stall_ms;          /* wait: compute blocked on its swap-in */
	uint64_t resident_bytes;
};

/* What the CUDA backend measures of the device (exec_cuda_run). */
struct mp_exec_cuda {
	bool present;             /* filled by the CUDA backend */
	char name[128];           /* the device's name */
	uint64_t total_bytes;     /* device memory (cudaMemGetInfo) */
	uint64_t used_before_bytes; /* total - free after the context, streams, events and
				     * kernels were loaded, before the arena: context and
				     * library overhead, other processes included */
	uint64_t used_alloc_bytes;  /* the same after the arena and the check buffers */
	uint64_t used_peak_bytes;   /* the most used seen during the measured iterations
				     * (sampled every 64 actions and at each iteration's end) */
	uint64_t pinned_bytes;    /* pinned host buffers of the swapped tensors */
	/* async: the memory pool's high-water marks over the measured
	 * iterations (reset after the warm-up) */
	uint64_t reserved_high_bytes; /* memory it held from the driver (cudaMemPoolAttrReservedMemHigh):
				       * what the device needs with cudaMallocAsync */
	uint64_t used_high_bytes;     /* the most allocated from it at once (cudaMemPoolAttrUsedMemHigh) */
	double timer_ratio;       /* calibration: event ms per global-timer ms */
	uint64_t launches;        /* kernels launched (or real ops issued) per checking iteration */
	/* real kernels (--compute real) */
	char libraries[96];       /* "cuDNN 9.19.0, cuBLAS 13.0.0"; empty when not loaded */
	uint32_t ops_real;        /* compute and recompute actions run by cuDNN/cuBLAS */
	uint32_t ops_timed;       /* ... run as timed kernels of their modelled time */
	uint32_t algos_substituted; /* real actions whose named conv algorithm was
				     * unsupported or did not fit their workspace */
	char timed_why[200];      /* the first timed action and why ("relu1.fwd: ...") */
	uint64_t library_bytes;   /* device memory the kernels hold outside the arena */
	uint32_t checked_iterations; /* iterations whose bytes were hashed and compared: with
				      * real kernels one extra, unmeasured, before the warm-up */
};

struct mp_exec_result {
	enum mp_exec_alloc alloc;
	enum mp_exec_clock clock; /* the clock the backend ran on */
	double time_scale;
	uint32_t iters, warmup;
	double *iter_ms;          /* [iters] wall time of each measured iteration, owned */
	double time_ms;           /* median of iter_ms */
	double timeline_ms;       /* median iteration: the last engine timeline's end */
	double stall_ms;          /* median iteration: compute blocked on waits */
	double alloc_wait_ms;     /* median iteration: allocations waiting for a
				   * swap-out to release memory (0 in a plan that fits) */
	/* memory: the most bytes live at once in the median iteration, with
	 * memory events in the engines' timeline order (sim_run's order) */
	uint64_t live_peak_bytes;
	uint32_t live_peak_action;
	uint64_t live_peak_max_bytes;  /* the same, the largest over the measured iterations */
	uint64_t mem_bytes;       /* the arena, or the pool's range (host memory on the host
				   * backend, device memory on CUDA); 0 with async */
	uint64_t arena_high_bytes;/* arena: the highest byte an allocation reached */
	uint64_t pool_high_bytes; /* pool: its high-water mark over all iterations (1 KiB blocks) */
	uint64_t peak_bytes;      /* what the device would need: arena: live_peak_bytes;
				   * pool: pool_high_bytes; async: cuda.reserved_high_bytes */
	/* copies, per iteration */
	uint64_t h2d_bytes, d2h_bytes;
	uint32_t n_h2d, n_d2h;
	double h2d_busy_ms, d2h_busy_ms;  /* median iteration, wall ms */
	/* checks, per iteration */
	uint64_t reads_checked;   /* tensor reads whose bytes were hashed and compared */
	uint64_t swaps_checked;   /* swap-outs and swap-ins whose copies were compared */
	uint64_t recomputes_checked;
	uint64_t bytes_hashed;
	uint32_t overruns;        /* median iteration: actions whose real work (filling,
				   * hashing, copying) outlasted their scaled time */
	double overrun_ms;        /* the time they lost, wall ms */
	double work_scale;        /* median iteration: the largest real work time over
				   * modelled time of an action with a modelled time;
				   * a time_scale above it leaves every action room */
	uint32_t n_act;
	struct mp_exec_act *act;  /* [n_act] the median iteration, owned */
	uint32_t n_steps;
	uint64_t *step_bytes;     /* [n_steps] most bytes live inside each step, owned */
	uint32_t failed_action;   /* after a violation: its index; UINT32_MAX otherwise */
	struct mp_exec_cuda cuda; /* the CUDA backend's device figures; zero from the host backend */
};

/*
 * Run p on the host backend: o->warmup + o->iters iterations.  The host arena
 * is p->arena_bytes (MP_EXEC_ARENA, every allocation at p->offset) or a pool
 * (MP_EXEC_POOL).  Compute waits each op's time times o->time_scale, after
 * hashing every input and writing every output with a pattern of its own;
 * two copy threads move swapped tensors between the arena and host buffers,
 * each throttled to req->device's bandwidth and latency.  Each engine keeps a
 * timeline: an action starts when its engine and what it depends on are done
 * (sim_run's rules).  On o->clock MP_EXEC_VIRTUAL it lasts exactly its scaled
 * time and nothing sleeps, so the timelines and the peak are sim_run's on any
 * host.  On MP_EXEC_WALL it lasts its scaled time in real time, or its real
 * work if that took longer (an overrun), so host timer jitter does not add up
 * while slow real work shows; without overruns the timelines are sim_run's.
 *
 * Returns 0 with *out filled (release with exec_result_release), or -1 with
 * *err: a violation names the action, the tensor and the step, and sets
 * out->failed_action ("schedule[37] compute 'fc1.fwd': 'pool5.out' does not
 * hold what 'pool5.fwd' wrote (checksum ..., expected ...)"); otherwise the
 * run could not start (host memory, threads) and failed_action is UINT32_MAX.
 */
int exec_host_run(const struct mp_net *net, const struct mp_plan_req *req, const struct mp_plan *p,
		  const struct mp_exec_opts *o, struct mp_exec_result *out, struct mp_error *err);

void exec_result_release(struct mp_exec_result *r);

/* The hash of tensor bytes the executors keep: FNV-1a over 64-bit words in
 * four interleaved lanes, the tail into the first, a final mix with the
 * length.  Exposed for tests. */
uint64_t exec_hash(const void *p, uint64_t n);

/*
 * Run p on the CUDA backend (backend_cuda.cu; linked only when memplan was built
 * with MEMPLAN_CUDA): device 0, o->warmup + o->iters iterations.  Device
 * memory: MP_EXEC_ARENA, one cudaMalloc of p->arena_bytes with every
 * allocation at p->offset; MP_EXEC_POOL, one cudaMalloc of exec_pool_bytes
 * with every allocation where the first-fit pool puts it (out->pool_high_bytes;
 * no room is a violation, as on the host); MP_EXEC_ASYNC, cudaMallocAsync and
 * cudaFreeAsync in stream order from a memory pool of its own that keeps
 * what it reserves (out->cuda.reserved_high_bytes and used_high_bytes over
 * the measured iterations).  Pinned host buffers for the swapped tensors; a
 * compute stream and two copy streams (host to device, device to host)
 * ordered with events as the host backend orders its engines.  With
 * o->compute MP_EXEC_REAL an op with a real kernel (kop_build) runs it
 * through cuDNN/cuBLAS; every other compute or recompute is a sequence of
 * kernels lasting the op's time times o->time_scale on the GPU's global
 * timer: it hashes every input, writes every output with its pattern and
 * spins to the op's end (an overrun if the work took longer).  Checksums are
 * taken on the device into a small buffer and compared after each checking
 * iteration; violations read as exec_host_run's.  Times come from CUDA
 * events, device memory from cudaMemGetInfo (out->cuda).
 *
 * Returns 0 with *out filled (exec_result_release); -1 with *err (a violation
 * sets out->failed_action; otherwise a CUDA error, failed_action UINT32_MAX);
 * or EXEC_NO_DEVICE with *err when the CUDA runtime finds no usable device.
 */
#define EXEC_NO_DEVICE (-3)
int exec_cuda_run(const struct mp_net *net, const struct mp_plan_req *req, const struct mp_plan *p,
		  const struct mp_exec_opts *o, struct mp_exec_result *out, struct mp_error *err);

/* What exec_cuda_link measures on device 0: pinned copies of copy_bytes and
 * of LINK_SMALL each way, the median of 5 after one warm-up copy. */
#define LINK_SMALL 4096
struct mp_cuda_link {
	char name[128];
	uint64_t total_bytes, free_bytes;  /* cudaMemGetInfo before the test buffers */
	uint64_t copy_bytes;               /* 256 MiB, or less where memory is short */
	double h2d_gbps, d2h_gbps;         /* bytes / median copy time, 1e9 bytes per second */
	double latency_us;                 /* a LINK_SMALL copy's median time less its bytes' at that
					    * way's rate, the two ways averaged */
};

/* Measure the link (memplan verify --probe).  0, -1 with *err on a CUDA error,
 * or EXEC_NO_DEVICE with *err.  backend_cuda.cu; MEMPLAN_CUDA builds only. */
int exec_cuda_link(struct mp_cuda_link *out, struct mp_error *err);

/* The CUDA runtime version memplan was built against (e.g. 13000);
 * backend_cuda.cu, MEMPLAN_CUDA builds only. */
int exec_cuda_runtime_version(void);

/*
 * Reject what would make an executor index out of bounds: op and tensor ids,
 * algorithm indices and micro-batch lists (sim_run checks the same, but a
 * schedule handed to an executor may not have been simulated).  0, or -1 with
 * *err and *bad the offending action.
 */
int exec_check_shape(const struct mp_net *net, const struct mp_schedule *s, uint32_t *bad,
		     struct mp_error *err);

/* The capacity of an MP_EXEC_POOL pool in bytes, whole 1 KiB blocks:
 * o->pool_bytes, or (0) the larger of the budget and the plan's arena. */
uint64_t exec_pool_bytes(const struct mp_plan_req *req, const struct mp_plan *p, const struct mp_exec_opts *o);


#endif
