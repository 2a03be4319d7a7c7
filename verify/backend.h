/*
 * backend: what a device must provide to run a plan (memplan verify), and
 * the replay engine's state that backends read.  verify/replay.c owns the
 * tensor states, versions, the live set, placement in the arena or pool,
 * ordering (which copy starts after what), checks and their messages, the
 * iteration loop and the medians; a backend provides the primitives below
 * and times them.  The model is ggml's struct ggml_backend_i: a table of
 * functions, the optional ones NULL and defaulted by the engine.
 *
 * Ordering is by actions: every primitive is issued in schedule order, and
 * "after action k" means after k's end on its engine (a free ends where it is
 * issued; a swap ends when its copy does; a swap-in's checksum, taken after
 * its copy, is part of it).  Engines: compute, host-to-device copies and
 * device-to-host copies, each in issue order.  A backend may run ahead of
 * the issue (CUDA streams) or block (host threads): the engine never reads a
 * measurement before iter_end.
 *
 * Checksums go to slots: the engine numbers them, the backend writes each
 * slot (at once or on its device) and returns its value from slot_sum after
 * iter_end.  Checks are compared when the iteration ends, the first failing
 * one by action index reported.
 *
 * Backends: host (backend_host.c), cuda (backend_cuda.cu, MEMPLAN_CUDA
 * builds).  They are registered in backends.c.
 */
#ifndef MP_BACKEND_H
#define MP_BACKEND_H

#include "exec.h"
#include "pool.h"
#include "profile.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A version of a tensor's bytes: its checksum, known (slot < 0) or in a slot
 * of this iteration, and the op that wrote it. */
struct rp_ver {
	uint64_t sum;
	int32_t slot;
	int32_t writer;            /* op; -1: initial contents */
	bool valid;                /* false: nothing written, nothing to compare */
};

enum { RP_ABSENT, RP_ALLOC, RP_RES, RP_OUT, RP_IN };

struct rp_tensor {
	uint8_t ls;                /* RP_* */
	int32_t cur;               /* allocating action holding its device bytes, -1 */
	int32_t at_alloc, at_free, at_out, at_in;  /* latest such action, -1 */
	struct rp_ver expect;      /* what its last compute wrote */
	bool carry;                /* persistent and resident at the end of the last iteration */
	uint64_t carry_off, carry_bytes;
	uint8_t *host;             /* the backend's host buffer of a swapped tensor */
	struct rp_ver host_ver;    /* what the host buffer holds */
};

/* One copy handed to a backend (copy_out, copy_in). */
struct rp_copy {
	uint32_t act;
	int32_t tensor;
	uint64_t off;              /* device bytes [off, off + held) */
	uint64_t bytes;            /* copied */
	uint64_t held;             /* allocated */
	const uint32_t *after;     /* actions whose end it starts after, besides its mark */
	uint32_t n_after;
	int32_t slot;              /* checksum slot: out before the copy, in after; -1: none */
};

/* The measurements of one iteration, filled by measure(): per action start
 * and end in ms from the iteration's start (alloc, free, wait: start = end),
 * and the totals.  The engine adds the memory replay (peak, step_bytes,
 * resident_bytes). */
struct rp_iter {
	double wall_ms, timeline_ms, stall_ms, alloc_wait_ms, overrun_ms, busy_ms[2], need_scale;
	uint32_t overruns;
	uint64_t peak;
	uint32_t peak_action;
	struct mp_exec_act *act;   /* [n_act] */
	uint64_t *step_bytes;      /* [n_steps] */
};

/* A pending swap-in: issued to its backend once each allocation it waits for
 * has been released (see replay.c). */
struct rp_pend {
	uint32_t act;
	int32_t tensor;
	uint64_t off, bytes;
	uint32_t dep_at, n_dep;    /* dep[]: allocations whose release it waits for */
	struct rp_ver want;
};

/* A swap-out issued this iteration (in order). */
struct rp_dout {
	uint32_t act;
	int32_t tensor;
	uint64_t off, held;
};

