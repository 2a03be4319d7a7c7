/*
 * memplan plan NET.json [NET2.json ...] --budget SIZE|P% [--offset MS,...]
 *   [--planner auto|all|NAME]
 *   [--device NAME|FILE] [--workspace none|dynamic|wr|wd] [--workspace-limit SIZE]
 *   [--checkpoints TYPES] [--time-limit SECONDS] [-o plan.json] [--trace FILE]
 *   [--format table|json] [--model FILE] [--save-model FILE] [--episodes N] [--seed N]
 * The fastest schedule that fits the budget, written as an executable plan.
 * Several nets are several jobs on one GPU (analysis/jobs.h): merged at the
 * offsets given, or at the worst ones found, and planned as one net.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "../analysis/base/jget.h"
#include "../analysis/jobs.h"
#include "../plan/capacity.h"
#include "../plan/dqn.h"
#include "../plan/arena.h"
#include "../plan/plan.h"
#include "../plan/planfile.h"
#include "../plan/trace.h"

static const char *step_label(const struct mp_net *net, int32_t op, char *buf, size_t n)
{
	const struct mp_op *o = &net->ops[op];

	if (o->layer >= 0)
		snprintf(buf, n, "%s '%s'", mp_phase_name(o->phase), net->layers[o->layer].name);
	else
		snprintf(buf, n, "'%s'", o->name);
	return buf;
}

static json_t *algos_json(const struct mp_net *net, const struct mp_plan *p)
{
	json_t *arr = json_array();

	for (uint32_t i = 0; i < p->sched.n; i++) {
		const struct mp_action *a = &p->sched.a[i];
		json_t *o;

		if (a->kind != MP_ACT_COMPUTE || (a->algo < 0 && a->micro <= 1))
			continue;
		o = json_object();
		json_object_set_new(o, "op", json_string(net->ops[a->op].name));
		if (a->micro <= 1) {
			json_object_set_new(o, "algo", json_string(net->ops[a->op].algos[a->algo].name));
		} else {
			json_t *m = json_array();

			for (uint32_t k = 0; k < a->micro; k++) {
				const struct mp_micro *mc = &p->sched.micro[a->micro_at + k];

				json_array_append_new(m, json_pack("[i,s]", (json_int_t)mc->batch,
					mc->algo < 0 ? "default" : net->ops[a->op].algos[mc->algo].name));
			}
			json_object_set_new(o, "micro", m);
		}
		json_array_append_new(arr, o);
	}
	return arr;
}

static json_t *plan_json_summary(const struct mp_net *net, const struct mp_plan_req *req,
				 const struct mp_plan *p)
{
	json_t *o = json_object();

	json_object_set_new(o, "planner", json_string(mp_planner_name(p->planner)));
	json_object_set_new(o, "fits", json_boolean(p->fits));
	json_object_set_new(o, "budget_bytes", json_integer((json_int_t)req->budget_bytes));
	json_object_set_new(o, "peak_bytes", json_integer((json_int_t)p->sim.peak_bytes));
	json_object_set_new(o, "peak_step", json_integer(p->sim.peak_step + 1));
	json_object_set_new(o, "peak_op", json_string(net->ops[p->sim.steps[p->sim.peak_step].op].name));
	json_object_set_new(o, "arena_bytes", json_integer((json_int_t)p->arena_bytes));
	json_object_set_new(o, "max_live_bytes", json_integer((json_int_t)p->max_live_bytes));
	json_object_set_new(o, "time_ms", json_real(p->sim.time_ms));
	json_object_set_new(o, "baseline_time_ms", json_real(p->baseline_ms));
	json_object_set_new(o, "overhead", json_real(p->overhead));
	json_object_set_new(o, "stall_ms", json_real(p->sim.stall_ms));
	json_object_set_new(o, "tail_ms", json_real(p->sim.tail_ms));
	json_object_set_new(o, "swap_out_bytes", json_integer((json_int_t)p->sim.d2h_bytes));
	json_object_set_new(o, "swap_in_bytes", json_integer((json_int_t)p->sim.h2d_bytes));
	if (p->planner == MP_PLANNER_SUPERNEURONS)
		json_object_set_new(o, "uncached_swap_bytes", json_integer((json_int_t)p->uncached_swap_bytes));
	if (p->planner == MP_PLANNER_DQN && req->dqn_model) {
		json_object_set_new(o, "dqn_episodes", json_integer(req->dqn_model->episodes));
		json_object_set_new(o, "dqn_train_s", json_real(req->dqn_model->train_s));
		json_object_set_new(o, "dqn_seed", json_integer((json_int_t)req->dqn_seed));
	}
	json_object_set_new(o, "recomputed_ops", json_integer(p->sim.n_recompute));
	json_object_set_new(o, "recompute_ms", json_real(p->sim.recompute_ms));
	json_object_set_new(o, "msr", json_real(p->msr));
	json_object_set_new(o, "eor", json_real(p->eor));
	json_object_set_new(o, "cbr", json_real(p->cbr));
	json_object_set_new(o, "algorithms", algos_json(net, p));
	json_object_set_new(o, "note", json_string(p->note));
	return o;
}

static void print_plan(const struct mp_net *net, const struct mp_plan_req *req, const struct mp_plan *p)
{
	char b1[32], b2[32], b3[32], lab[300];
	uint32_t n_alg = 0;

	printf("planner          %s: %s\n", mp_planner_name(p->planner), p->note);
	printf("predicted peak   %s (%llu B) at step %u, %s: %s the budget %s\n",
	       mp_fmt_bytes(p->sim.peak_bytes, b1, sizeof(b1)), (unsigned long long)p->sim.peak_bytes,
	       p->sim.peak_step + 1, step_label(net, p->sim.steps[p->sim.peak_step].op, lab, sizeof(lab)),
	       p->fits ? "fits" : "exceeds", mp_fmt_bytes(req->budget_bytes, b2, sizeof(b2)));
	if (p->arena_bytes)
		printf("arena            %s (%llu B), %.3fx the max-live bound %s\n",
		       mp_fmt_bytes(p->arena_bytes, b1, sizeof(b1)), (unsigned long long)p->arena_bytes,
		       p->max_live_bytes ? (double)p->arena_bytes / (double)p->max_live_bytes : 0.0,
		       mp_fmt_bytes(p->max_live_bytes, b2, sizeof(b2)));
	printf("iteration time   %.3f ms (unconstrained %.3f ms, overhead %.1f%%)\n", p->sim.time_ms,
	       p->baseline_ms, 100.0 * p->overhead);
	printf("swapped          %s out, %s in, compute stalled %.3f ms", mp_fmt_bytes(p->sim.d2h_bytes, b1, sizeof(b1)),
	       mp_fmt_bytes(p->sim.h2d_bytes, b2, sizeof(b2)), p->sim.stall_ms);
	if (p->planner == MP_PLANNER_SUPERNEURONS)
		printf(" (without the tensor cache: %s)", mp_fmt_bytes(p->uncached_swap_bytes, b3, sizeof(b3)));
	/* (an iteration ends with its last copy: what runs on after compute's
	 * last action is overhead as a stall is) */
	if (p->sim.tail_ms >= 0.0005)
		printf(", copies after compute ends %.3f ms", p->sim.tail_ms);
	printf("\nrecomputed       %u forward ops (%.3f ms)\n", p->sim.n_recompute, p->sim.recompute_ms);
	for (uint32_t i = 0; i < p->sched.n; i++) {
		const struct mp_action *a = &p->sched.a[i];

		if (a->kind != MP_ACT_COMPUTE || (a->algo < 0 && a->micro <= 1))
			continue;
		printf("%s %s ", n_alg++ ? "," : "conv algorithms ", net->ops[a->op].name);
		if (a->micro <= 1) {
			printf("%s", net->ops[a->op].algos[a->algo].name);
		} else {
			for (uint32_t k = 0; k < a->micro; k++) {
				const struct mp_micro *m = &p->sched.micro[a->micro_at + k];

				printf("%s%u:%s", k ? "+" : "", m->batch, m->algo < 0 ? "default" : net->ops[a->op].algos[m->algo].name);
			}
		}
	}
	if (n_alg)
		printf("\n");
	printf("metrics          MSR %.3f  EOR %.3f  CBR %.3f\n", p->msr, p->eor, p->cbr);
	if (p->planner == MP_PLANNER_DQN && req->dqn_model)
		printf("dqn training     %u episodes in %.2f s (seed %llu)\n", req->dqn_model->episodes,
		       req->dqn_model->train_s, (unsigned long long)req->dqn_seed);
}

