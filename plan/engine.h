/*
 * engine (internal to plan/): the state every planner edits and the one way
 * it becomes a schedule.  A state says which tensors are swapped (in each gap
 * between two uses that contains a chosen step, up to PL_GAPS of them, and
 * across iterations), which
 * are dropped and recomputed (kept once rebuilt or not), how swap-ins are
 * triggered, and which algorithm each op runs.  pl_build emits the schedule
 * with the shared emitter and simulates it.
 */
#ifndef MP_PLAN_ENGINE_H
#define MP_PLAN_ENGINE_H

#include "plan.h"

enum pl_prefetch {
	PL_PREFETCH_CKPT_AHEAD, /* at the checkpoint backward before the use (SuperNeurons 3.3.1) */
	PL_PREFETCH_JIT,        /* so the copy ends just before the use, from the last
				 * simulation's completion times (tf-swap 3.1.2) */
};

/* Arena answers pl_arena_bytes remembers: the planners put states back and
 * rebuild them, and ask again of schedules they asked of a while before
 * (greedy's passes, its two ways; each placement of a schedule that does
 * not pack runs the arena's local search). */
#define PL_ARENA_MEMO 32

/* Gaps a tensor may be swapped in, each between two of its uses (a weight:
 * forward to backward and backward to its update; a skip connection's
 * output: to the decoder's forward and on to its own backward). */
#define PL_GAPS 4

struct pl_state {
	const struct mp_net *net;
	const struct mp_route *r;
	const struct mp_plan_req *req;
	uint32_t nt;
	uint32_t *swap_step;  /* [nt * PL_GAPS] route steps, each inside a gap
			       * between two uses in which the tensor is
			       * swapped, filled from the first of its
			       * PL_GAPS slots; UINT32_MAX: an empty slot
			       * (pl_gap_add, pl_swapped) */
	uint8_t *host;        /* [nt] persistent tensor kept on the host between iterations */
	uint8_t *host_early;  /* [nt] such a tensor swapped out as the iteration starts
			       * and back before its first use, instead of in
			       * before its first use and out after its last
			       * (pl_host_early) */
	const uint8_t *host_base; /* [nt] borrowed, may be NULL: tensors a planner's
				   * fresh start keeps on the host between
				   * iterations (greedy's second start) */
	uint32_t *out_wait;   /* [nt] route step before which compute waits for the
			       * swap-out to end (0: none): memory freed in time at
			       * a peak the copy would otherwise miss; it applies
			       * to the gap that holds it */
	uint32_t *in_floor;   /* [nt] route step before which its swap-in may not be
			       * issued (0: no floor): a swap-in that lands at a peak
			       * is delayed past it, trading memory for a stall; it
			       * applies to the last gap that starts before it.
			       * One of each per tensor: a tensor swapped in several
			       * gaps keeps the last one set, and its other gaps
			       * lose theirs */
	uint8_t *drop;        /* [nt] dropped after forward, recomputed */
	uint8_t *keep;        /* [nt] a recomputed tensor stays until its last use */
	uint32_t *keep_from;  /* [nt] kept only once rebuilt for a reader at this
			       * route step or later (0: from its first rebuild) */
	int32_t *algo;        /* [n_ops] algorithm per op, -1 default */
	uint32_t *micro_n;    /* [n_ops] micro-batches (0: whole batch) */
	struct mp_micro **micro; /* [n_ops] micro-batch lists, owned */
	enum pl_prefetch prefetch;
	struct mp_entry *seq; /* [n_seq] owned: a compute sequence with recomputes
			       * (the chain planner's) used instead of the one
			       * drop and keep give; NULL: theirs */
	uint32_t n_seq;
	uint32_t max_entries; /* pl_build refuses a sequence longer (0: no limit) */
	uint8_t *droppable;   /* [nt] an activation every forward writer of which
			       * may re-run: it may be dropped after its last
			       * forward use and rebuilt (pl_init) */
	uint32_t *fw_start, *fw_list; /* forward writers of each tensor, in route
				       * order (CSR, [nt + 1] and [writes]) */
	double *step_start;   /* [route n] compute start per step, from the last build */
	double *placed_on;    /* [route n] the step_start the last build placed its
			       * swap-ins on: put back into step_start, the same
			       * edits build the same schedule again */
	/* result of the last pl_build */
	struct mp_schedule sched;
	struct mp_sim sim;
	uint32_t *entry_step; /* [n_entries] route step of each entry (recomputes: the next step) */
	uint32_t *step_entry; /* [route n] the entry of each route step */
	uint32_t n_entries;
	uint32_t peak_entry;  /* entry whose step holds the peak */
	struct mp_entry *entries;  /* [n_entries] the last build's sequence */
	uint32_t *touch_start, *touch_list; /* its touches per tensor (CSR) */
	bool queue_in;        /* just in time, swap-ins placed on the copy engine's
			       * queue (from the last use back, each ending
			       * before the next starts) rather than one at a
			       * time with a margin; only ever earlier, and
			       * never before a floor */
	bool many_gaps;       /* greedy may swap a tensor in several gaps, or one
			       * kept on the host in a gap too (its last start) */
	bool peak_only;       /* fitting means the simulated peak alone: no arena
			       * is asked (test_optimal compares the heuristics
			       * with an optimum counted that way) */
	/* pl_arena_bytes's last PL_ARENA_MEMO answers, and the schedules they
	 * were for (replaced round robin from arena_next) */
	struct pl_arena_memo {
		uint32_t n;
		uint64_t key, peak, enough, bytes;
		double ms;
	} arena_memo[PL_ARENA_MEMO];
	uint32_t arena_next;
};

