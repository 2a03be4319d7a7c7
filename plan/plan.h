/*
 * plan: memplan plan.  Planners are functions (Net, route, request) ->
 * Schedule, judged by the one simulator; auto picks the fastest schedule that
 * fits the budget.  Owns the planners' names, the request (struct
 * mp_plan_req) and struct mp_plan (a schedule, its simulation, the arena
 * offsets of its allocations, and the planner's statistics), and running a
 * planner (planner.c).  The arena is arena.h's, the plan file planfile.h's,
 * the Chrome trace trace.h's.
 */
#ifndef MP_PLAN_H
#define MP_PLAN_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "../analysis/analyze.h"

struct dqn_model;

enum mp_planner {
	MP_PLANNER_SUPERNEURONS, MP_PLANNER_TFSWAP, MP_PLANNER_TENSILE,
	MP_PLANNER_GREEDY,      /* cheapest bytes first at each peak: drop any op, swap */
	MP_PLANNER_CHAIN,       /* optimal checkpointing of the chain of blocks (rotor's DP) */
	MP_PLANNER_CHEN,        /* sqrt(n) checkpoints (Chen et al. 2016), the by-hand baseline */
	MP_PLANNER_BLOCKS,      /* checkpoint-blocks: torch.utils.checkpoint on every block */
	MP_PLANNER__COUNT,      /* the planners auto and all run: near-linear */
	/* the exact MILP (Checkmate's), run only by name: its solve may take up
	 * to the request's time limit */
	MP_PLANNER_OPTIMAL = MP_PLANNER__COUNT,
	/* the DQN (plan/dqn.c), run only by name: it trains for seconds and
	 * is rarely better than greedy (bench/plan-quality.md) */
	MP_PLANNER_DQN,
	MP_PLANNER_AUTO,        /* not a planner: best of the first __COUNT */
};
const char *mp_planner_name(enum mp_planner p);
int mp_planner_parse(const char *s); /* "auto" -> MP_PLANNER_AUTO; -1 */
/* The names of the first count planners (MP_PLANNER__COUNT: those auto
 * runs; MP_PLANNER_AUTO: with optimal and dqn) joined by sep ("superneurons,
 * tf-swap, ..."), into buf (cut to n bytes).  Returns buf. */
char *mp_planner_list(char *buf, size_t n, const char *sep, int count);

/* Convolution algorithm choice (memplan-plan(1) --workspace). */
enum mp_ws_mode {
	MP_WS_NONE,     /* default implementation of every op */
	MP_WS_DYNAMIC,  /* per step, fastest algorithm whose workspace fits (SuperNeurons 3.5) */
	MP_WS_WR,       /* mu-cuDNN WR: micro-batches per kernel under --workspace-limit */
	MP_WS_WD,       /* mu-cuDNN WD: 0-1 ILP over all kernels under one total limit */
};

struct mp_plan_req {
	uint64_t budget_bytes;          /* device memory the schedule may use */
	struct mp_device device;
	enum mp_ws_mode ws_mode;
	uint64_t ws_limit_bytes;        /* wr: per kernel; wd: total; 0: budget */
	struct mp_policy_opts popts;    /* checkpoints */
	double time_limit_s;            /* optimal: solver time limit; 0: OPT_DEFAULT_LIMIT_S */
	double deadline_s;              /* optimal, set by plan_run: stop solving at this
					 * plan_now_s() (arena retries share the limit); 0: none */
	bool opt_relax_only;            /* optimal: solve only the LP relaxation, as for a
					 * model too large for the limit; set by the tests
					 * only, no command line sets it */
	double ws_reserve;              /* dynamic workspace: plan for the budget less this
					 * share of it, left to the faster algorithms (set
					 * by plan_run's tries for greedy; 0: none) */
	bool have_fit;                  /* plan_run holds a plan that fits the budget and
					 * plans again only to find a faster one (for the
					 * faster algorithms): greedy skips its last start,
					 * made only to fit */
	bool fit_only;                  /* only whether a plan fits is asked (capacity
					 * with no slowdown limit): a plan that fits is
					 * not planned again to be faster */
	bool queue_swapins;             /* greedy: its swap-ins placed on the copy engine's
					 * queue from its first build, not only last (set
					 * by plan_run for a second greedy plan where the
					 * first stalls) */
	bool plain_first;               /* dynamic workspace: plan as with the default
					 * algorithms (as --workspace none), then give
					 * each step the fastest whose workspace fits
					 * (set by plan_run for a second greedy plan
					 * where the first costs much) */
	bool swaps_unpacked;            /* greedy with dynamic workspace: weigh its swaps
					 * for drops by the faster algorithms' time even
					 * where their arena does not pack (set by plan_run
					 * for its second greedy run) */
	bool weigh_raw;                 /* greedy: weigh its plans by their simulated time,
					 * not by the time plan_run's last steps leave
					 * (set by plan_run for its second greedy run) */
	bool *settled_lower;            /* borrowed, may be NULL: set where greedy weighed
					 * a plan by the time plan_run's last steps leave
					 * and that was lower than its simulated time (set
					 * by plan_run) */
	struct pl_alt *alt;             /* borrowed, may be NULL: where dynamic workspace
					 * makes greedy's attempt slower, or its arena
					 * overflow, variants of the attempt (the default
					 * algorithms, the faster with room left for the
					 * arena) are candidates here too (set by
					 * plan_run) */
	/* dqn */
	uint32_t dqn_episodes;          /* training episodes; 0: the default (DQN_EPISODES
					 * from fresh weights, none from a loaded model) */
	uint64_t dqn_seed;              /* weights, exploration and replay sampling */
	struct dqn_model *dqn_model;    /* borrowed, may be NULL: the weights to start
					 * from (loaded) and, after plan_run, the trained
					 * ones; its first training serves the arena
					 * retries too */
};

