/*
 * Unit tests of re-planning from measured times (verify/replan.c, TENSILE
 * IV-E): the moving average and the per-op factors, worked by hand for a
 * small net (a conv with two algorithms, a relu recomputed, an fc with an
 * update time, an explicit op); the corrected net file and the times the
 * loader then sees; the verify report reader and its refusals; and, on
 * examples/swap-chain-stall.json, a plan made on half the times that
 * re-planning on the true times turns from a recompute into a swap; and a
 * plan of two jobs, corrected job by job.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../analysis/base/jget.h"
#include "../../analysis/jobs.h"
#include "../../plan/planfile.h"
#include "../../verify/replan.h"
#include "unit.h"

static void test_ewma(void)
{
	CHECK_NEAR(replan_ewma(0.3, 2.0, 1.0), 1.3, 1e-12);
	CHECK_NEAR(replan_ewma(0.3, 1.0, 2.0), 1.7, 1e-12);
	CHECK_NEAR(replan_ewma(1.0, 3.0, 1.0), 3.0, 1e-12);
	CHECK_NEAR(replan_ewma(0.5, 3.0, 1.0), 2.0, 1e-12);
	/* the same measurement again and again: 1 - 0.5 * 0.7^k of the truth */
	double t = 0.5;

	for (int k = 0; k < 3; k++)
		t = replan_ewma(0.3, 1.0, t);
	CHECK_NEAR(t, 1 - 0.5 * 0.343, 1e-12);
	/* a measurement that is the prediction leaves the time exactly as it
	 * was (0.3 * 0.1 + 0.7 * 0.1 is not 0.1 in doubles) */
	{
		static const struct mp_exec_op_time same[3] = { { 1, 0.1, 0.1 }, { 2, 0.7, 0.7 }, { 1, 1.0 / 3, 1.0 / 3 } };
		struct mp_net one = { 0 };
		double f[3] = { 1, 1, 1 };

		one.n_ops = 3;
		replan_factors(&one, same, 0.3, f);
		for (int k = 0; k < 3; k++)
			CHECK(f[k] == 1.0);
	}
	/* rounds of one plan: the estimate moves on from where it was, an op
	 * predicted 1 ms and measured 2 at alpha 0.5: 1.5, then 1.75 */
	{
		static const struct mp_exec_op_time slow[1] = { { 1, 1.0, 2.0 } };
		struct mp_net one = { 0 };
		double f[1] = { 1 };

		one.n_ops = 1;
		replan_factors(&one, slow, 0.5, f);
		CHECK(f[0] == 1.5);
		replan_factors(&one, slow, 0.5, f);
		CHECK(f[0] == 1.75);
		/* from an estimate of 2, a measurement at the prediction moves
		 * it half way back: 1.5 */
		f[0] = 2;
		replan_factors(&one, (const struct mp_exec_op_time[1]){ { 1, 1.0, 1.0 } }, 0.5, f);
		CHECK(f[0] == 1.5);
	}
	/* TENSILE's rate of change: ops of 2 and 6 ms estimated at 3 and 3,
	 * 8 ms -> 6 ms: 0.25; none moved: 0; a net of no time: 0 */
	{
		struct mp_op ops[2] = { { 0 } };
		struct mp_net two = { 0 };
		double f[2] = { 1.5, 0.5 }, ones[2] = { 1, 1 };

		ops[0].ms = 2;
		ops[1].ms = 6;
		two.n_ops = 2;
		two.ops = ops;
		CHECK_NEAR(replan_change(&two, f), 0.25, 1e-15);
		CHECK(replan_change(&two, ones) == 0);
		ops[0].ms = ops[1].ms = 0;
		CHECK(replan_change(&two, f) == 0);
	}
}

