/*
 * replan: re-planning from measured op times (TENSILE IV-E; memplan
 * replan, memplan verify --adapt).  Each op's time is corrected with an
 * exponentially weighted moving average of what a run measured, the net is
 * written again with the corrected times, and the plan's planner runs again
 * under the plan's request (replan.c).  Owns struct mp_replan and struct
 * mp_replan_change.
 */
#ifndef MP_VERIFY_REPLAN_H
#define MP_VERIFY_REPLAN_H

#include <jansson.h>

#include "report.h"

/* The default weight of a measurement (TENSILE IV-E's moving average). */
#define REPLAN_ALPHA 0.3

/* alpha * measured + (1 - alpha) * predicted. */
double replan_ewma(double alpha, double measured, double predicted);

/*
 * Per op, the factor its times are multiplied by, one more step of the
 * moving average: factor[k] (in: the estimate so far relative to the net's
 * time, 1 before any measurement) becomes (alpha meas + (1 - alpha)
 * factor[k] pred) / pred over the op's runs in t[net->n_ops] (exec_op_times,
 * or replan_read_report), so that an op that ran its default implementation
 * gets exactly the moving average, and its other implementations (conv
 * algorithms, micro-batches) the same correction; unchanged for ops that
 * did not run or were predicted 0 ms.  factor is the caller's [net->n_ops].
 */
void replan_factors(const struct mp_net *net, const struct mp_exec_op_time *t, double alpha, double *factor);

/* TENSILE's average latency rate of change (IV-E): |the ops' times summed
 * as factor[net->n_ops] corrects them - as the net has them| over the net's
 * sum; 0 for a net of no time.  Its trigger re-plans where this passes a
 * threshold. */
double replan_change(const struct mp_net *net, const double *factor);

/* What a verify report measured in all, in model milliseconds (wall ms over
 * its time_scale), per iteration. */
struct mp_replan_report {
	double time_scale;
	double time_ms, stall_ms;  /* the iteration on the engines' timelines (timing.timeline_ms:
				    * model time on the virtual clock), and compute's waits */
	uint32_t n_ops;            /* ops with times */
};

/*
 * Read the per-op times of a verify report (memplan-verify(1) --report)
 * into t[net->n_ops] (zeroed first) and its totals into *rep: the report
 * must be memplan-verify/1 of a run that finished, its net_sha256 must be
 * net_sha256 (the plan's), and every entry of its "ops" must name an op of
 * net once, with runs >= 1 and times in ms.  0, or -1 with *err naming the
 * JSON path ("ops[3].op: no op named 'x' in the plan's net"); the caller
 * prefixes the file name.
 */
int replan_read_report(const json_t *report, const struct mp_net *net, const char *net_sha256,
		       struct mp_exec_op_time *t, struct mp_replan_report *rep, struct mp_error *err);

/*
 * The net file again with every op's times multiplied by factor[op]: a layer
 * op's "time" phase ("fwd", "bwd" or "update") and its algorithms' times of
 * that phase, an explicit op's "time" and its algorithms' times.  Ops the
 * file has no time for (gradient accumulation) keep 0.  "time_source" says
 * the times were corrected.  A new reference, or NULL with *err when the
 * file's layers or ops do not match net.  O(ops + algorithms).
 */
json_t *replan_net_json(const json_t *net_root, const struct mp_net *net, const double *factor, double alpha,
			struct mp_error *err);

/* A re-planned net and plan: what replan_run makes, all owned. */
struct mp_replan {
	json_t *net_json;          /* the net file with the corrected times (a plan
				    * of several jobs: the array of their files) */
	struct mp_net *net;        /* loaded from it (merged again) */
	struct mp_plan plan;       /* planner's plan on it, arena assigned */
};

/*
 * Correct net's times by factor (replan_net_json), load the result and run
 * planner under req (plan_run, then the smallest arena, as memplan plan
 * does).  net_json is the plan's "net"; for a merged net of several jobs
 * (net->n_jobs), the plan's "jobs" or the array of net files an earlier
 * replan_run made: each job's net is corrected by its own ops' factors, the
 * nets are merged again at the recorded offsets, and each job is planned
 * alone for its alone_ms.  Returns 0 with *out filled (out->plan.fits says
 * whether the budget is still met; release with replan_release), or -1 with
 * *err and *out empty.
 */
int replan_run(const json_t *net_json, const struct mp_net *net, const struct mp_plan_req *req,
	       enum mp_planner planner, const double *factor, double alpha, struct mp_replan *out,
	       struct mp_error *err);
void replan_release(struct mp_replan *r);

/* One difference between two plans of the same net's structure. */
enum mp_replan_what {
	REPLAN_SWAP_MOVED,         /* issued after another compute */
	REPLAN_SWAP_ADDED, REPLAN_SWAP_REMOVED,
	REPLAN_RECOMPUTE_ADDED, REPLAN_RECOMPUTE_REMOVED,
};
struct mp_replan_change {
	enum mp_replan_what what;
	enum mp_act_kind kind;     /* swap_out, swap_in or recompute */
	const char *name;          /* the tensor swapped or the op recomputed */
	const char *from, *to;     /* the compute issued before it in the old and the new
				    * plan ("" at the start); NULL where it has no such */
};
struct mp_replan_diff {
	uint32_t swaps_kept, swaps_moved, swaps_added, swaps_removed;
	uint32_t recomputes_kept, recomputes_added, recomputes_removed;
	uint32_t n;
	struct mp_replan_change *c; /* [n] malloc'd, owned; names borrowed from the nets */
};

/*
 * What changed from plan a (of net na) to plan b (of nb): each swap-out and
 * swap-in is matched by its tensor's name and occurrence and compared by the
 * compute issued before it (its trigger, TENSILE III-C); recomputes by op
 * name and occurrence.  Changes come by kind (recompute, swap-out, swap-in),
 * then by name and occurrence.  Release with replan_diff_release.
 */
void replan_diff(const struct mp_net *na, const struct mp_plan *a, const struct mp_net *nb,
		 const struct mp_plan *b, struct mp_replan_diff *out);
void replan_diff_release(struct mp_replan_diff *d);

#endif