/* --budget, and whether it was given; pct > 0: a share of the liveness
 * peak, in percent, resolved once the net is loaded (budget_of_liveness) */
struct budget_arg {
	uint64_t bytes;
	double pct;
	int given;
};

static int set_budget(const char *name, const char *arg, void *dst)
{
	struct budget_arg *b = dst;
	struct mp_error err;
	size_t n = strlen(arg);

	if (n > 1 && arg[n - 1] == '%') {
		char *end;

		errno = 0;
		b->pct = strtod(arg, &end);
		if (strspn(arg, "0123456789.") != n - 1 || errno || end != arg + n - 1 || !(b->pct > 0 && b->pct <= 100)) {
			cli_error(EXIT_BAD_INPUT, "%s: '%s' is not a share of the liveness peak (expected a "
				  "percentage above 0 and at most 100, such as 50%%)", name, arg);
			return -1;
		}
	} else if (mp_parse_size(arg, &b->bytes, &err) < 0) {
		cli_error(EXIT_BAD_INPUT, "%s: %s", name, err.msg);
		return -1;
	} else {
		b->pct = 0; /* (the last --budget wins) */
	}
	b->given = 1;
	return 0;
}

/* --budget P%: P percent of the peak memplan analyze gives the liveness
 * strategy on req's device, the fraction the papers give their budgets
 * as.  EXIT_OK, or the error's exit status after printing it. */
