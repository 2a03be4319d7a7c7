/*
 * plan: memplan plan.  Planners are functions (Net, route, request) ->
 * Schedule, judged by the one simulator; auto picks the fastest schedule that
 * fits the budget.  Owns struct mp_plan (a schedule, its simulation, the arena
 * offsets of its allocations, and the planner's statistics), the arena
 * assignment, the plan file (memplan-plan(5)) writer and reader, and the
 * Chrome trace writer.
 */
#ifndef MP_PLAN_H
#define MP_PLAN_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "../analysis/analyze.h"

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
	MP_PLANNER_AUTO,        /* not a planner: best of the first __COUNT */
};
const char *mp_planner_name(enum mp_planner p);
int mp_planner_parse(const char *s); /* "auto" -> MP_PLANNER_AUTO; -1 */
/* The names of the first count planners (MP_PLANNER__COUNT: those auto
 * runs; MP_PLANNER_AUTO: with optimal) joined by sep ("superneurons,
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
	char note[256];                 /* why it cannot fit, or what it did */
};

void plan_init(struct mp_plan *p);
void plan_release(struct mp_plan *p);

/*
 * Run one planner.  Returns 0 with *out filled (out->fits says whether the
 * budget is met), or -1 with *err on an internal failure.
 */
int plan_run(const struct mp_net *net, const struct mp_route *r, enum mp_planner which,
	     const struct mp_plan_req *req, struct mp_plan *out, struct mp_error *err);

/* fits (peak and arena within budget), overhead, MSR, EOR, CBR of a
 * simulated, arena-assigned plan: one definition for planning and reading. */
void plan_metrics(struct mp_plan *p, uint64_t budget);

/*
 * Convolution configurations for --workspace wr|wd (mu-cuDNN): for every op
 * with algorithm alternatives, the algorithm (algo[op]) or micro-batch list
 * (micro_n[op] > 1, micro[op] malloc'd) chosen under ws_limit_bytes (per
 * kernel for wr, in total for wd).  0, or -1 with *err when no configuration
 * fits the limit.
 */
int plan_conv_configs(const struct mp_net *net, const struct mp_plan_req *req, int32_t *algo,
		      uint32_t *micro_n, struct mp_micro **micro, struct mp_error *err);

/* Assign arena offsets to p's allocations: best fit, largest first, over the
 * simulated lifetimes (TFLite/XLA greedy by size).  Fills offset, arena_bytes
 * and max_live_bytes. */
void plan_assign_arena(const struct mp_net *net, struct mp_plan *p);
/* The same, stopping at the first placement order whose arena is at most
 * enough bytes (a budget): cheaper when only fitting matters. */
void plan_assign_arena_within(const struct mp_net *net, struct mp_plan *p, uint64_t enough);
/* Which placement the arena uses: 0 by the schedule's size (the default),
 * 1 the sorted scan, -1 the segment tree (for tests: both give the same
 * offsets). */
extern int plan_arena_placer;
/* Offsets are multiples of this; arena_bytes is the highest end, unrounded. */
#define PLAN_ARENA_ALIGN 256u
/* Check p->offset against p->sched's simulated lifetimes: every allocation
 * has an aligned offset, no two live at once share a byte, the highest ends
 * at arena_bytes, and a persistent tensor swapped back in to stay is where
 * the next iteration allocates it.  0, or -1 with *err naming the action
 * ("schedule[12].offset: ...") or "arena.bytes". */
int plan_check_arena(const struct mp_net *net, const struct mp_plan *p, struct mp_error *err);

/* The plan file (memplan-plan(5)). net_json is the net as loaded (embedded
 * verbatim with its SHA-256); budget and planner are recorded.  p's arena is
 * assigned here if plan_assign_arena has not run.  A new reference, owned by
 * the caller.  Dump it with jansson's full real precision (no
 * JSON_REAL_PRECISION flag): the digest covers the net's numbers as
 * jansson's default writes them, and a rounded net no longer matches it. */
json_t *plan_to_json(const struct mp_net *net, json_t *net_json, const struct mp_plan_req *req,
		     const struct mp_plan *p);

/* Chrome trace event JSON of p's predicted timeline: one track per engine,
 * a counter of resident bytes.  A new reference, owned by the caller. */
json_t *plan_trace_json(const struct mp_net *net, const struct mp_plan *p);

/*
 * Read a plan file: validate it, load the embedded net (checking its SHA-256),
 * rebuild the schedule, re-simulate it and check the arena offsets against
 * the new lifetimes.  p_out is initialised here (plan_init).  Returns 0 with
 * *net_out (free with net_free), *req_out and *p_out (plan_release) filled:
 * the simulation and derived figures are recomputed, the offsets, arena size,
 * baselines and note come from the file.  Or -1 with *net_out NULL, *p_out
 * empty and *err naming the JSON path ("schedule[12].tensor: no tensor named
 * 'x'"); as with net_load_file, the caller prefixes the file name.
 */
int plan_read_file(const char *path, struct mp_net **net_out, struct mp_plan_req *req_out,
		   struct mp_plan *p_out, struct mp_error *err);
/* The same for a plan already parsed (root borrowed, not modified):
 * plan_read_file is mp_json_load_file and this. */
int plan_read_json(json_t *root, struct mp_net **net_out, struct mp_plan_req *req_out,
		   struct mp_plan *p_out, struct mp_error *err);
/* The digest a plan records for its net (net_sha256): the SHA-256 of v's
 * values serialized canonically, as 64 lowercase hex digits into hex.  0, or
 * -1 if v cannot be serialized. */
int plan_net_sha256(const json_t *v, char hex[65]);

#endif
