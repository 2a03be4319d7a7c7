/*
 * bound (plan/bound.c): the LP relaxation of every schedule that fits, swaps
 * included.  Hand-worked nets give its exact value; on the small examples
 * and seeded random nets, at 7 budgets from the liveness peak down past
 * the layer-wise minimum, it is never above the simulated time of any
 * planner's schedule that fits (its peak within the budget: the bound does
 * not count the arena), says "none fits" only where none does, and is at
 * least the route's compute.  How close it comes to the best plan is
 * printed.
 */
#include <glob.h>
#include <math.h>
#include <stdlib.h>

#include "../../plan/lp.h"
#include "../../plan/planners.h"
#include "unit.h"
#include "fixture.h"
#include "randnet.h"

static uint64_t rng = 5489ull;

static uint32_t rnd(uint32_t n)
{
	return unit_rnd(&rng, n);
}

/* The bound of f's net under f's request (workspace none). */
static void bound_of(struct fixture *f, struct pl_bound *fl)
{
	struct pl_state S;
	struct mp_error err;

	pl_init(&S, f->net, &f->route, &f->req);
	if (plan_bound(&S, 60, fl, &err) < 0) {
		fprintf(stderr, "bound: %s\n", err.msg);
		CHECK(0);
	}
	pl_release(&S);
}

/* bound-swap.json: a must leave while f3 and g3 run and cannot be rebuilt:
 * 8 ms of ops and two 0.5 ms copies that nothing hides.  bound-rebuild.json:
 * the same with f1 a 0.3 ms op that may re-run, cheaper than the copies. */
static void hand_worked(void)
{
	struct fixture f;
	struct pl_bound fl;
	struct mp_plan p;
	struct mp_error err;

	if (load(&f, "tests/data/bound-swap.json") < 0) {
		CHECK(0);
		return;
	}
	f.req.ws_mode = MP_WS_NONE;
	/* the liveness peak (a, b and c at f3): nothing to save */
	f.req.budget_bytes = 12100;
	bound_of(&f, &fl);
	CHECK(fl.status == LP_SOLVE_OPTIMAL);
	CHECK_NEAR(fl.ms, 8.0, 1e-6);
	f.req.budget_bytes = 8100;
	bound_of(&f, &fl);
	CHECK(fl.status == LP_SOLVE_OPTIMAL);
	CHECK_NEAR(fl.ms, 9.0, 1e-6);
	/* and superneurons' plan takes exactly that */
	plan_init(&p);
	CHECK(plan_run(f.net, &f.route, MP_PLANNER_SUPERNEURONS, &f.req, &p, &err) == 0);
	CHECK_U64(p.sim.peak_bytes, 8100);
	CHECK_NEAR(p.sim.time_ms, 9.0, 1e-6);
	plan_release(&p);
	/* below what f3 touches (b and c): nothing fits, and it says where */
	f.req.budget_bytes = 8099;
	bound_of(&f, &fl);
	CHECK(fl.status == LP_SOLVE_INFEASIBLE);
	CHECK(fl.stuck == 2);
	unload(&f);

	if (load(&f, "tests/data/bound-rebuild.json") < 0) {
		CHECK(0);
		return;
	}
	f.req.ws_mode = MP_WS_NONE;
	f.req.budget_bytes = 8100;
	bound_of(&f, &fl);
	CHECK(fl.status == LP_SOLVE_OPTIMAL);
	CHECK_NEAR(fl.ms, 6.6, 1e-6);
	unload(&f);
}

/* A merged plan of several jobs, and a net past the size limit, are
 * refused with a message. */
static void refusals(void)
{
	struct fixture f;
	struct pl_state S;
	struct pl_bound fl;
	struct mp_error err;

	if (load(&f, "examples/resnet152-b32.json") < 0) {
		CHECK(0);
		return;
	}
	f.req.ws_mode = MP_WS_NONE;
	f.req.budget_bytes = 1ull << 30;
	pl_init(&S, f.net, &f.route, &f.req);
	CHECK(plan_bound_size(&S) > BOUND_MAX_COLS);
	CHECK(plan_bound(&S, 60, &fl, &err) < 0);
	CHECK(strstr(err.msg, "too large for its program") != NULL);
	pl_release(&S);
	unload(&f);
}

static bool has_algos(const struct mp_net *net)
{
	for (uint32_t o = 0; o < net->n_ops; o++)
		if (net->ops[o].n_algos)
			return true;
	return false;
}

/* Give every conv of a random net a second algorithm: twice as fast, with
 * a workspace of 1 to 4 times its output (what --workspace dynamic may
 * choose where it fits). */
static void add_algos(json_t *net)
{
	size_t i;
	json_t *l;

	json_array_foreach(json_object_get(net, "layers"), i, l) {
		json_t *t = json_object_get(l, "time");

		if (strcmp(json_string_value(json_object_get(l, "type")), "conv"))
			continue;
		json_object_set_new(l, "algos", json_pack("[{s:s,s:I,s:{s:f,s:f}}]", "name", "fast", "workspace",
			(json_int_t)(json_integer_value(json_object_get(l, "bytes")) * (1 + rnd(4))), "time", "fwd",
			json_real_value(json_object_get(t, "fwd")) / 2, "bwd", json_real_value(json_object_get(t, "bwd")) / 2));
	}
}

static uint32_t n_budgets, n_optimal, n_none, n_tight, n_plans, n_dynamic;
static double gap_sum, gap_worst;

/* Every planner's schedule at budgets from the liveness peak down to below
 * the layer-wise minimum, against the bound. */