static int budget_of_liveness(const struct mp_net *net, const struct mp_route *r, double pct, int fmt,
			      struct mp_plan_req *req)
{
	struct mp_sim sim;
	struct mp_error err;
	char b1[32], b2[32];

	if (analysis_strategy(net, r, MP_STRAT_LIVENESS, &req->popts, &req->device, NULL, &sim, NULL, &err) < 0)
		return cli_lib_error("plan", &err);
	req->budget_bytes = (uint64_t)((double)sim.peak_bytes * pct / 100);
	if (fmt == FMT_TABLE)
		printf("budget: %s (%llu B), %g%% of the liveness peak %s (%llu B)\n",
		       mp_fmt_bytes(req->budget_bytes, b1, sizeof(b1)), (unsigned long long)req->budget_bytes, pct,
		       mp_fmt_bytes(sim.peak_bytes, b2, sizeof(b2)), (unsigned long long)sim.peak_bytes);
	sim_release(&sim);
	return EXIT_OK;
}

/* flags: the plan file keeps full precision (its net's SHA-256 depends on
 * every digit); the trace may round. */
static int write_json_file(const char *path, json_t *root, const char *what, size_t flags)
{
	int rc = out_json_file(path, root, JSON_INDENT(1) | JSON_PRESERVE_ORDER | flags, what);

	json_decref(root);
	return rc;
}

/* --planner: a planner, or all of them */
struct planner_arg {
	int which, all;
};

static int set_planner(const char *name, const char *arg, void *dst)
{
	struct planner_arg *p = dst;
	char names[256];

	if (!strcmp(arg, "all")) {
		p->all = 1;
		return 0;
	}
	if ((p->which = mp_planner_parse(arg)) < 0) {
		cli_error(EXIT_BAD_INPUT, "%s: unknown planner '%s' (auto, %s, all)", name, arg,
			  mp_planner_list(names, sizeof(names), ", ", MP_PLANNER_AUTO));
		return -1;
	}
	return 0;
}

static const struct cli_choice ws_modes[] = {
	{ "none", MP_WS_NONE }, { "dynamic", MP_WS_DYNAMIC }, { "wr", MP_WS_WR }, { "wd", MP_WS_WD }, { NULL, 0 },
};

static int set_time_limit(const char *name, const char *arg, void *dst)
{
	double *t = dst;
	char *end;

	errno = 0;
	*t = strtod(arg, &end);
	if (errno || end == arg || *end || !(*t > 0) || *t > 1e6) {
		cli_error(EXIT_BAD_INPUT, "%s: '%s' is not a number of seconds (more than 0, at most 1000000)", name, arg);
		return -1;
	}
	return 0;
}

static int set_seed(const char *name, const char *arg, void *dst)
{
	uint64_t *seed = dst;
	char *end;

	errno = 0;
	*seed = strtoull(arg, &end, 10);
	if (errno || end == arg || *end || *arg == '-' || *seed > INT64_MAX) {
		cli_error(EXIT_BAD_INPUT, "%s: '%s' is not a whole number from 0 to 9223372036854775807", name, arg);
		return -1;
	}
	return 0;
}

static void planners_help(void)
{
	char names[256];

	printf("planners: %s (memplan-plan(1))\n", mp_planner_list(names, sizeof(names), ", ", MP_PLANNER_AUTO));
}

/* -o and --trace name two files, neither of them the net. */
static int check_outputs(const char *out_path, const char *trace_path, const char *net_path)
{
	if (out_path && trace_path && out_same_file(out_path, trace_path))
		return cli_error(EXIT_BAD_INPUT, "plan: -o and --trace both name '%s'", out_path);
	for (int w = 0; w < 2; w++) {
		const char *o = w ? trace_path : out_path;

		if (o && out_same_file(o, net_path))
			return cli_error(EXIT_BAD_INPUT, "plan: '%s' is the net it reads: write the plan elsewhere", o);
	}
	return EXIT_OK;
}

/* --model and --save-model go with --planner dqn, and name files apart from
 * the others. */
static int check_dqn_args(const struct planner_arg *pl, const char *model_path, const char *save_path,
			  bool episodes, bool seed, const char *out_path, const char *trace_path, const char *net_path)
{
	const char *other[] = { out_path, trace_path, net_path };

	if ((model_path || save_path || episodes || seed) && (pl->all || pl->which != MP_PLANNER_DQN))
		return cli_error(EXIT_BAD_INPUT, "plan: %s needs --planner dqn", model_path ? "--model" :
				 save_path ? "--save-model" : episodes ? "--episodes" : "--seed");
	for (int k = 0; save_path && k < 3; k++)
		if (other[k] && out_same_file(save_path, other[k]))
			return cli_error(EXIT_BAD_INPUT, "plan: --save-model names '%s', which another option or the net names",
					 save_path);
	return EXIT_OK;
}

/* The device (the net's, else the default, unless --device named one) and,
 * without --budget, the budget: its memory less the reserve memplan capacity
 * uses. */
static int device_and_budget(const struct mp_net *net, bool device_given, bool budget_given, int fmt,
			     struct mp_plan_req *req)
{
	char b1[32], b2[32];