/* A checksum compared when the iteration ends. */
struct rp_check {
	uint32_t act;
	int32_t tensor;
	int32_t op;
	uint8_t kind;              /* RP_CK_* */
	int32_t slot;
	struct rp_ver want;
	char *extra;               /* "; 'y' (schedule[k]) at [a, b) overlaps it", malloc'd or NULL */
};
enum { RP_CK_READ, RP_CK_ADD, RP_CK_REBUILT, RP_CK_OUT, RP_CK_IN };

struct backend_i;

struct replay {
	const struct backend_i *be;
	void *ctx;                 /* the backend's own state */
	const struct mp_net *net;
	const struct mp_plan_req *req;
	const struct mp_plan *p;
	const struct mp_schedule *s;
	struct mp_exec_opts o;
	uint64_t mem_bytes;        /* arena or pool range; 0 with async */
	struct mp_pool pool;
	uint32_t n_slots, slot_next;
	bool checking;             /* this iteration takes checksums */
	bool check_first;          /* set by open: only one unmeasured iteration, first, checks */
	uint8_t *swapped;          /* [n_tensors] tensors with swaps: they need host buffers */
	int32_t *first;            /* [n_tensors] first alloc, swap-in or swap-out of each, -1 */
	uint64_t host_bytes;       /* their bytes */
	struct rp_tensor *t;       /* [n_tensors] */
	int32_t *step_of;          /* [n] step of a compute action, else -1 */
	uint32_t *in_at, *out_at;  /* [n_ops] first record of each op's inputs, outputs */
	struct rp_ver *in_ver, *out_ver; /* what each op read and wrote at its compute */
	uint8_t *computed;         /* [n_ops] */
	uint64_t *place_off, *place_bytes;  /* [n] */
	int32_t *rel;              /* [n] action that released allocation k, -1 */
	int32_t *rel_of;           /* [n] a free or swap-out: the allocation it released */
	uint8_t *issued;           /* [n] swap-ins whose copy is issued */
	uint32_t *live_pos, *live, n_live;
	uint32_t *dep, n_dep, cap_dep;
	uint32_t *after, cap_after;
	struct rp_pend *pq;
	uint32_t n_pq, head_pq, cap_pq;
	struct rp_dout *dq;
	uint32_t n_dq, cap_dq;
	uint32_t cs_waited_dq, h2d_waited_dq;  /* swap-outs compute, h2d copies have waited through */
	struct rp_check *ck;
	uint32_t n_ck, cap_ck;
	uint64_t arena_high;
	/* per iteration */
	uint64_t reads, swaps, recomputes, hashed;
	/* failures */
	bool failed;               /* a violation: fail_at, err */
	uint32_t fail_at;
	bool dev_failed;           /* the backend failed: err */
	struct mp_error err;
};

/*
 * The primitives.  Each returns 0, or -1 after replay_dev_error (or a
 * violation: replay_fail).  i is the action issuing it.
 */
