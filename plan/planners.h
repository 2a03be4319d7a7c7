/*
 * planners (internal to plan/): each planner edits a built pl_state until the
 * simulated peak fits the budget or it has nothing left to try; the state is
 * left built.  0, or -1 with *err on an internal error.
 */
#ifndef MP_PLAN_PLANNERS_H
#define MP_PLAN_PLANNERS_H

#include "engine.h"

int plan_superneurons(struct pl_state *S, struct mp_plan *p, struct mp_error *err);
int plan_tfswap(struct pl_state *S, struct mp_plan *p, struct mp_error *err);
int plan_tensile(struct pl_state *S, struct mp_plan *p, struct mp_error *err);
int plan_greedy(struct pl_state *S, struct mp_plan *p, struct mp_error *err);
/* a greedy plan made for less than budget, which fits budget: the room
 * between given back to its drops (plan_run's arena retries). */
int plan_greedy_give_back(struct pl_state *S, struct mp_plan *p, uint64_t budget, struct mp_error *err);
/* greedy's first pass alone: drops, no swaps (optimal's starts). */
int plan_greedy_recompute(struct pl_state *S, struct mp_plan *p, struct mp_error *err);
/* that pass, then its drops swapped instead where the copies hide and that
 * is faster (the second pass where the first fits). */
int plan_greedy_swaps(struct pl_state *S, struct mp_plan *p, struct mp_error *err);
/* greedy's online pass (plan/dtr.c): DTR's evictions, recorded; S->seq. */
int plan_greedy_dtr(struct pl_state *S, struct mp_plan *p, struct mp_error *err);
int plan_chain(struct pl_state *S, struct mp_plan *p, struct mp_error *err);
int plan_chen(struct pl_state *S, struct mp_plan *p, struct mp_error *err);
int plan_blocks(struct pl_state *S, struct mp_plan *p, struct mp_error *err);
int plan_optimal(struct pl_state *S, struct mp_plan *p, struct mp_error *err);
/* What plan_run's last steps hold: with lazy, they keep a reordering on its
 * simulation alone, its arena unplaced (offset NULL, arena_bytes its peak),
 * and p is the plan they started from (have: the first reordering kept
 * moved it here); plan_settle_held ends it.  NULL, or lazy false: each
 * reordering is kept only where its arena fits too. */
struct pl_held {
	bool lazy, have;
	struct mp_plan p;
};
/* out's runs of swap-ins issued together in the order of their waits,
 * simulated again on req's device and kept where out still fits req's
 * budget, peak and arena (only the peak with held lazy), and is faster
 * (plan_run's last step, plan/planner.c).  0, or -1 with *err. */
int plan_issue_by_use(const struct mp_net *net, const struct mp_plan_req *req, struct mp_plan *out,
		      struct pl_held *held, struct mp_error *err);
/* out's swap-ins whose waits stall compute issued earlier on its simulated
 * timeline, kept where out still fits and is faster, as plan_issue_by_use
 * (plan_run's last step, after plan_issue_by_use).  0, or -1 with *err. */
int plan_hoist_swapins(const struct mp_net *net, const struct mp_plan_req *req, struct mp_plan *out,
		       struct pl_held *held, struct mp_error *err);
/* Where held holds a plan: out's arena placed, and out kept where it fits;
 * else held's plan back, and both steps run on it again placing each
 * arena.  held is empty after.  0, or -1 with *err. */
int plan_settle_held(const struct mp_net *net, const struct mp_plan_req *req, struct mp_plan *out,
		     struct pl_held *held, struct mp_error *err);
/* Both steps, then plan_settle_held, as plan_run ends; lazy as in
 * struct pl_held.  0, or -1 with *err. */
int plan_last_steps(const struct mp_net *net, const struct mp_plan_req *req, struct mp_plan *out, bool lazy,
		    struct mp_error *err);
/* *ms: the time S's plan runs in after both steps, on its simulation alone
 * (lazy, no arena placed), as greedy weighs its plans; S's own time where
 * req->weigh_raw, where it does not stall or its peak is over the budget
 * (the arena is not asked), or where its schedule
 * has over 20000 actions (PLAN_LAZY_ARENA_ACTIONS).  Sets
 * *req->settled_lower where lower.  S is unchanged.  0, or -1 with *err. */