void pl_init(struct pl_state *S, const struct mp_net *net, const struct mp_route *r,
	     const struct mp_plan_req *req);
void pl_release(struct pl_state *S);
/* Emit and simulate the state.  0; 1 when its sequence would be longer than
 * max_entries (nothing changed: edit the state back and build again); or -1
 * with *err (an internal error). */
int pl_build(struct pl_state *S, struct mp_error *err);

/* Is t swapped in some gap? */
static inline bool pl_swapped(const struct pl_state *S, int32_t t)
{
	return S->swap_step[(size_t)t * PL_GAPS] != UINT32_MAX;
}

/* Swap t also in the gap that holds route step `step` (a step it holds
 * already: nothing to add).  False when its PL_GAPS slots are taken. */
static inline bool pl_gap_add(struct pl_state *S, int32_t t, uint32_t step)
{
	uint32_t *g = S->swap_step + (size_t)t * PL_GAPS;

	for (uint32_t k = 0; k < PL_GAPS; k++)
		if (g[k] == UINT32_MAX || g[k] == step) {
			g[k] = step;
			return true;
		}
	return false;
}

/* No longer swap t in the gap named by `step` (added as such), or, with
 * UINT32_MAX, in any gap. */
void pl_gap_remove(struct pl_state *S, int32_t t, uint32_t step);

/* A tensor resident at the peak that a swap could remove there. */
struct pl_cand {
	int32_t t;
	uint64_t bytes;
	double gap_ms;        /* time between the uses around the peak */
	uint32_t last_use;    /* entry before the peak that touches it */
	uint32_t next_use;    /* entry after the peak that touches it (UINT32_MAX: none) */
	bool cross;           /* only across iterations (persistent tensor) */
	bool rebuilt;         /* dropped, rebuilt before the peak and kept for a
			       * reader after it */
};
/* Candidates at the current peak: resident, not touched by the peak's op,
 * not yet swapped or dropped.  PL_CAND_REBUILT: dropped ones that a rebuild
 * keeps resident there are candidates too; PL_CAND_GAPS: so are tensors
 * swapped in other gaps, or kept on the host between iterations, where the
 * peak lies in a gap between two of their uses that they are not swapped
 * in.  Returns the count; *out malloc'd. */