struct backend_i {
	const char *name;
	uint32_t align;            /* arena offsets must be multiples of it (1: any) */
	/* set up for R (R->mem_bytes of device memory, host buffers in
	 * R->t[].host for R->swapped); what it learns of the device goes into
	 * out.  It sets R->ctx first: close runs whenever ctx is set.  0; -1
	 * after replay_dev_error; EXEC_NO_DEVICE */
	int (*open)(struct replay *R, struct mp_exec_result *out);
	void (*close)(struct replay *R);
	/* fill n host bytes with the pattern of seed; their checksum */
	uint64_t (*host_fill)(struct replay *R, uint8_t *p, uint64_t n, uint64_t seed);
	/* an iteration starts; measured: it is one of the measured ones */
	int (*iter_begin)(struct replay *R, bool measured);
	/* every engine done (also after a violation or the backend's own
	 * error, which it may answer with -1 at once); slots readable */
	int (*iter_end)(struct replay *R);
	/* the checksum in slot, of bytes bytes */
	uint64_t (*slot_sum)(const struct replay *R, int32_t slot, uint64_t bytes);
	/* after the checks and carries: the iteration's times (rec NULL: not
	 * measured) */
	int (*measure)(struct replay *R, struct rp_iter *rec);
	/* optional: device memory for allocation i, its address in *off
	 * (NULL: the engine places in the arena or pool) */
	int (*place)(struct replay *R, uint32_t i, uint64_t bytes, uint64_t *off);
	/* optional: action i (a free or a swap-out) released allocation k;
	 * a swap-out's copy was issued first */
	int (*release)(struct replay *R, uint32_t i, uint32_t k);
	/* alloc i: compute starts it after action `after` ends (-1: none) */
	int (*alloc)(struct replay *R, uint32_t i, int32_t after);
	int (*free)(struct replay *R, uint32_t i);
	/* a swap's mark: the compute issued before action i, which its copy
	 * starts after */
	int (*mark)(struct replay *R, uint32_t i);
	/* c and c->after are the engine's: copy what outlives the call */
	int (*copy_out)(struct replay *R, const struct rp_copy *c);
	int (*copy_in)(struct replay *R, const struct rp_copy *c);
	/* wait i: compute waits for action `copy` (a swap-out or swap-in; -1: nothing) */
	int (*wait)(struct replay *R, uint32_t i, int32_t copy);
	/* compute or recompute i: op_begin, then hashes of inputs and fills or
	 * hashes of outputs on the compute engine, then op_end after ms (when
	 * one of those fails, op_end is not called: iter_end follows) */
	int (*op_begin)(struct replay *R, uint32_t i);
	/* optional: run i's real kernel (1), or none (0) */
	int (*op_run)(struct replay *R, uint32_t i, uint64_t ws_off);
	/* optional: does recompute i run as the op's compute did (the
	 * rebuild can be compared)?  NULL: yes */
	bool (*same_run)(const struct replay *R, uint32_t i);
	int (*hash)(struct replay *R, uint32_t i, int engine, uint64_t off, uint64_t n, int32_t slot);
	int (*fill)(struct replay *R, uint32_t i, uint64_t off, uint64_t n, uint64_t seed, int32_t slot);
	int (*op_end)(struct replay *R, uint32_t i, double ms);
	/* optional: action i is issued */
	void (*issued)(struct replay *R, uint32_t i);
	/* optional: after the last iteration, what the device measured over
	 * them into out */
	int (*finish)(struct replay *R, struct mp_exec_result *out);

	/* device queries, outside any plan (optional) */
	int (*runtime_version)(void);  /* the runtime built against, e.g. 13000 */
	int (*link)(struct mp_cuda_link *out, struct mp_error *err);  /* verify --probe */
	int (*profile)(const struct mp_net *net, const struct mp_prof_opts *o, struct mp_profile *out,
		       struct mp_error *err);  /* memplan profile */
};
enum { RP_ENGINE_COMPUTE, RP_ENGINE_H2D, RP_ENGINE_D2H };

/* Record the first violation: "schedule[i] kind 'name': detail". */
void replay_fail(struct replay *R, uint32_t i, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Record a backend failure (the first): not a violation. */
void replay_dev_error(struct replay *R, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The pattern seed of tensor t as op wrote it (op -1: initial contents). */
uint64_t replay_seed(int32_t t, int32_t op);

/* Run p on backend be: the engine behind exec_host_run and exec_cuda_run. */
int replay_run(const struct backend_i *be, const struct mp_net *net, const struct mp_plan_req *req,
	       const struct mp_plan *p, const struct mp_exec_opts *o, struct mp_exec_result *out,
	       struct mp_error *err);

/* The backends (backends.c says which were built). */
extern const struct backend_i backend_host, backend_cuda;
const struct backend_i *backend_find(const char *name);

#ifdef __cplusplus
}
#endif

#endif
