/*
 * memplan replan PLAN.json --report FILE [--alpha A] [-o plan.json]
 * Re-plan from measured op times (TENSILE IV-E): each op's time becomes a
 * moving average of what a verify report measured and what the plan
 * predicted; the plan's planner runs again under its budget and device, and
 * what changed is printed (memplan-replan(1)).  The work is verify/replan.c.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "../analysis/base/jget.h"
#include "../plan/planfile.h"
#include "../verify/replan.h"

static int set_alpha(const char *name, const char *arg, void *dst)
{
	double *a = dst;
	char *end;

	errno = 0;
	*a = strtod(arg, &end);
	if (!*arg || *end || errno || !(*a > 0) || *a > 1) {
		cli_error(EXIT_BAD_INPUT, "%s: expected a weight above 0 and at most 1, got '%s'", name, arg);
		return -1;
	}
	return 0;
}

/* The sums over the measured ops: predicted, measured and corrected compute
 * time per iteration, in model ms. */
static void print_times(const struct mp_net *net, const struct mp_exec_op_time *t, const double *factor,
			const struct mp_replan_report *rep, const char *report_path, double alpha)
{
	double pred = 0, meas = 0, corr = 0;
	uint32_t changed = 0;

	for (uint32_t k = 0; k < net->n_ops; k++) {
		if (!t[k].runs)
			continue;
		pred += t[k].pred_ms / rep->time_scale;
		meas += t[k].meas_ms / rep->time_scale;
		corr += t[k].pred_ms * factor[k] / rep->time_scale;
		changed += factor[k] != 1;
	}
	printf("report    %s: %u ops measured, %u with times other than predicted\n", report_path, rep->n_ops, changed);
	printf("op times  %.3f ms predicted, %.3f ms measured, %.3f ms corrected (alpha %g: %g x measured + %g x "
	       "predicted)\n", pred, meas, corr, alpha, alpha, 1 - alpha);
}

/* "after 'op'", or "at the start" */
static const char *after(const char *trigger, char *buf, size_t n)
{
	if (*trigger)
		snprintf(buf, n, "after '%s'", trigger);
	else
		snprintf(buf, n, "at the start");
	return buf;
}

/* The changes of one family (swaps, or recomputes), the first LIST_MAX. */
enum { LIST_MAX = 10 };
static void print_family(const struct mp_replan_diff *d, bool swaps)
{
	static const char *const what[] = { "moved", "added", "removed", "added", "removed" };
	char b1[300], b2[300];
	uint32_t shown = 0, more = 0;

	for (uint32_t i = 0; i < d->n; i++) {
		const struct mp_replan_change *c = &d->c[i];

		if ((c->kind == MP_ACT_RECOMPUTE) == swaps)
			continue;
		if (shown++ >= LIST_MAX) {
			more++;
			continue;
		}
		printf("  %-8s %s '%s'", what[c->what], mp_act_name(c->kind), c->name);
		if (c->from && c->to)
			printf(": %s, now %s\n", after(c->from, b1, sizeof(b1)), after(c->to, b2, sizeof(b2)));
		else
			printf(" %s\n", after(c->from ? c->from : c->to, b1, sizeof(b1)));
	}
	if (more)
		printf("  and %u more\n", more);
}

static void print_changes(const struct mp_replan_diff *d)
{
	printf("swaps     %u kept, %u moved, %u added, %u removed\n", d->swaps_kept, d->swaps_moved, d->swaps_added,
	       d->swaps_removed);
	print_family(d, true);
	printf("recompute %u kept, %u added, %u removed\n", d->recomputes_kept, d->recomputes_added, d->recomputes_removed);
	print_family(d, false);
}

static void print_plans(const struct mp_plan *a, const struct mp_plan *b, const struct mp_replan_report *rep,
			uint64_t budget)
{
	char b1[32], b2[32], b3[32];

	printf("time      %.3f ms predicted before, %.3f ms measured, %.3f ms predicted after\n", a->sim.time_ms,
	       rep->time_ms, b->sim.time_ms);
	printf("stall     %.3f ms predicted before, %.3f ms measured, %.3f ms predicted after\n", a->sim.stall_ms,
	       rep->stall_ms, b->sim.stall_ms);
	printf("peak      %s predicted before, %s after: %s the budget %s\n", mp_fmt_bytes(a->sim.peak_bytes, b1, sizeof(b1)),
	       mp_fmt_bytes(b->sim.peak_bytes, b2, sizeof(b2)), b->fits ? "fits" : "exceeds",
	       mp_fmt_bytes(budget, b3, sizeof(b3)));
}

/* The plan file: its net, request, plan and the digest of its net (its
 * jobs', for a plan of several).  EXIT_OK, or EXIT_BAD_INPUT after
 * printing. */