static const char net_text[] =
	"{\"format\": \"memplan-net/1\", \"name\": \"rp\", \"optimizer\": \"sgd\", \"time_source\": \"measured:Fake\",\n"
	" \"layers\": [\n"
	"  {\"name\": \"data\", \"type\": \"data\", \"shape\": [4, 3, 8, 8]},\n"
	"  {\"name\": \"conv\", \"type\": \"conv\", \"inputs\": [\"data\"], \"shape\": [4, 8, 8, 8],\n"
	"   \"params\": [[8, 3, 3, 3], [8]], \"workspace\": \"1K\",\n"
	"   \"algos\": [{\"name\": \"implicit_gemm\", \"workspace\": 0, \"time\": {\"fwd\": 1.5, \"bwd\": 3}},\n"
	"             {\"name\": \"fft\", \"workspace\": \"8K\", \"time\": {\"fwd\": 1, \"bwd\": 2}}]},\n"
	"  {\"name\": \"relu\", \"type\": \"relu\", \"inputs\": [\"conv\"], \"shape\": [4, 8, 8, 8],\n"
	"   \"time\": {\"fwd\": 0.2, \"bwd\": 0.3}},\n"
	"  {\"name\": \"fc\", \"type\": \"fc\", \"inputs\": [\"relu\"], \"shape\": [4, 10],\n"
	"   \"params\": [[10, 512], [10]], \"time\": {\"fwd\": 0.6, \"bwd\": 1.2, \"update\": 0.01}},\n"
	"  {\"name\": \"loss\", \"type\": \"loss\", \"inputs\": [\"fc\"], \"shape\": [4, 10],\n"
	"   \"time\": {\"fwd\": 0.05, \"bwd\": 0.06}}],\n"
	" \"tensors\": [{\"name\": \"extra\", \"kind\": \"input\", \"bytes\": 64}, {\"name\": \"aux.out\", \"bytes\": 64}],\n"
	" \"ops\": [{\"name\": \"aux\", \"inputs\": [\"extra\"], \"outputs\": [\"aux.out\"], \"time\": 0.5}]}\n";

static json_t *parse(const char *text)
{
	json_error_t jerr;
	json_t *v = json_loads(text, JSON_REJECT_DUPLICATES, &jerr);

	if (!v)
		fprintf(stderr, "test_replan: %d: %s\n", jerr.line, jerr.text);
	return v;
}

static void set_time(const struct mp_net *net, struct mp_exec_op_time *t, const char *op, uint32_t runs, double pred,
		     double meas)
{
	int32_t k = net_find_op(net, op);

	CHECK(k >= 0);
	if (k >= 0)
		t[k] = (struct mp_exec_op_time){ runs, pred, meas };
}

static double num(const json_t *root, const char *layer_or_op, const char *key, int algo, const char *phase)
{
	json_t *arr = json_object_get(root, key), *o = NULL;

	for (size_t i = 0; i < json_array_size(arr); i++)
		if (!strcmp(json_string_value(json_object_get(json_array_get(arr, i), "name")), layer_or_op))
			o = json_array_get(arr, i);
	if (algo >= 0)
		o = json_array_get(json_object_get(o, "algos"), (size_t)algo);
	o = json_object_get(o, "time");
	if (phase)
		o = json_object_get(o, phase);
	return json_is_number(o) ? json_number_value(o) : NAN;
}

static double op_ms(const struct mp_net *net, const char *op)
{
	int32_t k = net_find_op(net, op);

	return k >= 0 ? net->ops[k].ms : NAN;
}

/* conv.fwd ran its default (1.5) and took 3; conv.bwd ran fft (2) and took
 * 1; relu.fwd ran twice (0.4 predicted, 0.6 measured); fc.update 0.01 took
 * 0.03; aux 0.5 took 0.25; loss.bwd as predicted; fc.fwd not listed. */
