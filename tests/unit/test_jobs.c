/*
 * Unit tests of analysis/jobs.c (several jobs on one GPU) on two hand-sized
 * jobs, tests/data/job-a.json and job-b.json:
 *
 *   a: a1 -> x (1000 B) -> a2 -> y (2000 B) -> a3 -> z (10 B), 2 ms each
 *   b: b1 -> u (500 B) -> b2 -> v (4000 B) -> b3 -> w (10 B), 1, 3, 1 ms
 *
 * Alone: a's liveness peak is x + y = 3000 B at a2 (6 ms), b's u + v =
 * 4500 B at b2 (5 ms).  Every expected number below is worked out by hand
 * in the comments: the merged order under processor sharing, the global
 * peak, each job's span on the serial engine, the worst offsets; then a
 * plan under a budget below the global peak that fits, and its plan file
 * read back.
 */
#include <stdlib.h>
#include <string.h>

#include "../../analysis/jobs.h"
#include "../../analysis/route.h"
#include "../../plan/plan.h"
#include "../../plan/planfile.h"
#include "unit.h"

static struct mp_net *load(const char *path)
{
	struct mp_error err = { "" };
	struct mp_net *net = net_load_file(path, &err);

	if (!net)
		fprintf(stderr, "%s: %s\n", path, err.msg);
	return net;
}

/* The merged order as op names joined by spaces, into buf. */
static const char *order_names(const struct mp_net *m, char *buf, size_t n)
{
	struct mp_error err = { "" };
	struct mp_route r;
	size_t at = 0;

	buf[0] = '\0';
	if (route_build(m, &r, &err) < 0) {
		snprintf(buf, n, "%s", err.msg);
		return buf;
	}
	for (uint32_t i = 0; i < r.n && at < n; i++)
		at += (size_t)snprintf(buf + at, n - at, "%s%s", i ? " " : "", m->ops[r.op[i]].name);
	route_release(&r);
	return buf;
}

/*
 * Offsets 0 and 1 ms.  t 0-1: a1 alone (1 ms of its 2 left).  t = 1: b1
 * starts; two jobs, each at half speed: a1's 1 ms and b1's 1 ms both end at
 * t = 3.  t = 3: a2 (2 ms) and b2 (3 ms) start; a2 ends at 3 + 2 * 2 = 7,
 * b2 has 3 - 2 = 1 ms left.  t = 7: a3 starts; b2 ends at 7 + 2 = 9, a3 has
 * 1 left.  t = 9: b3 starts; both have 1 ms, they end at 11 (tie: a3
 * first).  Starts: a1 0, b1 1, a2 3, b2 3 (tie: job 0 first), a3 7, b3 9.
 * Liveness of that order: a1 x 1000; b1 x u 1500; a2 x u y 3500, x freed;
 * b2 u y v 6500: the global peak, at step 4.
 */
static void test_order_shifted(const struct mp_net *const *nets)
{
	struct mp_error err = { "" };
	double off[2] = { 0, 1 };
	struct mp_route r;
	struct mp_net *m = jobs_merge(nets, 2, off, NULL, NULL, &err);
	uint64_t peak = 0;
	char buf[256];

	CHECK(m != NULL);
	if (!m)
		return;
	CHECK_STR(order_names(m, buf, sizeof(buf)), "a/a1 b/b1 a/a2 b/b2 a/a3 b/b3");
	CHECK_STR(m->name, "a+b");
	CHECK_STR(m->jobs[0].prefix, "a/");
	CHECK_STR(m->jobs[1].prefix, "b/");
	CHECK_U64(m->jobs[1].op_begin, 3);
	CHECK_U64(m->jobs[1].tensor_begin, 3);
	CHECK_STR(m->tensors[4].name, "b/v");
	CHECK_U64(m->ops[4].in[0], 3);    /* b2 reads b/u, tensor 3 */
	CHECK_U64(m->ops[4].out[0], 4);
	CHECK_U64(m->tensors[4].producer, 4);
	CHECK_NEAR(m->jobs[0].alone_ms, 6.0, 1e-12);
	CHECK_NEAR(m->jobs[1].alone_ms, 5.0, 1e-12);
	CHECK_U64(m->jobs[0].alone_peak, 3000);
	CHECK_U64(m->jobs[1].alone_peak, 4500);
	CHECK(route_build(m, &r, &err) == 0);
	CHECK_U64(r.n_fwd, 6);              /* explicit ops: all forward */
	route_release(&r);
	CHECK(jobs_liveness_peak(m, NULL, &peak, &err) == 0);
	CHECK_U64(peak, 6500);
	CHECK_U64(jobs_of_op(m, 2), 0);
	CHECK_U64(jobs_of_op(m, 3), 1);
	net_free(m);
}