enum { PL_CAND_REBUILT = 1, PL_CAND_GAPS = 2 };
uint32_t pl_peak_candidates(const struct pl_state *S, unsigned flags, struct pl_cand **out);
/* Milliseconds to re-run every forward writer of t once. */
double pl_rebuild_ms(const struct pl_state *S, int32_t t);
/* Start of entry i's compute in the last build (recomputes: the next step's). */
double pl_entry_start(const struct pl_state *S, uint32_t i);
/* Swap t around the current peak (a gap or across iterations). */
void pl_swap(struct pl_state *S, const struct pl_cand *c);
/* Swap each tensor kept on the host between iterations out as the iteration
 * starts (where its copy runs beside the forward) instead of after its last
 * use (an optimizer step's: a copy nothing hides, that ends the iteration),
 * where that is faster and still fits (peak and arena): all of them, judged
 * by one build, and where that is not, one at a time (the largest first
 * where there are more than PL_EARLY_BUILDS, the builds it may spend); a
 * state that does not fit is left as it is.  Returns how many moved, or -1
 * with *err; the state is left built. */
int pl_host_early(struct pl_state *S, struct mp_error *err);
/* qsort_r order of tensor indices (uint32_t), the largest first, then by
 * index; arg: the net. */
int pl_by_bytes_desc(const void *a, const void *b, void *net);
/* Delay the swap-ins resident at the current peak that are not used there
 * until after it.  Returns how many were delayed (then rebuild). */
uint32_t pl_delay_swapins(struct pl_state *S);
/* Make compute wait, before the peak's step, for the swap-outs still copying
 * there (their memory is released only when the copy ends): memory bought
 * with a stall.  Returns how many (then rebuild). */
uint32_t pl_wait_swapouts(struct pl_state *S);

/* The last build's swap-ins placed on the copy engine's queue (queue_in)
 * instead of just in time one at a time, kept where the plan still fits
 * (peak and arena) and is faster; else the state is built again as it was.
 * 1 kept, 0 not (or nothing to do: queue_in set already, prefetch not just
 * in time, no swap-ins, or the plan misses), -1 with *err. */
int pl_queue_in(struct pl_state *S, struct mp_error *err);

/* Blocks: forward ops joined by the tensors they write (an in-place relu with
 * the op whose output it rewrites, and so whatever else that op writes),
 * numbered in route order.  A re-run runs a whole block, so every tensor it
 * writes comes back at its final forward version (optimal's R variables,
 * greedy's online pass). */
struct pl_blocks {
	uint32_t n;
	uint32_t *of_op;         /* [n_ops] block of a forward op, UINT32_MAX else */
	uint32_t *start, *ops;   /* each block's ops in route order (CSR) */
	uint32_t *last;          /* [n] route step of its last op */
	double *ms;              /* [n] re-running it: op_ms of its ops summed */
};
/* From S's forward writers; op_ms[n_ops] the time of each op.  O(ops + writes). */
void pl_blocks_build(const struct pl_state *S, const double *op_ms, struct pl_blocks *B);
void pl_blocks_release(struct pl_blocks *B);

/* Build the state as it is (liveness, when nothing was edited, with
 * just-in-time prefetch); when that fits, note so in p.  1: it fits, 0: it
 * does not, -1 with *err.  The checkpointing planners start here: a net that
 * fits is left alone, as a person would. */
int pl_fits_as_is(struct pl_state *S, struct mp_plan *p, struct mp_error *err);

/* The arena the last build's schedule packs in (plan_assign_arena_within:
 * the search stops at enough bytes; 0 when peak_only).  Asked again of a
 * schedule with the same length, peak and time (a state put back and
 * rebuilt), the answer it gave: a check inside planning, which plan_run's
 * own assignment settles. */
uint64_t pl_arena_bytes(struct pl_state *S, uint64_t enough);

/* By how much the last build misses budget: its simulated peak over it, else
 * its arena over it; 0 when both fit. */
uint64_t pl_overflow(struct pl_state *S, uint64_t budget);

/* Is a result (peak, time) better than another for the budget: it fits
 * where the other does not, else it is faster when both fit, else lower. */
bool pl_better(const struct pl_state *S, uint64_t peak_a, double ms_a, uint64_t peak_b, double ms_b);

/* Copy the state's result into a plan (moves the schedule and simulation). */
void pl_take(struct pl_state *S, struct mp_plan *p);

/* Dynamic workspace (SuperNeurons 3.5): per step, the fastest algorithm whose
 * workspace fits under the budget given what is resident there; re-simulated
 * until the budget holds.  Returns 0, or -1 with *err. */
int pl_dynamic_workspace(struct pl_state *S, struct mp_error *err);

#endif