int pl_settled_ms(struct pl_state *S, double *ms, struct mp_error *err);
/* dqn (plan/dqn.c): swap and recompute decisions of a deep Q-network over a
 * structure2vec embedding, trained on the simulator (or loaded). */
int plan_dqn(struct pl_state *S, struct mp_plan *p, struct mp_error *err);

/* bound (plan/bound.c): the LP relaxation of every schedule that fits,
 * swaps included; its optimum bounds the iteration time of any plan from
 * below.  status is lp.h's LP_SOLVE_* (LP_SOLVE_OPTIMAL: ms is the bound;
 * LP_SOLVE_INFEASIBLE: no schedule fits, and stuck >= 0 names the route
 * step whose op alone needs more than the budget). */
struct pl_bound {
	int status;
	double ms;
	uint32_t cols, rows;
	double secs;
	int32_t stuck;
	int clp_status;  /* LP_SOLVE_NONE: Clp's status */
};
#define BOUND_MAX_COLS 300000u
/* Solve the bound of S's net under S's request and algorithms (at most
 * limit_s seconds).  0 with *out filled, or -1 with *err: a merged plan of
 * several jobs, or a program past BOUND_MAX_COLS columns. */
int plan_bound(const struct pl_state *S, double limit_s, struct pl_bound *out, struct mp_error *err);
/* The bound's column count for S, without building it: O(ops + uses). */
uint64_t plan_bound_size(const struct pl_state *S);

/* Seconds on a monotonic clock (solver time limits). */
double plan_now_s(void);

/* optimal: the largest model it builds (variables, as om_build estimates
 * them: up to 1.3x the real count), its default time limit in seconds, and
 * how fast CBC solves a model's LP relaxation, which it does before it
 * looks at the clock: about cols^2 / 7.6e7 seconds (ResNet-34's 80600
 * estimated variables took 85 s on a 2-CPU VM).  A model whose relaxation
 * alone would outlast the time limit is refused. */
#define OPT_MAX_COLS 250000u
#define OPT_DEFAULT_LIMIT_S 60.0
#define OPT_LP_COLS2_PER_S 7.6e7

/* optimal's time limit for a request, in seconds. */
static inline double plan_time_limit(const struct mp_plan_req *req)
{
	return req->time_limit_s > 0 ? req->time_limit_s : OPT_DEFAULT_LIMIT_S;
}

/* Rounds a planner may run before it gives up (each is one build), and
 * rounds in a row without a lower peak before it stops trying. */
#define PL_MAX_ROUNDS 4000
#define PL_MAX_STALE_ROUNDS 64

/*
 * The rounds every planner runs: while the peak is over the budget, first
 * delay swap-ins that land on it, else hand round_fn() the candidates at the
 * peak and the excess; round_fn() edits the state (swaps, drops) and returns
 * how many edits it made.  Rebuild after each round.  When a round makes
 * none, or after PL_MAX_STALE_ROUNDS without a lower peak, compute waits for
 * the swap-outs still copying at the peak (pl_wait_swapouts); stops when
 * there are none, or after PL_MAX_ROUNDS.  round_fn() may reorder c.
 */
typedef uint32_t (*pl_round_fn)(struct pl_state *S, struct pl_cand *c, uint32_t n, uint64_t excess, void *ctx);
int pl_rounds(struct pl_state *S, struct mp_plan *p, pl_round_fn round_fn, void *ctx, struct mp_error *err);

/* The rounds superneurons and tf-swap share: swap the candidates that keep()
 * accepts, in cmp order, until their bytes cover the excess. */
int pl_swap_rounds(struct pl_state *S, struct mp_plan *p,
		   bool (*keep)(const struct pl_state *S, const struct pl_cand *c),
		   int (*cmp)(const void *, const void *), struct mp_error *err);

/* Take candidates in the order given until their bytes cover the excess.
 * Returns how many were taken. */
uint32_t pl_take_until(struct pl_state *S, const struct pl_cand *c, uint32_t n, uint64_t excess);

#endif