static void against_plans(struct fixture *f, const char *what)
{
	struct pl_state S;
	struct mp_error err;
	struct mp_layer_min lmin;
	uint64_t live;
	double route_ms = 0;

	f->req.budget_bytes = UINT64_MAX;
	pl_init(&S, f->net, &f->route, &f->req);
	CHECK(pl_build(&S, &err) == 0);
	live = S.sim.peak_bytes;
	pl_release(&S);
	/* every op at its fastest algorithm (the default's, under none) */
	for (uint32_t o = 0; o < f->net->n_ops; o++) {
		double ms = f->net->ops[o].ms;

		for (uint32_t k = 0; f->req.ws_mode != MP_WS_NONE && k < f->net->ops[o].n_algos; k++)
			if (f->net->ops[o].algos[k].ms < ms && !f->net->ops[o].algos[k].batch)
				ms = f->net->ops[o].algos[k].ms;
		route_ms += ms;
	}
	policy_layer_min(f->net, &f->route, &lmin);
	for (int i = 0; i <= 12; i += 2) {
		uint64_t b = lmin.bytes + (live - lmin.bytes) * (uint64_t)(12 - i) / 12 - (i == 12 ? 1 : 0);
		struct pl_bound fl;
		double best = -1;

		f->req.budget_bytes = b;
		bound_of(f, &fl);
		n_budgets++;
		n_dynamic += f->req.ws_mode == MP_WS_DYNAMIC;
		for (int k = 0; k <= MP_PLANNER_OPTIMAL; k++) {
			struct mp_plan p;

			plan_init(&p);
			if (plan_run(f->net, &f->route, (enum mp_planner)k, &f->req, &p, &err) == 0 &&
			    p.sim.peak_bytes <= b) {
				n_plans++;
				if (fl.status == LP_SOLVE_OPTIMAL && fl.ms > p.sim.time_ms + 1e-6)
					fprintf(stderr, "%s at %llu B: bound %.6f ms above %s's %.6f ms\n", what,
						(unsigned long long)b, fl.ms, mp_planner_name((enum mp_planner)k),
						p.sim.time_ms);
				CHECK(fl.status != LP_SOLVE_INFEASIBLE);
				CHECK(fl.status != LP_SOLVE_OPTIMAL || fl.ms <= p.sim.time_ms + 1e-6);
				if (best < 0 || p.sim.time_ms < best)
					best = p.sim.time_ms;
			}
			plan_release(&p);
		}
		if (fl.status == LP_SOLVE_INFEASIBLE) {
			n_none++;
			continue;
		}
		if (fl.status != LP_SOLVE_OPTIMAL) {
			fprintf(stderr, "%s at %llu B: bound status %d\n", what, (unsigned long long)b, fl.status);
			CHECK(0);
			continue;
		}
		n_optimal++;
		CHECK(fl.ms >= route_ms - 1e-6);
		if (best > 0) {
			double gap = best / fl.ms - 1;

			n_tight += gap <= 0.01;
			gap_sum += gap;
			if (gap > gap_worst)
				gap_worst = gap;
		}
	}
}

int main(void)
{
	static const char *const small[] = {
		"examples/tiny.json", "examples/chain.json", "examples/diamond.json", "examples/residual.json",
		"examples/inplace-relu.json", "examples/workspace.json", "examples/swap-chain.json",
		"examples/swap-wait.json", "examples/swap-chain-stall.json", "tests/data/swap-for-drop.json",
		"tests/data/dtr-chain.json",
	};
	struct mp_error err;
	uint32_t n_best = 0;

	hand_worked();
	refusals();
	for (size_t i = 0; i < sizeof(small) / sizeof(small[0]); i++) {
		struct fixture f;

		if (load(&f, small[i]) < 0) {
			CHECK(0);
			continue;
		}
		f.req.ws_mode = MP_WS_NONE;
		against_plans(&f, small[i]);
		if (has_algos(f.net)) {
			f.req.ws_mode = MP_WS_DYNAMIC;
			against_plans(&f, small[i]);
		}
		unload(&f);
	}
	/* the default link, then one slow enough that copies cost as much as
	 * the ops (the toy link of the swap examples: 10^4 B/ms, 0.1 ms) */
	for (uint32_t i = 0; i < 64; i++) {
		json_t *j = random_net(4 + rnd(6), i % 32 >= 16);
		struct fixture f;
		char what[32];

		if (i % 4 == 1)
			add_algos(j);
		snprintf(what, sizeof(what), "random net %u", i);
		memset(&f, 0, sizeof(f));
		if (!(f.net = net_load_json(j, &err)) || route_build(f.net, &f.route, &err) < 0) {
			fprintf(stderr, "%s: %s\n", what, err.msg);
			CHECK(0);
			net_free(f.net);
			json_decref(j);
			continue;
		}
		device_default(&f.req.device);
		if (i >= 32) {
			f.req.device.h2d_gbps = f.req.device.d2h_gbps = 0.01;
			f.req.device.latency_us = 100;
		}
		policy_opts_default(&f.req.popts);
		f.req.ws_mode = i % 4 == 1 ? MP_WS_DYNAMIC : MP_WS_NONE;
		against_plans(&f, what);
		unload(&f);
		json_decref(j);
	}
	n_best = n_optimal > n_none ? n_optimal : 0;
	printf("lower bound: %u budgets (%u with dynamic workspace), a bound at %u, none fits at %u; %u plans that fit, none faster than it; "
	       "the best plan within 1%% of it at %u, %.1f%% above it on average, at most %.1f%%\n", n_budgets, n_dynamic,
	       n_optimal, n_none, n_plans, n_tight, 100 * gap_sum / (n_best ? n_best : 1), 100 * gap_worst);
	CHECK(n_optimal >= 300);
	CHECK(n_plans >= 1000);
	CHECK(n_dynamic >= 100);
	return unit_report("test_bound");
}