	if (!device_given) {
		if (net->has_device)
			req->device = net->device;
		else
			device_default(&req->device);
	}
	if (budget_given)
		return EXIT_OK;
	if (!req->device.memory_bytes || req->device.memory_bytes <= CAP_DEFAULT_RESERVE)
		return cli_error(EXIT_BAD_INPUT, "plan: --budget is required (for example --budget 11G), or a device with memory");
	req->budget_bytes = req->device.memory_bytes - CAP_DEFAULT_RESERVE;
	if (fmt == FMT_TABLE)
		printf("budget: %s, the memory of %s less a %s reserve for the CUDA context and libraries\n",
		       mp_fmt_bytes(req->budget_bytes, b1, sizeof(b1)), req->device.name,
		       mp_fmt_bytes(CAP_DEFAULT_RESERVE, b2, sizeof(b2)));
	return EXIT_OK;
}

/* Run the planner named, or (auto, all) the near-linear ones; optimal runs
 * by name.  *best: the fastest that fits (-1: none), *lowest: the lowest
 * peak.  EXIT_OK, or the error's exit status after printing it. */
static int run_planners(const struct mp_net *net, const struct mp_route *route, int which,
			const struct mp_plan_req *req, struct mp_plan *plans, int *best, int *lowest,
			const char *net_path)
{
	struct mp_error err = { "" };

	for (int i = 0; i < MP_PLANNER_AUTO; i++) {
		if (which == MP_PLANNER_AUTO ? i >= MP_PLANNER__COUNT : which != i)
			continue;
		if (plan_run(net, route, (enum mp_planner)i, req, &plans[i], &err) < 0)
			return cli_lib_error(net_path, &err);
		if (plans[i].fits && (*best < 0 || plans[i].sim.time_ms < plans[*best].sim.time_ms ||
				      (plans[i].sim.time_ms == plans[*best].sim.time_ms &&
				       plans[i].sim.peak_bytes < plans[*best].sim.peak_bytes)))
			*best = i;
		if (*lowest < 0 || plans[i].sim.peak_bytes < plans[*lowest].sim.peak_bytes)
			*lowest = i;
	}
	return EXIT_OK;
}

/* The jobs of one run: their files, offsets and how they were chosen. */
struct jobs_arg {
	const char *offsets;       /* --offset as given, or NULL */
	uint32_t n;                /* jobs (files); 1: a plan as ever */
	double offset_ms[JOBS_MAX];
	uint32_t tried;            /* offset candidates simulated; 0: given */
	uint32_t n_given;          /* offsets --offset gave (parse_offset) */
	struct mp_net *nets[JOBS_MAX]; /* [n] each job's net, owned (jobs_load) */
};
static json_t *jobs_summary_json(const struct mp_net *net, const struct mp_plan *p);

/* A plan's summary, with its jobs' when there are several. */
static json_t *summary_json(const struct mp_net *net, const struct mp_plan_req *req, const struct jobs_arg *J,
			    const struct mp_plan *p)
{
	json_t *o = plan_json_summary(net, req, p);

	if (net->n_jobs) {
		json_object_set_new(o, "offsets", json_string(J->tried ? "worst" : "given"));
		json_object_set_new(o, "offsets_tried", json_integer(J->tried));
		json_object_set_new(o, "jobs", jobs_summary_json(net, p));
	}
	return o;
}

/* --lower-bound's answer: "bound" with its ms and overhead, "none fits", or
 * "unknown" and why. */
static json_t *bound_json(const struct mp_net *net, const struct mp_bound *f, const struct mp_plan *p)
{
	static const char *const status[] = { "bound", "none fits", "unknown" };
	json_t *o = json_object();

	json_object_set_new(o, "status", json_string(status[f->status]));
	if (f->status == MP_BOUND_FOUND) {
		json_object_set_new(o, "time_ms", json_real(f->ms));
		json_object_set_new(o, "overhead", json_real(p->baseline_ms > 0 ? f->ms / p->baseline_ms - 1 : 0));
	}
	if (f->status == MP_BOUND_NONE_FITS)
		json_object_set_new(o, "op", f->stuck_op >= 0 ? json_string(net->ops[f->stuck_op].name) : json_null());
	if (f->status == MP_BOUND_UNKNOWN)
		json_object_set_new(o, "why", json_string(f->why));
	json_object_set_new(o, "variables", json_integer(f->cols));
	json_object_set_new(o, "constraints", json_integer(f->rows));
	json_object_set_new(o, "seconds", json_real(f->secs));
	return o;
}