static void test_factors_and_net(void)
{
	json_t *root = parse(net_text), *out, *again;
	struct mp_error err = { "" };
	struct mp_net *net = root ? net_load_json(root, &err) : NULL, *net2;
	struct mp_exec_op_time *t;
	double *f;

	CHECK(net != NULL);
	if (!net) {
		fprintf(stderr, "test_replan: %s\n", err.msg);
		json_decref(root);
		return;
	}
	t = calloc(net->n_ops, sizeof(*t));
	f = calloc(net->n_ops, sizeof(*f));
	set_time(net, t, "conv.fwd", 1, 1.5, 3.0);
	set_time(net, t, "conv.bwd", 1, 2.0, 1.0);
	set_time(net, t, "relu.fwd", 2, 0.4, 0.6);
	set_time(net, t, "fc.update", 1, 0.01, 0.03);
	set_time(net, t, "aux", 1, 0.5, 0.25);
	set_time(net, t, "loss.bwd", 1, 0.06, 0.06);
	set_time(net, t, "data.fwd", 1, 0, 0.5);
	for (uint32_t k = 0; k < net->n_ops; k++)
		f[k] = 1;
	replan_factors(net, t, 0.3, f);
	/* (0.3 x 3 + 0.7 x 1.5) / 1.5 = 1.95 / 1.5 */
	CHECK_NEAR(f[net_find_op(net, "conv.fwd")], 1.3, 1e-12);
	/* (0.3 x 1 + 0.7 x 2) / 2 = 1.7 / 2 */
	CHECK_NEAR(f[net_find_op(net, "conv.bwd")], 0.85, 1e-12);
	/* (0.3 x 0.6 + 0.7 x 0.4) / 0.4 = 0.46 / 0.4 */
	CHECK_NEAR(f[net_find_op(net, "relu.fwd")], 1.15, 1e-12);
	/* (0.009 + 0.007) / 0.01 */
	CHECK_NEAR(f[net_find_op(net, "fc.update")], 1.6, 1e-12);
	/* (0.075 + 0.35) / 0.5 */
	CHECK_NEAR(f[net_find_op(net, "aux")], 0.85, 1e-12);
	CHECK_NEAR(f[net_find_op(net, "loss.bwd")], 1, 1e-12);
	CHECK(f[net_find_op(net, "fc.fwd")] == 1);   /* not measured */
	CHECK(f[net_find_op(net, "data.fwd")] == 1); /* predicted 0 ms: nothing to scale */

	out = replan_net_json(root, net, f, 0.3, &err);
	CHECK(out != NULL);
	if (!out)
		goto done;
	/* the conv has no layer time: its algorithms carry it */
	CHECK(isnan(num(out, "conv", "layers", -1, "fwd")));
	CHECK_NEAR(num(out, "conv", "layers", 0, "fwd"), 1.95, 1e-12);
	CHECK_NEAR(num(out, "conv", "layers", 1, "fwd"), 1.3, 1e-12);
	CHECK_NEAR(num(out, "conv", "layers", 0, "bwd"), 2.55, 1e-12);
	CHECK_NEAR(num(out, "conv", "layers", 1, "bwd"), 1.7, 1e-12);
	CHECK_NEAR(num(out, "relu", "layers", -1, "fwd"), 0.23, 1e-12);
	CHECK_NEAR(num(out, "relu", "layers", -1, "bwd"), 0.3, 0);
	CHECK_NEAR(num(out, "fc", "layers", -1, "fwd"), 0.6, 0);
	CHECK_NEAR(num(out, "fc", "layers", -1, "update"), 0.016, 1e-12);
	CHECK_NEAR(num(out, "aux", "ops", -1, NULL), 0.425, 1e-12);
	CHECK_STR(json_string_value(json_object_get(out, "time_source")), "replan (alpha 0.3) of measured:Fake");
	/* the input is not touched */
	CHECK_NEAR(num(root, "relu", "layers", -1, "fwd"), 0.2, 0);

	net2 = net_load_json(out, &err);
	CHECK(net2 != NULL);
	if (net2) {
		CHECK_NEAR(op_ms(net2, "conv.fwd"), 1.95, 1e-12); /* the first algorithm is the default */
		CHECK_NEAR(op_ms(net2, "conv.bwd"), 2.55, 1e-12);
		CHECK_NEAR(op_ms(net2, "relu.fwd"), 0.23, 1e-12);
		CHECK_NEAR(op_ms(net2, "fc.update"), 0.016, 1e-12);
		CHECK_NEAR(op_ms(net2, "aux"), 0.425, 1e-12);
		CHECK_U64(net2->n_ops, net->n_ops);
		/* corrected again: the source names the first one only */
		again = replan_net_json(out, net2, f, 0.5, &err);
		CHECK(again != NULL);
		if (again)
			CHECK_STR(json_string_value(json_object_get(again, "time_source")), "replan (alpha 0.5) of measured:Fake");
		json_decref(again);
		net_free(net2);
	}
	json_decref(out);
done:
	free(t);
	free(f);
	net_free(net);
	json_decref(root);
}