static int read_plan(const char *path, json_t **root, struct mp_net **net, struct mp_plan_req *req,
		     struct mp_plan *plan, char sha[65])
{
	int rc;

	if ((rc = cli_load_plan(path, root, net, req, plan)) != EXIT_OK)
		return rc;
	/* a plan of several jobs: its "jobs" is what a report's digest covers */
	MP_ASSERT(plan_net_sha256(json_object_get(*root, (*net)->n_jobs ? "jobs" : "net"), sha) == 0);
	return EXIT_OK;
}

int cmd_replan(int argc, char **argv)
{
	const char *report_path = NULL, *out_path = NULL, *path;
	double alpha = REPLAN_ALPHA;
	const struct cli_opt opts[] = {
		OPT_STRING("report", 0, "FILE", CLI_REQUIRED, &report_path),
		OPT_CALL("alpha", 0, "A", 0, &alpha, set_alpha),
		OPT_STRING("output", 'o', "plan.json", CLI_LETTER, &out_path),
		OPT_END(),
	};
	const struct cli_cmd cmd = { "replan", "PLAN.json", opts, NULL, NULL, 0 };
	struct mp_error err = { "" };
	struct mp_exec_op_time *t = NULL;
	struct mp_replan_report rep;
	struct mp_replan_diff d;
	struct mp_replan re = { 0 };
	struct mp_plan_req req;
	struct mp_plan plan;
	struct mp_net *net = NULL;
	json_t *root = NULL, *report = NULL;
	double *factor = NULL;
	char sha[65], b1[32];
	int rc, at;

	if ((rc = cli_parse(&cmd, argc, argv, &at)) != CLI_GO)
		return rc;
	if (argc - at != 1)
		return cli_usage_error(&cmd);
	if (!report_path)
		return cli_error(EXIT_BAD_INPUT, "replan: --report FILE is required (a memplan verify --report of the plan)");
	path = argv[at];
	if (out_path && (out_same_file(out_path, path) || out_same_file(out_path, report_path)))
		return cli_error(EXIT_BAD_INPUT, "replan: -o '%s' is the %s it reads: write the plan elsewhere", out_path,
				 out_same_file(out_path, path) ? "plan" : "report");
	plan_init(&plan);
	plan_init(&re.plan);
	if ((rc = read_plan(path, &root, &net, &req, &plan, sha)) != EXIT_OK)
		goto out;
	if (!(report = mp_json_load_file(report_path, &err))) {
		rc = cli_error(EXIT_BAD_INPUT, "%s: %s", report_path, err.msg);
		goto out;
	}
	t = mp_xmalloc((net->n_ops + 1) * sizeof(*t));
	factor = mp_xmalloc((net->n_ops + 1) * sizeof(*factor));
	if (replan_read_report(report, net, sha, t, &rep, &err) < 0) {
		rc = cli_error(EXIT_BAD_INPUT, "%s: %s", report_path, err.msg);
		goto out;
	}
	for (uint32_t k = 0; k < net->n_ops; k++)
		factor[k] = 1;
	replan_factors(net, t, alpha, factor);
	if (replan_run(json_object_get(root, net->n_jobs ? "jobs" : "net"), net, &req, plan.planner, factor, alpha, &re,
		       &err) < 0) {
		rc = cli_lib_error("replan", &err);
		goto out;
	}
	printf("replan    %s: net '%s', planner %s, budget %s, device %s\n", path, net->name,
	       mp_planner_name(plan.planner), mp_fmt_bytes(req.budget_bytes, b1, sizeof(b1)), req.device.name);
	print_times(net, t, factor, &rep, report_path, alpha);
	print_plans(&plan, &re.plan, &rep, req.budget_bytes);
	replan_diff(net, &plan, re.net, &re.plan, &d);
	print_changes(&d);
	replan_diff_release(&d);
	if (!re.plan.fits) {
		rc = cli_error(EXIT_NO, "replan: %s's plan on the corrected times no longer fits %s; nothing written",
			       mp_planner_name(re.plan.planner), mp_fmt_bytes(req.budget_bytes, b1, sizeof(b1)));
		goto out;
	}
	if (out_path) {
		struct mp_json_arena ja;
		json_t *o;

		mp_json_arena_begin(&ja); /* as memplan plan writes its plan */
		o = plan_to_json(re.net, re.net_json, &req, &re.plan);
		/* full precision: the plan's digest covers its net's numbers */
		rc = out_json_file(out_path, o, JSON_INDENT(1) | JSON_PRESERVE_ORDER, "-o");
		json_decref(o);
		mp_json_arena_end(&ja);
	}
out:
	replan_release(&re);
	plan_release(&plan);
	net_free(net);
	json_decref(root);
	json_decref(report);
	free(t);
	free(factor);
	return rc;
}
