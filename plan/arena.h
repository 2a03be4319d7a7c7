/*
 * arena: the static arena of a plan (memplan-plan(5) "arena"): one byte
 * offset per allocation, assigned once over the simulated lifetimes and
 * checked against them (arena.c).  Executors only apply the offsets.
 */
#ifndef MP_PLAN_ARENA_H
#define MP_PLAN_ARENA_H

#include "plan.h"

/* Assign arena offsets to p's allocations: best fit, largest first, over the
 * simulated lifetimes (TFLite/XLA greedy by size).  Fills offset, arena_bytes
 * and max_live_bytes. */
void plan_assign_arena(const struct mp_net *net, struct mp_plan *p);
/* The same, stopping at the first placement order whose arena is at most
 * enough bytes (a budget): cheaper when only fitting matters. */
void plan_assign_arena_within(const struct mp_net *net, struct mp_plan *p, uint64_t enough);
/* A chosen plan's arena: the smallest of plan_assign_arena's placement
 * orders, or the one p has when that is smaller (plan_run stops at the first
 * order that fits, or searches on until one does); then plan_metrics. */
void plan_smallest_arena(const struct mp_net *net, struct mp_plan *p, uint64_t budget);
/* Which placement the arena uses: 0 by the schedule's size (the default),
 * 1 the sorted scan, -1 the segment tree (for tests: both give the same
 * offsets). */
extern int plan_arena_placer;
/* plan_assign_arena_within keeps the searches it made for a budget (the
 * local search over placement orders, on the schedules the sorted scan
 * places: by default those of up to 2048 allocations), recognised by their
 * allocations: searches counts those made, kept_hits those answered from
 * the kept ones, kept_bytes is what the kept ones hold after the last one
 * kept.  plan_arena_forget empties them (for tests, and to free their
 * memory). */
struct plan_arena_stats {
	unsigned long searches, kept_hits;
	size_t kept_bytes;
};
extern struct plan_arena_stats plan_arena_stats;
void plan_arena_forget(void);
/* For tests: empties the kept searches, then keeps at most n of them in at
 * most bytes (0, or more than the defaults of 1024 and 64 MiB: the
 * defaults), and keeps only key_mask's bits of the hash that finds them
 * (UINT64_MAX: all; 0: every schedule's hash is the same, so only the
 * comparison of their allocations tells them apart). */
void plan_arena_keep_at_most(uint32_t n, size_t bytes, uint64_t key_mask);
/* The arena's scan asks, for cnt (at most 64) placed allocations at once,
 * which meet a new one in time: bit i of the result is whether
 * [ps[i], pe[i]) or [ps2[i], pe2[i]) meets [s, e) or [s2, e2).  Event ranks
 * are under 2^31; the first lifetimes are not empty, and a second one is
 * either not empty or [0, 0) (none).  any2 false: no placed allocation has
 * a second lifetime, and ps2 and pe2 are not read.  Exposed for
 * test_planners, which checks it against the definition. */
uint64_t plan_arena_meets_mask(const uint32_t *ps, const uint32_t *pe, const uint32_t *ps2, const uint32_t *pe2,
			       bool any2, uint32_t cnt, uint32_t s, uint32_t e, uint32_t s2, uint32_t e2);
/* Offsets are multiples of this; arena_bytes is the highest end, unrounded. */
#define PLAN_ARENA_ALIGN 256u
/* Check p->offset against p->sched's simulated lifetimes: every allocation
 * has an aligned offset, no two live at once share a byte, the highest ends
 * at arena_bytes, and a persistent tensor swapped back in to stay is where
 * the next iteration allocates it.  0, or -1 with *err naming the action
 * ("schedule[12].offset: ...") or "arena.bytes". */
int plan_check_arena(const struct mp_net *net, const struct mp_plan *p, struct mp_error *err);

#endif