/*
 * Both at 0.  t = 0: a1 (2 ms) and b1 (1 ms) at half speed: b1 ends at 2,
 * a1 has 1 left.  t = 2: b2 (3 ms); a1 ends at 4, b2 has 2 left.  t = 4: a2
 * (2 ms); both need 4 more: they end at 8 (a2 first).  t = 8: a3 and b3.
 * Starts: a1 0, b1 0, b2 2, a2 4, a3 8, b3 8.  Liveness: a1 1000; b1 1500;
 * b2 x u v 5500, u freed; a2 x v y 7000: the global peak, at step 4, above
 * the shifted run's 6500 and below the alone peaks' sum 7500.  On the
 * serial engine (a1 0-2, b1 2-3, b2 3-6, a2 6-8, a3 8-10, b3 10-11) a spans
 * 0-10 and b 2-11: 10 and 9 ms.
 */
static void test_order_together(const struct mp_net *const *nets)
{
	struct mp_error err = { "" };
	double off[2] = { 0, 0 }, ms[2] = { 0, 0 };
	struct mp_net *m = jobs_merge(nets, 2, off, NULL, NULL, &err);
	struct mp_policy_opts po;
	struct mp_schedule s;
	struct mp_route r;
	struct mp_sim sim;
	uint64_t peak = 0;
	char buf[256];

	CHECK(m != NULL);
	if (!m)
		return;
	CHECK_STR(order_names(m, buf, sizeof(buf)), "a/a1 b/b1 b/b2 a/a2 a/a3 b/b3");
	CHECK(jobs_liveness_peak(m, NULL, &peak, &err) == 0);
	CHECK_U64(peak, 7000);
	CHECK(route_build(m, &r, &err) == 0);
	policy_opts_default(&po);
	sched_init(&s);
	policy_build(m, &r, MP_STRAT_LIVENESS, &po, &s, NULL);
	CHECK(sim_run(m, &m->device, &s, &sim, &err) == 0);
	CHECK_NEAR(sim.time_ms, 11.0, 1e-9);
	CHECK_U64(sim.peak_step, 3);
	CHECK_STR(m->ops[sim.steps[sim.peak_step].op].name, "a/a2");
	jobs_times(m, &s, ms);
	CHECK_NEAR(ms[0], 10.0, 1e-9);
	CHECK_NEAR(ms[1], 9.0, 1e-9);
	sim_release(&sim);
	sched_release(&s);
	route_release(&r);
	net_free(m);
}

/*
 * The search: all at 0 (peak 7000); peaks aligned alone (a2 starts at 2 ms,
 * b2 at 1: b starts 1 ms later, offsets 0, 1: peak 6500); aligned again on
 * the shared engine (at 0, 1, a2 and b2 both start at 3: the same offsets,
 * not simulated twice).  Two tried, the worst is 0, 0.
 */
static void test_worst(const struct mp_net *const *nets)
{
	struct mp_error err = { "" };
	double off[2] = { -1, -1 };
	uint32_t tried = 0;

	CHECK(jobs_worst_offsets(nets, 2, NULL, off, &tried, &err) == 0);
	CHECK_U64(tried, 2);
	CHECK_NEAR(off[0], 0, 0);
	CHECK_NEAR(off[1], 0, 0);
}

/* Two copies of one net: j0/ and j1/; at 0, 0 they alternate op by op (both
 * a1 end at 4, both a2 at 8, ...).  Liveness: j0/a1 1000; j1/a1 2000; j0/a2
 * 4000, x0 freed; j1/a2 x1 y0 y1 5000: the peak, below 2 * 3000 since x0 is
 * freed before y1 is made. */