/* A report for net rp: format, digest, scale, totals and ops. */
static json_t *report(const char *sha, const char *ops)
{
	char buf[2048];

	snprintf(buf, sizeof(buf),
		 "{\"format\": \"memplan-verify/1\", \"net\": \"rp\", \"time_scale\": 2, \"ok\": true,\n"
		 " \"total\": {\"time_ms\": {\"predicted\": 9, \"measured\": 0.1}, \"stall_ms\": {\"predicted\": 0, \"measured\": 1}},\n"
		 " \"timing\": {\"wall_ms\": 0.1, \"timeline_ms\": 10},\n"
		 " \"net_sha256\": \"%s\", \"ops\": %s}", sha, ops);
	return parse(buf);
}

static void check_refused(const struct mp_net *net, json_t *r, const char *want)
{
	struct mp_exec_op_time *t = calloc(net->n_ops, sizeof(*t));
	struct mp_replan_report rep;
	struct mp_error err = { "" };

	CHECK(r != NULL);
	CHECK(replan_read_report(r, net, "abc", t, &rep, &err) == -1);
	CHECK_STR(err.msg, want);
	free(t);
	json_decref(r);
}

static void test_report(void)
{
	json_t *root = parse(net_text), *r;
	struct mp_error err = { "" };
	struct mp_net *net = root ? net_load_json(root, &err) : NULL;
	struct mp_exec_op_time *t;
	struct mp_replan_report rep;

	CHECK(net != NULL);
	if (!net) {
		json_decref(root);
		return;
	}
	t = calloc(net->n_ops, sizeof(*t));
	r = report("abc", "[{\"op\": \"conv.fwd\", \"phase\": \"forward\", \"runs\": 1, \"predicted_ms\": 3, \"measured_ms\": 6},"
			  " {\"op\": \"aux\", \"runs\": 2, \"predicted_ms\": 1, \"measured_ms\": 0.5}]");
	CHECK(r && replan_read_report(r, net, "abc", t, &rep, &err) == 0);
	CHECK_NEAR(rep.time_scale, 2, 0);
	CHECK_NEAR(rep.time_ms, 5, 1e-12);   /* the timeline over the scale */
	CHECK_NEAR(rep.stall_ms, 0.5, 1e-12);
	CHECK_U64(rep.n_ops, 2);
	CHECK_U64(t[net_find_op(net, "conv.fwd")].runs, 1);
	CHECK_NEAR(t[net_find_op(net, "conv.fwd")].meas_ms, 6, 0);
	CHECK_U64(t[net_find_op(net, "aux")].runs, 2);
	CHECK_U64(t[net_find_op(net, "relu.fwd")].runs, 0);
	json_decref(r);
	free(t);

	check_refused(net, report("abd", "[]"),
		      "net_sha256: the report measured another net than the plan's (abd..., the plan's abc...)");
	check_refused(net, report("abc", "[{\"op\": \"conv9.fwd\", \"runs\": 1, \"predicted_ms\": 1, \"measured_ms\": 1}]"),
		      "ops[0].op: no op named 'conv9.fwd' in the plan's net");
	check_refused(net, report("abc", "[{\"op\": \"aux\", \"runs\": 1, \"predicted_ms\": 1, \"measured_ms\": 1},"
					 " {\"op\": \"aux\", \"runs\": 1, \"predicted_ms\": 1, \"measured_ms\": 1}]"),
		      "ops[1].op: op 'aux' listed twice");
	check_refused(net, report("abc", "[{\"op\": \"aux\", \"runs\": 0, \"predicted_ms\": 1, \"measured_ms\": 1}]"),
		      "ops[0].runs: 0 is out of range [1, 4294967295]");
	check_refused(net, report("abc", "[{\"op\": \"aux\", \"runs\": 1, \"predicted_ms\": 1, \"measured_ms\": -1}]"),
		      "ops[0].measured_ms: must not be negative, got -1 ms");
	check_refused(net, report("abc", "{}"), "ops: expected an array, got an object");
	check_refused(net, parse("{\"format\": \"memplan-plan/1\"}"),
		      "format: 'memplan-plan/1', expected \"memplan-verify/1\" (a memplan verify --report)");
	check_refused(net, parse("{\"format\": \"memplan-verify/1\", \"ok\": false, \"violation\": \"x\"}"),
		      "violation: the run stopped before it measured anything");
	check_refused(net, parse("{\"format\": \"memplan-verify/1\", \"ok\": true}"),
		      "net_sha256: missing (a report without per-op times: run memplan verify --report again)");
	net_free(net);
	json_decref(root);
}