static void print_plans_json(const struct mp_net *net, const struct mp_plan_req *req, const struct jobs_arg *J,
			     const struct mp_plan *plans, int all, int best, int lowest, const struct mp_bound *bound)
{
	const struct mp_plan *chosen = &plans[best >= 0 ? best : lowest];
	json_t *root, *arr;

	if (!all) {
		root = summary_json(net, req, J, chosen);
	} else {
		root = json_object();
		arr = json_array();
		for (int i = 0; i < MP_PLANNER__COUNT; i++)
			json_array_append_new(arr, summary_json(net, req, J, &plans[i]));
		json_object_set_new(root, "plans", arr);
		json_object_set_new(root, "chosen", best >= 0 ? json_string(mp_planner_name((enum mp_planner)best)) :
							 json_null());
	}
	if (bound)
		json_object_set_new(root, "lower_bound", bound_json(net, bound, chosen));
	out_json(stdout, root);
}

/* --lower-bound's line: the bound against the plan shown (fits: the chosen one). */
static void print_bound(const struct mp_net *net, const struct mp_bound *f, const struct mp_plan *p, bool fits)
{
	printf("lower bound      ");
	if (f->status == MP_BOUND_FOUND) {
		printf("%.3f ms, overhead %.1f%%: no schedule that fits is faster", f->ms,
		       p->baseline_ms > 0 ? 100.0 * (f->ms / p->baseline_ms - 1) : 0.0);
		if (fits)
			printf("; this plan is %.1f%% above it", f->ms > 0 ? 100.0 * (p->sim.time_ms / f->ms - 1) : 0.0);
	} else if (f->status == MP_BOUND_NONE_FITS) {
		if (f->stuck_op >= 0)
			printf("no schedule fits: '%s' alone needs more than the budget", net->ops[f->stuck_op].name);
		else
			printf("proven: no schedule fits, swaps and re-runs included");
	} else {
		printf("not found: %s", f->why);
	}
	if (f->status != MP_BOUND_UNKNOWN || f->cols)
		printf(" (LP relaxation: %u variables, %u constraints)", f->cols, f->rows);
	printf("\n");
}

/* The table of every planner's plan (--planner all). */
static void print_plans_table(const struct mp_plan *plans)
{
	char b1[32], b2[32], b3[32], b4[32];

	printf("%-17s %4s %10s %10s %10s %9s %10s %10s %5s %6s %6s %6s\n", "planner", "fits", "peak", "arena",
	       "time ms", "overhead", "swap out", "swap in", "recmp", "MSR", "EOR", "CBR");
	for (int i = 0; i < MP_PLANNER__COUNT; i++) {
		const struct mp_plan *p = &plans[i];

		printf("%-17s %4s %10s %10s %10.3f %8.1f%% %10s %10s %5u %6.3f %6.3f %6.3f\n",
		       mp_planner_name(p->planner), p->fits ? "yes" : "no",
		       mp_fmt_bytes(p->sim.peak_bytes, b1, sizeof(b1)), mp_fmt_bytes(p->arena_bytes, b2, sizeof(b2)),
		       p->sim.time_ms, 100.0 * p->overhead, mp_fmt_bytes(p->sim.d2h_bytes, b3, sizeof(b3)),
		       mp_fmt_bytes(p->sim.h2d_bytes, b4, sizeof(b4)), p->sim.n_recompute, p->msr, p->eor, p->cbr);
	}
	printf("\n");
}

static void print_plans(const struct mp_net *net, const struct mp_plan_req *req, const struct mp_layer_min *lmin,
			const struct mp_plan *plans, int all, int best)
{
	char b1[32], lab[300];

	printf("net '%s' under a budget of %s on %s%s%s\n", net->name, mp_fmt_bytes(req->budget_bytes, b1, sizeof(b1)),
	       req->device.name, req->device.is_default ? " (default link: 12 GB/s each way, 10 us per copy)" : "",
	       cli_device_note(&req->device));
	printf("layer-wise minimum %s at step %u (%s)\n\n", mp_fmt_bytes(lmin->bytes, b1, sizeof(b1)), lmin->step + 1,
	       step_label(net, lmin->op, lab, sizeof(lab)));
	if (all)
		print_plans_table(plans);
	if (best >= 0)
		print_plan(net, req, &plans[best]);
}

/* --- several jobs ---------------------------------------------------------- */

static void jobs_free(struct jobs_arg *J)
{
	for (uint32_t j = 0; j < J->n; j++) {
		net_free(J->nets[j]);
		J->nets[j] = NULL;
	}
}

/* One --offset item: milliseconds, bare or with "ms", or seconds with "s". */
static int parse_offset(const char *item, void *ctx)
{
	struct jobs_arg *J = ctx;
	char *end;
	double v;

	if (J->n_given >= JOBS_MAX)
		return cli_error(EXIT_BAD_INPUT, "--offset: more than %u offsets", JOBS_MAX), -1;
	errno = 0;
	v = strtod(item, &end);
	if (end != item && !strcmp(end, "s"))
		v *= 1000;
	else if (end != item && *end && strcmp(end, "ms"))
		end = (char *)item;
	if (errno || end == item || !(v >= 0) || v > 1e9) {
		cli_error(EXIT_BAD_INPUT, "--offset: '%s' is not a time from 0 to 1e9 ms (12.5, 12.5ms or 0.5s)", item);
		return -1;
	}
	J->offset_ms[J->n_given++] = v;
	return 0;
}