static void test_copies(const struct mp_net *a)
{
	const struct mp_net *nets[2] = { a, a };
	struct mp_error err = { "" };
	double off[2] = { 0, 0 };
	struct mp_net *m = jobs_merge(nets, 2, off, NULL, NULL, &err);
	uint64_t peak = 0;
	char buf[256];

	CHECK(m != NULL);
	if (!m)
		return;
	CHECK_STR(m->jobs[1].prefix, "j1/");
	CHECK_STR(order_names(m, buf, sizeof(buf)), "j0/a1 j1/a1 j0/a2 j1/a2 j0/a3 j1/a3");
	CHECK(jobs_liveness_peak(m, NULL, &peak, &err) == 0);
	CHECK_U64(peak, 5000);
	net_free(m);
}

/*
 * A budget of 5000 B, below the global peak 7000 and above each step's
 * own need (b2: u, v = 4500): greedy fits it (the simulator's peak is at
 * most 5000), and the plan file holds "jobs" and reads back into the same
 * schedule and peak.
 */
static void test_plan_fits(const struct mp_net *const *nets)
{
	struct mp_error err = { "" };
	double off[2] = { 0, 0 };
	struct mp_net *m = jobs_merge(nets, 2, off, NULL, NULL, &err), *back = NULL;
	struct mp_plan_req req, req2;
	struct mp_plan p, p2;
	struct mp_route r;
	json_t *arr, *root;

	CHECK(m != NULL);
	if (!m)
		return;
	memset(&req, 0, sizeof(req));
	req.budget_bytes = 5000;
	device_default(&req.device);
	policy_opts_default(&req.popts);
	CHECK(route_build(m, &r, &err) == 0);
	plan_init(&p);
	CHECK(plan_run(m, &r, MP_PLANNER_GREEDY, &req, &p, &err) == 0);
	CHECK(p.fits);
	CHECK(p.sim.peak_bytes <= 5000);
	arr = json_array();
	json_array_append_new(arr, json_load_file("tests/data/job-a.json", 0, NULL));
	json_array_append_new(arr, json_load_file("tests/data/job-b.json", 0, NULL));
	root = plan_to_json(m, arr, &req, &p);
	CHECK(json_array_size(json_object_get(root, "jobs")) == 2);
	CHECK(json_object_get(root, "net") == NULL);
	plan_init(&p2);
	CHECK(plan_read_json(root, &back, &req2, &p2, &err) == 0);
	if (back) {
		CHECK_U64(p2.sched.n, p.sched.n);
		CHECK_U64(p2.sim.peak_bytes, p.sim.peak_bytes);
		CHECK_U64(back->n_jobs, 2);
		CHECK_STR(back->ops[back->order[2]].name, "b/b2");
	}
	/* a job's offset made negative: refused with its JSON path */
	json_object_set_new(json_array_get(json_object_get(root, "jobs"), 0), "offset_ms", json_real(-1));
	net_free(back);
	back = NULL;
	plan_release(&p2);
	CHECK(plan_read_json(root, &back, &req2, &p2, &err) < 0);
	CHECK_STR(err.msg, "jobs[0].offset_ms: must not be negative, got -1");
	json_decref(root);
	json_decref(arr);
	plan_release(&p2);
	plan_release(&p);
	route_release(&r);
	net_free(m);
}

static void test_errors(const struct mp_net *const *nets)
{
	struct mp_error err = { "" };
	double off[2] = { 0, -2 };

	CHECK(jobs_merge(nets, 2, off, NULL, NULL, &err) == NULL);
	CHECK_STR(err.msg, "job 1: offset -2 ms: expected 0 to 1e9 ms");
	CHECK(jobs_merge(nets, 0, off, NULL, NULL, &err) == NULL);
	CHECK_STR(err.msg, "0 jobs: expected 1 to 64");
}

int main(void)
{
	struct mp_net *a = load("tests/data/job-a.json"), *b = load("tests/data/job-b.json");
	const struct mp_net *nets[2] = { a, b };

	if (!a || !b)
		return 1;
	test_order_shifted(nets);
	test_order_together(nets);
	test_worst(nets);
	test_copies(a);
	test_plan_fits(nets);
	test_errors(nets);
	net_free(a);
	net_free(b);
	return unit_report("test_jobs");
}
