/*
 * sched: the Schedule, memplan's one representation of every strategy: an
 * ordered list of actions (compute, recompute, alloc, free, swap_out, swap_in,
 * wait).  Owns the schedule array and the generic emitter that turns a compute
 * sequence plus chosen swaps into actions with liveness-based alloc/free.
 */
#ifndef MP_SCHED_H
#define MP_SCHED_H

#include <stdbool.h>
#include <stdint.h>

#include "net/net.h"
#include "route.h"

enum mp_act_kind {
	MP_ACT_COMPUTE, MP_ACT_RECOMPUTE, MP_ACT_ALLOC, MP_ACT_FREE,
	MP_ACT_SWAP_OUT, MP_ACT_SWAP_IN, MP_ACT_WAIT,
};
const char *mp_act_name(enum mp_act_kind k);

/* One micro-batch of a divided op (mu-cuDNN): its size and algorithm. */
struct mp_micro {
	uint32_t batch;
	int32_t algo;      /* index in op->algos, -1 default */
};

struct mp_action {
	enum mp_act_kind kind;
	int32_t op;        /* compute, recompute; else -1 */
	int32_t tensor;    /* alloc, free, swap_*, wait; else -1 */
	int32_t algo;      /* compute, recompute: index in op->algos, -1 default */
	uint32_t micro;    /* compute, recompute: number of micro-batches; 1 = the
			    * whole batch with algo; > 1 = the schedule's
			    * micro[micro_at .. micro_at + micro) */
	uint32_t micro_at;
	uint64_t bytes;    /* alloc: bytes reserved (workspace follows the algo) */
	/* filled by sim_run */
	double start_ms, end_ms;
	uint64_t resident_bytes; /* device bytes resident after this action */
};

struct mp_schedule {
	uint32_t n, cap;
	struct mp_action *a;     /* [n], owned */
	uint32_t n_micro, cap_micro;
	struct mp_micro *micro;  /* [n_micro], owned: micro-batch lists of actions */
};

void sched_init(struct mp_schedule *s);
void sched_release(struct mp_schedule *s);
void sched_push(struct mp_schedule *s, enum mp_act_kind kind, int32_t op,
		int32_t tensor, uint64_t bytes);
/* Room for at least n more actions, allocated to the exact size: for an
 * emitter that knows a bound, so that its pushes never double the array
 * (the copy, and the pages of a capacity it does not use). */
void sched_reserve(struct mp_schedule *s, uint32_t n);
/* dst becomes a copy of src, its actions in the order ord gives (dst's
 * i-th is src's ord[i]; NULL: src's order) and its micro-batch lists, in
 * arrays of its own.  What dst held is not freed: dst may be a shallow
 * copy of a plan whose arrays another owns. */
void sched_copy(struct mp_schedule *dst, const struct mp_schedule *src, const uint32_t *ord);

/*
 * The steady state (memplan-plan(5)): append to s a free of every tensor that
 * is not persistent (sched_persistent) and is still on the device after s's
 * last action, so that an iteration gives back everything it made and the
 * next one, which makes them again, does not leak them.  Parameter gradients
 * nobody reads (a net without optimizer ops: they are its result) go here.
 * O(actions + tensors).
 */
void sched_close(const struct mp_net *net, struct mp_schedule *s);

/* Tensors resident for the whole iteration and across iterations:
 * parameters, optimizer state, parameter gradients under "grads": "keep" (the
 * loader leaves their producer -1) and inputs no op writes.  (Inline: the
 * emitter and simulator ask per use.) */
static inline bool sched_persistent(const struct mp_tensor *t)
{
	return t->kind == MP_TK_PARAM || t->kind == MP_TK_OPT_STATE ||
	       (t->producer < 0 && t->kind != MP_TK_WORKSPACE);
}

/* One entry of a compute sequence: an op run at its route step, or re-run. */
struct mp_entry {
	int32_t op;
	bool recompute;
	int32_t algo;      /* -1: default implementation */
};

/* A tensor moved to host memory between two uses.  A tensor may have several
 * swaps (one per gap).  MP_SWAP_NONE: a persistent tensor that starts the
 * iteration on the host (no swap-out; TENSILE's cross-iteration swapping), or
 * one that ends it there (no swap-in). */
#define MP_SWAP_NONE UINT32_MAX
struct mp_swap {
	int32_t tensor;
	uint32_t out_after;  /* entry after which it is swapped out (its last use) */
	uint32_t in_at;      /* entry before which its swap-in is issued */
	uint32_t use_at;     /* entry that next reads it: a wait goes before it */
	uint32_t out_wait;   /* entry before which compute waits for the swap-out's
			      * copy to end, so its memory is free there; 0: none */
};

/*
 * Emit the schedule for a compute sequence: persistent tensors allocated up
 * front; every other tensor allocated before the entry that starts a
 * generation of it (its first write, or a recompute) and freed after its last
 * touch in that generation, unless a swap moves it out instead; workspace
 * around its op; swap_in and wait where the swaps say (a wait for a swap-out
 * first in its entry).  O(entries + uses).
 */
void sched_emit(const struct mp_net *net, const struct mp_entry *e, uint32_t n_e,
		const struct mp_swap *swaps, uint32_t n_swaps, struct mp_schedule *out);

/* Workspace bytes of op under algo (-1: default). */
uint64_t sched_ws_bytes(const struct mp_net *net, int32_t op, int32_t algo);
/* Milliseconds of op under algo (-1: default). */
double sched_op_ms(const struct mp_net *net, int32_t op, int32_t algo);
/* Time and workspace of op with algo on a micro-batch of `batch` samples:
 * the algorithm's entry measured at that batch size if the net has one,
 * else its full-batch figures scaled by batch / op->batch (memplan-net(5)). */
void sched_micro_cost(const struct mp_net *net, int32_t op, int32_t algo, uint32_t batch,
		      double *ms, uint64_t *ws_bytes);
/* Time and workspace of op run as the micro-batches m[0 .. n) (n <= 1: the
 * whole batch with algo): times summed, workspace the largest micro-batch's,
 * reused in turn. */
void sched_op_cost(const struct mp_net *net, int32_t op, int32_t algo, const struct mp_micro *m,
		   uint32_t n, double *ms, uint64_t *ws_bytes);
/* The same for a compute or recompute action. */
void sched_action_cost(const struct mp_net *net, const struct mp_schedule *s,
		       const struct mp_action *a, double *ms, uint64_t *ws_bytes);
/* Append a micro-batch list to action i (sets micro, micro_at). */
void sched_set_micro(struct mp_schedule *s, uint32_t i, const struct mp_micro *m, uint32_t n);

#endif