/* The offsets: --offset's, one per job, or the worst found.  EXIT_OK, or
 * the exit status after printing. */
static int jobs_offsets(struct jobs_arg *J, const struct mp_net *const *nets)
{
	struct mp_error err = { "" };

	J->tried = 0;
	if (J->offsets) {
		if (cli_each_item(J->offsets, parse_offset, J) < 0)
			return EXIT_BAD_INPUT;
		if (J->n_given != J->n)
			return cli_error(EXIT_BAD_INPUT, "--offset: %u offset%s for %u jobs", J->n_given,
					 J->n_given == 1 ? "" : "s", J->n);
		return EXIT_OK;
	}
	if (jobs_worst_offsets(nets, J->n, NULL, J->offset_ms, &J->tried, &err) < 0)
		return cli_error(EXIT_BAD_INPUT, "%s", err.msg);
	return EXIT_OK;
}

/* Jobs share one GPU: without --device, their nets must all name one
 * device (the plan's), or all name none (a net with a device beside one
 * without is refused too).  EXIT_OK, or EXIT_BAD_INPUT after printing. */
static int jobs_one_device(const struct jobs_arg *J, char **files)
{
	const struct mp_net *a = J->nets[0];

	for (uint32_t j = 1; j < J->n; j++) {
		const struct mp_net *b = J->nets[j];

		if (a->has_device != b->has_device || (a->has_device && strcmp(a->device.name, b->device.name)))
			return cli_error(EXIT_BAD_INPUT, "plan: %s is for %s, %s for %s: the jobs share one GPU; give --device, "
					 "or nets for one device", files[j], b->has_device ? b->device.name : "no device",
					 files[0], a->has_device ? a->device.name : "no device");
	}
	return EXIT_OK;
}

/* Load the jobs' nets and merge them into *net, with *net_json the array of
 * their files (plan_to_json's "jobs"); without device_given their nets must
 * name one device.  EXIT_OK, or the status after printing; nothing to free
 * then. */
static int jobs_load(struct jobs_arg *J, char **files, bool device_given, struct mp_net **net, json_t **net_json)
{
	struct mp_net **nets = J->nets;
	struct mp_error err = { "" };
	int rc = EXIT_BAD_INPUT;

	*net = NULL;
	*net_json = json_array();
	for (uint32_t j = 0; j < J->n; j++) {
		struct mp_route r;
		json_t *root;

		if (!(nets[j] = cli_load_net_json(files[j], &root)))
			goto out;
		json_array_append_new(*net_json, root);
		/* a net that does not route is named by its file, not its index */
		if (route_build(nets[j], &r, &err) < 0) {
			cli_error(EXIT_BAD_INPUT, "%s: %s", files[j], err.msg);
			goto out;
		}
		route_release(&r);
	}
	if (!device_given && (rc = jobs_one_device(J, files)) != EXIT_OK)
		goto out;
	if ((rc = jobs_offsets(J, (const struct mp_net *const *)nets)) != EXIT_OK)
		goto out;
	if (!(*net = jobs_merge((const struct mp_net *const *)nets, J->n, J->offset_ms, (const char *const *)files,
				NULL, &err)))
		rc = cli_error(EXIT_BAD_INPUT, "%s", err.msg);
out:
	if (rc != EXIT_OK) {
		jobs_free(J);
		json_decref(*net_json);
		*net_json = NULL;
	}
	return rc;
}

/* Each job alone under the plan's planner and request (plan_jobs_alone).
 * EXIT_OK, or the status after printing. */
static int jobs_alone(const struct jobs_arg *J, struct mp_net *net, enum mp_planner which,
		      const struct mp_plan_req *req)
{
	struct mp_error err = { "" };
	uint32_t j;

	if (plan_jobs_alone(net, J->nets, which, req, &j, &err) < 0)
		return cli_error(EXIT_INTERNAL, "plan: %s alone: %s", net->jobs[j].name, err.msg);
	return EXIT_OK;
}

static json_t *jobs_summary_json(const struct mp_net *net, const struct mp_plan *p)
{
	json_t *arr = json_array();
	double ms[JOBS_MAX];

	jobs_times(net, &p->sched, ms);
	for (uint32_t j = 0; j < net->n_jobs; j++) {
		const struct mp_job *x = &net->jobs[j];

		json_array_append_new(arr, json_pack("{s:s, s:s, s:f, s:s, s:f, s:f, s:f, s:I}", "name", x->name,
			"file", x->file ? x->file : "", "offset_ms", x->offset_ms, "prefix", x->prefix,
			"time_ms", ms[j], "alone_time_ms", x->alone_ms,
			"overhead", x->alone_ms > 0 ? ms[j] / x->alone_ms - 1 : 0.0,
			"alone_peak_bytes", (json_int_t)x->alone_peak));
	}
	return arr;
}

/* The jobs' lines of the table: how the offsets were chosen, then each
 * job's iteration on the shared engine against alone. */