struct mp_plan {
	enum mp_planner planner;
	struct mp_schedule sched;       /* with the simulator's times */
	struct mp_sim sim;
	bool fits;                      /* sim.peak_bytes <= budget */
	double baseline_ms;             /* the unconstrained run: liveness, default algos */
	uint64_t baseline_peak;         /* the no-saving baseline peak (TENSILE's VMP) */
	double overhead, msr, eor, cbr;
	/* arena: one offset per alloc/swap_in action, assigned statically */
	uint64_t *offset;               /* [sched.n], UINT64_MAX for other actions, owned */
	uint64_t arena_bytes;
	uint64_t max_live_bytes;        /* lower bound: the simulated peak */
	/* planner statistics */
	uint64_t uncached_swap_bytes;   /* superneurons: bytes UTP would move without the cache */
	uint32_t iterations;            /* refinement rounds the planner ran */
	bool weigh_split;               /* greedy: its swaps for drops were kept or not
					 * only because of how they were weighed (plan_run
					 * then plans again weighing the other way) */
	char note[512];                 /* why it cannot fit, or what it did */
};

void plan_init(struct mp_plan *p);
void plan_release(struct mp_plan *p);
/* Append to p->note, cut where it is full. */
void plan_note_add(struct mp_plan *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * Run one planner.  Returns 0 with *out filled (out->fits says whether the
 * budget is met), or -1 with *err on an internal failure.
 */
int plan_run(const struct mp_net *net, const struct mp_route *r, enum mp_planner which,
	     const struct mp_plan_req *req, struct mp_plan *out, struct mp_error *err);

/*
 * Each of a merged net's jobs (nets[merged->n_jobs], the nets it was merged
 * from) planned alone by which under req: its iteration time into
 * merged->jobs[j].alone_ms, what the overhead of sharing is measured
 * against.  0, or -1 with *err and *failed the job whose planning failed.
 */
int plan_jobs_alone(struct mp_net *merged, struct mp_net *const *nets, enum mp_planner which,
		    const struct mp_plan_req *req, uint32_t *failed, struct mp_error *err);

/* The lower bound (plan/bound.c, memplan-plan(1) --lower-bound) on the
 * iteration time of every schedule that fits req's budget, swaps (across
 * iterations too) and re-runs of any forward op included, from the LP
 * relaxation of the simulator's rules, solved within req's time limit.
 * With --workspace other than none each op counts at its fastest
 * algorithm and smallest workspace, so the bound holds for every choice. */
enum mp_bound_status {
	MP_BOUND_FOUND,    /* ms: no schedule that fits runs faster */
	MP_BOUND_NONE_FITS,     /* proven: no schedule fits at all */
	MP_BOUND_UNKNOWN,  /* no answer: why says why (too large, time limit) */
};
struct mp_bound {
	enum mp_bound_status status;
	double ms;
	int32_t stuck_op;      /* MP_BOUND_NONE_FITS: the op that alone needs more than
				* the budget; -1: the program proves it */
	uint32_t cols, rows;   /* the program's variables and constraints */
	double secs;           /* solving */
	char why[200];
};
void plan_lower_bound(const struct mp_net *net, const struct mp_route *r, const struct mp_plan_req *req,
		   struct mp_bound *out);

/* fits (peak and arena within budget), overhead, MSR, EOR, CBR of a
 * simulated, arena-assigned plan: one definition for planning and reading. */
void plan_metrics(struct mp_plan *p, uint64_t budget);

#endif