/* examples/swap-chain-stall.json at half its times, greedy under 11 KiB,
 * weighing its plans by simulated time (req.weigh_raw): recomputing c1
 * (0.5 ms) beats swapping c1.out, whose 0.51 ms copy back would stall.  At
 * the true times (every op x 2) the swap hides behind big.bwd (2 ms) but
 * for 0.41 ms and beats the 1 ms recompute: the re-plan removes the
 * recompute and adds the swap.  (Weighed as plan_run does by default, by
 * the time after its last steps, the half-time plan already swaps, its
 * copies issued earlier: no slower than 6.05 ms.) */
static void test_swap_for_recompute(void)
{
	struct mp_error err = { "" };
	json_t *root = mp_json_load_file("examples/swap-chain-stall.json", &err), *half = NULL;
	struct mp_net *net = root ? net_load_json(root, &err) : NULL, *hnet = NULL;
	struct mp_plan_req req;
	struct mp_replan re;
	struct mp_replan_diff d;
	struct mp_route route;
	struct mp_plan p;
	double *f;

	CHECK(net != NULL);
	if (!net) {
		fprintf(stderr, "test_replan: %s\n", err.msg);
		json_decref(root);
		return;
	}
	f = calloc(net->n_ops, sizeof(*f));
	for (uint32_t k = 0; k < net->n_ops; k++)
		f[k] = 0.5;
	half = replan_net_json(root, net, f, 1, &err);
	hnet = half ? net_load_json(half, &err) : NULL;
	CHECK(hnet != NULL);
	memset(&req, 0, sizeof(req));
	req.budget_bytes = 11 * 1024;
	req.device = net->device;
	req.ws_mode = MP_WS_DYNAMIC;
	policy_opts_default(&req.popts);
	plan_init(&p);
	CHECK(hnet && route_build(hnet, &route, &err) == 0);
	CHECK(hnet && plan_run(hnet, &route, MP_PLANNER_GREEDY, &req, &p, &err) == 0);
	CHECK(p.fits && p.sim.time_ms <= 6.05 + 1e-9);
	req.weigh_raw = true;
	CHECK(hnet && plan_run(hnet, &route, MP_PLANNER_GREEDY, &req, &p, &err) == 0);
	if (hnet)
		route_release(&route);
	CHECK(p.fits);
	CHECK_U64(p.sim.n_recompute, 1);
	CHECK_U64(p.sim.h2d_bytes, 0);
	CHECK_NEAR(p.sim.time_ms, 6.05, 1e-9);
	for (uint32_t k = 0; k < net->n_ops; k++)
		f[k] = 2;
	CHECK(replan_run(half, hnet, &req, MP_PLANNER_GREEDY, f, 1, &re, &err) == 0);
	CHECK(re.plan.fits);
	CHECK_U64(re.plan.sim.n_recompute, 0);
	CHECK_U64(re.plan.sim.h2d_bytes, 4096);
	CHECK_NEAR(re.plan.sim.time_ms, 11.5096, 1e-9);
	CHECK_NEAR(re.plan.sim.stall_ms, 0.4096, 1e-9);
	replan_diff(hnet, &p, re.net, &re.plan, &d);
	CHECK_U64(d.recomputes_removed, 1);
	CHECK_U64(d.recomputes_added, 0);
	CHECK_U64(d.swaps_added, 2);
	CHECK_U64(d.swaps_removed + d.swaps_moved + d.swaps_kept, 0);
	CHECK_U64(d.n, 3);
	if (d.n == 3) {
		CHECK(d.c[0].what == REPLAN_RECOMPUTE_REMOVED);
		CHECK_STR(d.c[0].name, "c1.fwd");
		CHECK(d.c[1].what == REPLAN_SWAP_ADDED && d.c[1].kind == MP_ACT_SWAP_OUT);
		CHECK_STR(d.c[1].name, "c1.out");
		CHECK(d.c[1].from == NULL);
		CHECK(d.c[2].what == REPLAN_SWAP_ADDED && d.c[2].kind == MP_ACT_SWAP_IN);
		CHECK_STR(d.c[2].to, "big.bwd");
	}
	/* against itself: all kept */
	replan_diff_release(&d);
	replan_diff(re.net, &re.plan, re.net, &re.plan, &d);
	CHECK_U64(d.swaps_kept, 2);
	CHECK_U64(d.n, 0);
	replan_diff_release(&d);
	replan_release(&re);
	plan_release(&p);
	net_free(hnet);
	json_decref(half);
	free(f);
	net_free(net);
	json_decref(root);
}