static void print_jobs(const struct mp_net *net, const struct jobs_arg *J, const struct mp_plan *p)
{
	double ms[JOBS_MAX];
	char b1[32];

	jobs_times(net, &p->sched, ms);
	printf("jobs             %u on one GPU, compute time-sliced; offsets ", net->n_jobs);
	for (uint32_t j = 0; j < net->n_jobs; j++)
		printf("%s%.3f", j ? ", " : "", net->jobs[j].offset_ms);
	if (J->tried)
		printf(" ms: the worst of %u alignment%s tried (the highest liveness peak)\n", J->tried,
		       J->tried == 1 ? "" : "s");
	else
		printf(" ms: as given\n");
	printf("  %-18s %10s %10s %10s %9s %11s  %s\n", "job", "offset ms", "alone ms", "shared ms", "overhead",
	       "alone peak", "file");
	for (uint32_t j = 0; j < net->n_jobs; j++) {
		const struct mp_job *x = &net->jobs[j];

		printf("  %-18s %10.3f %10.3f %10.3f %8.1f%% %11s  %s\n", x->name, x->offset_ms, x->alone_ms, ms[j],
		       x->alone_ms > 0 ? 100.0 * (ms[j] / x->alone_ms - 1) : 0.0,
		       mp_fmt_bytes(x->alone_peak, b1, sizeof(b1)), x->file ? x->file : "");
	}
}