/* Two jobs merged as memplan plan merges them, with the plan file's "jobs"
 * for replan_run, a request for budget (the first net's device, if it names
 * one) and factors of 1. */
struct two_jobs {
	json_t *file[2], *jobs;
	struct mp_net *net[2], *m;
	struct mp_plan_req req;
	double *f;
};

static void two_jobs_release(struct two_jobs *J)
{
	free(J->f);
	net_free(J->m);
	for (int k = 0; k < 2; k++) {
		net_free(J->net[k]);
		json_decref(J->file[k]);
	}
	json_decref(J->jobs);
}

/* 0, or -1 (a failed check) with everything released. */
static int two_jobs_load(struct two_jobs *J, const char *a, const char *b, double offset_b, uint64_t budget)
{
	const char *path[2] = { a, b };
	const double offsets[2] = { 0, offset_b };
	struct mp_error err = { "" };

	memset(J, 0, sizeof(*J));
	J->jobs = json_array();
	for (int k = 0; k < 2; k++) {
		json_t *x = json_object();

		J->file[k] = mp_json_load_file(path[k], &err);
		J->net[k] = J->file[k] ? net_load_json(J->file[k], &err) : NULL;
		json_object_set(x, "net", J->file[k]);
		json_array_append_new(J->jobs, x);
	}
	CHECK(J->net[0] && J->net[1]);
	if (J->net[0] && J->net[1])
		J->m = jobs_merge((const struct mp_net *const *)J->net, 2, offsets, NULL, NULL, &err);
	CHECK(J->m != NULL);
	if (!J->m) {
		fprintf(stderr, "test_replan: %s\n", err.msg);
		two_jobs_release(J);
		return -1;
	}
	J->req.budget_bytes = budget;
	device_default(&J->req.device);
	if (J->net[0]->has_device)
		J->req.device = J->net[0]->device;
	policy_opts_default(&J->req.popts);
	J->f = malloc(J->m->n_ops * sizeof(*J->f));
	for (uint32_t k = 0; k < J->m->n_ops; k++)
		J->f[k] = 1;
	return 0;
}