int cmd_plan(int argc, char **argv)
{
	const char *device_arg = NULL, *out_path = NULL, *trace_path = NULL, *model_path = NULL, *save_path = NULL;
	struct dqn_model model;
	struct planner_arg pl = { MP_PLANNER_AUTO, 0 };
	struct budget_arg budget = { 0, 0, 0 };
	struct jobs_arg J;
	struct mp_plan_req req;
	struct mp_json_arena ja;
	int fmt = FMT_TABLE, k, rc, at, want_bound = 0;
	const struct cli_opt opts[] = {
		OPT_CALL("budget", 0, "SIZE|P%", CLI_REQUIRED, &budget, set_budget),
		OPT_CALL("planner", 0, "auto|all|NAME", 0, &pl, set_planner),
		OPT_STRING("device", 0, "NAME|FILE", CLI_NEWLINE, &device_arg),
		OPT_CHOICE("workspace", "none|dynamic|wr|wd", 0, &req.ws_mode, ws_modes, "mode", "none, dynamic, wr, wd"),
		OPT_SIZE("workspace-limit", "SIZE", CLI_NEWLINE, &req.ws_limit_bytes),
		OPT_CALL("checkpoints", 0, "conv,fc,...", 0, &req.popts.checkpoints, cli_set_checkpoints),
		OPT_CALL("time-limit", 0, "SECONDS", CLI_NEWLINE, &req.time_limit_s, set_time_limit),
		OPT_FLAG("lower-bound", 0, &want_bound),
		OPT_STRING("offset", 0, "MS,...", CLI_NEWLINE, &J.offsets),
		OPT_STRING("output", 'o', "plan.json", CLI_LETTER, &out_path),
		OPT_STRING("trace", 0, "FILE", 0, &trace_path),
		OPT_FORMAT("format", "table|json", CLI_NEWLINE, &fmt, 0),
		OPT_STRING("model", 0, "FILE", CLI_NEWLINE, &model_path),
		OPT_STRING("save-model", 0, "FILE", 0, &save_path),
		OPT_COUNT("episodes", "N", 0, &req.dqn_episodes, 0),
		OPT_CALL("seed", 0, "N", 0, &req.dqn_seed, set_seed),
		OPT_END(),
	};
	const struct cli_cmd cmd = { "plan", "NET.json [NET2.json ...]", opts, NULL, planners_help, 0 };
	struct mp_error err = { "" };
	struct mp_plan plans[MP_PLANNER_AUTO];
	struct mp_layer_min lmin;
	struct mp_route route;
	struct mp_net *net;
	json_t *net_json;
	const char *what;
	int best = -1, lowest = -1;
	bool seed_given, episodes_given;
	struct mp_bound bound = { MP_BOUND_UNKNOWN, 0, -1, 0, 0, 0, "" };
	char b1[32], b2[32], lab[300];

	memset(&req, 0, sizeof(req));
	memset(&model, 0, sizeof(model));
	memset(&J, 0, sizeof(J));
	req.ws_mode = MP_WS_DYNAMIC;
	req.dqn_seed = UINT64_MAX;      /* (given or not: set_seed refuses it) */
	req.dqn_episodes = UINT32_MAX;
	policy_opts_default(&req.popts);
	if ((rc = cli_parse(&cmd, argc, argv, &at)) != CLI_GO)
		return rc;
	seed_given = req.dqn_seed != UINT64_MAX;
	episodes_given = req.dqn_episodes != UINT32_MAX;
	if (!seed_given)
		req.dqn_seed = 1;
	if (!episodes_given)
		req.dqn_episodes = 0;
	req.budget_bytes = budget.bytes;
	if (argc - at < 1)
		return cli_usage_error(&cmd);
	if (argc - at > JOBS_MAX)
		return cli_error(EXIT_BAD_INPUT, "plan: %d nets: at most %u jobs share one GPU", argc - at, JOBS_MAX);
	J.n = (uint32_t)(argc - at);
	if (J.n == 1 && J.offsets)
		return cli_error(EXIT_BAD_INPUT, "--offset: one net is one job; give the nets of several jobs");
	for (int i = at; i < argc; i++)
		if ((rc = check_outputs(out_path, trace_path, argv[i])) != EXIT_OK)
			return rc;
	if ((rc = check_dqn_args(&pl, model_path, save_path, episodes_given, seed_given, out_path, trace_path,
				 argv[at])) != EXIT_OK)
		return rc;
	if (model_path && dqn_model_load(model_path, &model, &err) < 0)
		return cli_error(EXIT_BAD_INPUT, "--model: %s", err.msg);
	req.dqn_model = &model;
	if (device_arg && device_resolve(device_arg, &req.device, &err) < 0)
		return cli_error(EXIT_BAD_INPUT, "--device: %s", err.msg);
	if (J.n == 1) {
		if (!(net = cli_load_net_json(argv[at], &net_json)))
			return EXIT_BAD_INPUT;
		what = argv[at];
	} else {
		if ((rc = jobs_load(&J, argv + at, device_arg != NULL, &net, &net_json)) != EXIT_OK)
			return rc;
		what = "plan";
	}
	if ((rc = device_and_budget(net, device_arg != NULL, budget.given, fmt, &req)) != EXIT_OK)
		goto out_net;
	if (route_build(net, &route, &err) < 0) {
		rc = cli_error(EXIT_BAD_INPUT, "%s: %s", what, err.msg);
		goto out_net;
	}
	if (budget.pct > 0 && (rc = budget_of_liveness(net, &route, budget.pct, fmt, &req)) != EXIT_OK)
		goto out_route;
	policy_layer_min(net, &route, &lmin);
	if (req.budget_bytes < lmin.bytes) {
		rc = cli_error(EXIT_NO, "plan: budget %s is below the layer-wise minimum %s (step %u, %s)",
			       mp_fmt_bytes(req.budget_bytes, b1, sizeof(b1)), mp_fmt_bytes(lmin.bytes, b2, sizeof(b2)),
			       lmin.step + 1, step_label(net, lmin.op, lab, sizeof(lab)));
		goto out_route;
	}
	for (int i = 0; i < MP_PLANNER_AUTO; i++)
		plan_init(&plans[i]);
	if ((rc = run_planners(net, &route, pl.which, &req, plans, &best, &lowest, what)) != EXIT_OK)
		goto out_plans;
	/* (unless the arena is the lower bound already) */
	if (best >= 0 && plans[best].arena_bytes > plans[best].max_live_bytes)
		plan_smallest_arena(net, &plans[best], req.budget_bytes);
	if (net->n_jobs &&
	    (rc = jobs_alone(&J, net, plans[best >= 0 ? best : lowest].planner, &req)) != EXIT_OK)
		goto out_plans;
	if (want_bound)
		plan_lower_bound(net, &route, &req, &bound);
	if (fmt == FMT_JSON) {
		print_plans_json(net, &req, &J, plans, pl.all, best, lowest, want_bound ? &bound : NULL);
	} else {
		print_plans(net, &req, &lmin, plans, pl.all, best);
		if (net->n_jobs)
			print_jobs(net, &J, &plans[best >= 0 ? best : lowest]);
		if (want_bound)
			print_bound(net, &bound, &plans[best >= 0 ? best : lowest], best >= 0);
	}
	if (best < 0) {
		const struct mp_plan *p = &plans[lowest];

		rc = cli_error(EXIT_NO, "plan: no planner fits %s; the smallest peak reached is %s (%s, step %u, %s)",
			       mp_fmt_bytes(req.budget_bytes, b1, sizeof(b1)), mp_fmt_bytes(p->sim.peak_bytes, b2, sizeof(b2)),
			       mp_planner_name(p->planner), p->sim.peak_step + 1,
			       step_label(net, p->sim.steps[p->sim.peak_step].op, lab, sizeof(lab)));
		goto out_plans;
	}
	/* each tree is built, written and dropped in the arena (net_json, from
	 * outside it, is only referenced) */
	mp_json_arena_begin(&ja);
	if (out_path && (k = write_json_file(out_path, plan_to_json(net, net_json, &req, &plans[best]), "-o", 0)) != EXIT_OK)
		rc = k;
	if (trace_path && (k = write_json_file(trace_path, plan_trace_json(net, &plans[best]), "--trace",
					       JSON_REAL_PRECISION(12))) != EXIT_OK)
		rc = k;
	if (save_path && (k = write_json_file(save_path, dqn_model_json(&model), "--save-model", 0)) != EXIT_OK)
		rc = k;
	mp_json_arena_end(&ja);
out_plans:
	for (int i = 0; i < MP_PLANNER_AUTO; i++)
		plan_release(&plans[i]);
out_route:
	route_release(&route);
out_net:
	json_decref(net_json);
	net_free(net);
	jobs_free(&J);
	return rc;
}