/* Two jobs (tests/data/job-a.json and job-b.json, offsets 0 and 1 ms): a
 * factor of 3 on a/a2 (2 -> 6 ms) and 0.5 on b/b2 (3 -> 1.5 ms) reaches
 * each job's own net; the merge keeps the offsets; alone, a takes 2 + 6 + 2
 * = 10 ms and b 1 + 1.5 + 1 = 3.5 ms.  Re-planning again from the corrected
 * net files (verify --adapt's second round) with no correction keeps them. */
static void test_jobs(void)
{
	struct mp_error err = { "" };
	struct two_jobs J;
	struct mp_replan re, re2;

	if (two_jobs_load(&J, "tests/data/job-a.json", "tests/data/job-b.json", 1, 1u << 20) < 0)
		return;
	J.f[net_find_op(J.m, "a/a2")] = 3;
	J.f[net_find_op(J.m, "b/b2")] = 0.5;
	CHECK(replan_run(J.jobs, J.m, &J.req, MP_PLANNER_GREEDY, J.f, 1, &re, &err) == 0);
	if (!re.net) {
		fprintf(stderr, "%s\n", err.msg);
		two_jobs_release(&J);
		return;
	}
	CHECK_U64(re.net->n_jobs, 2);
	CHECK_NEAR(re.net->ops[net_find_op(re.net, "a/a1")].ms, 2, 1e-12);
	CHECK_NEAR(re.net->ops[net_find_op(re.net, "a/a2")].ms, 6, 1e-12);
	CHECK_NEAR(re.net->ops[net_find_op(re.net, "b/b2")].ms, 1.5, 1e-12);
	CHECK_NEAR(re.net->jobs[1].offset_ms, 1, 1e-12);
	CHECK_NEAR(re.net->jobs[0].alone_ms, 10, 1e-9);
	CHECK_NEAR(re.net->jobs[1].alone_ms, 3.5, 1e-9);
	CHECK(re.plan.fits);
	CHECK(json_is_array(re.net_json) && json_array_size(re.net_json) == 2);
	CHECK(!strncmp(json_string_value(json_object_get(json_array_get(re.net_json, 0), "time_source")),
		       "replan (alpha 1)", 16));
	for (uint32_t k = 0; k < J.m->n_ops; k++)
		J.f[k] = 1;
	CHECK(replan_run(re.net_json, re.net, &J.req, MP_PLANNER_GREEDY, J.f, 1, &re2, &err) == 0);
	if (re2.net) {
		CHECK_NEAR(re2.net->ops[net_find_op(re2.net, "a/a2")].ms, 6, 1e-12);
		CHECK_NEAR(re2.net->jobs[1].alone_ms, 3.5, 1e-9);
		replan_release(&re2);
	}
	replan_release(&re);
	two_jobs_release(&J);
}

/* A job that must be planned alone: examples/swap-chain-stall.json beside
 * job b under 10752 B.  The merge's alone time is its liveness run, 11.1 ms;
 * planned alone under the budget it swaps c1.out and stalls 0.4096 ms at
 * least (tests/unit/test_planners.c, known_wait), which is what re-planning
 * records as its alone time. */
static void test_jobs_alone(void)
{
	struct mp_error err = { "" };
	struct two_jobs J;
	struct mp_replan re;

	if (two_jobs_load(&J, "examples/swap-chain-stall.json", "tests/data/job-b.json", 0, 10752) < 0)
		return;
	CHECK_NEAR(J.m->jobs[0].alone_ms, 11.1, 1e-9);
	CHECK(replan_run(J.jobs, J.m, &J.req, MP_PLANNER_GREEDY, J.f, 1, &re, &err) == 0);
	if (re.net) {
		CHECK(re.net->jobs[0].alone_ms >= 11.1 + 0.4096 - 1e-9);
		CHECK_NEAR(re.net->jobs[1].alone_ms, 5, 1e-9);
		replan_release(&re);
	}
	two_jobs_release(&J);
}

int main(void)
{
	test_ewma();
	test_factors_and_net();
	test_report();
	test_swap_for_recompute();
	test_jobs();
	test_jobs_alone();
	return unit_report("test_replan");
}
