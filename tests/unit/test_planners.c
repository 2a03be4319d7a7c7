/*
 * Planners: plans known by hand, and properties on every example.
 *
 * examples/swap-chain.json (worked in its description): liveness peaks at
 * 14336 B in big.fwd (params 1024 + c1.out 4096 + c2.out 1024 + big.out
 * 8192); under 10752 B the one plan is to swap c1.out out after c2.fwd (copy
 * 0.1 + 4096 / 10^4 = 0.5096 ms, released at 2.5096 ms, before big.fwd
 * allocates at 3 ms) and back during m.bwd (9 to 9.5096 ms, before c2.bwd
 * at 10 ms): peak 10752 at c2.bwd (params 1024 + c1.out 4096 + c2.dout 1024
 * + c1.dout 4096 + c2 grad 512), time 12 ms, no stall; every size is a
 * multiple of 256 B, so the arena is exactly 10752 B too.
 * swap-chain-stall.json makes m.bwd 0.1 ms: the swap-in can start no
 * earlier than m.bwd (earlier it lands on big.bwd's 14336) and ends 0.4096
 * ms after c2.bwd could start: time 11.1 + 0.4096 ms.
 */
#include <glob.h>
#include <stdlib.h>

#include "../../plan/plan.h"
#include "unit.h"

struct fixture {
	struct mp_net *net;
	struct mp_route route;
	struct mp_plan_req req;
};

static int load(struct fixture *f, const char *path)
{
	struct mp_error err;

	memset(f, 0, sizeof(*f));
	f->net = net_load_file(path, &err);
	if (!f->net) {
		fprintf(stderr, "%s: %s\n", path, err.msg);
		return -1;
	}
	if (route_build(f->net, &f->route, &err) < 0) {
		fprintf(stderr, "%s: %s\n", path, err.msg);
		net_free(f->net);
		return -1;
	}
	if (f->net->has_device)
		f->req.device = f->net->device;
	else
		device_default(&f->req.device);
	f->req.ws_mode = MP_WS_DYNAMIC;
	policy_opts_default(&f->req.popts);
	return 0;
}

static void unload(struct fixture *f)
{
	route_release(&f->route);
	net_free(f->net);
}

static void known(const char *path, double time_ms, double stall_ms)
{
	/* the planners that swap; checkpointing alone cannot reach 10752 B */
	static const enum mp_planner swappers[] = {
		MP_PLANNER_SUPERNEURONS, MP_PLANNER_TFSWAP, MP_PLANNER_TENSILE, MP_PLANNER_GREEDY,
	};
	struct fixture f;
	struct mp_error err;

	if (load(&f, path) < 0) {
		CHECK(0);
		return;
	}
	f.req.budget_bytes = 10752;
	for (unsigned i = 0; i < sizeof(swappers) / sizeof(swappers[0]); i++) {
		enum mp_planner k = swappers[i];
		struct mp_plan p;

		plan_init(&p);
		CHECK(plan_run(f.net, &f.route, (enum mp_planner)k, &f.req, &p, &err) == 0);
		CHECK(p.fits);
		CHECK_U64(p.sim.peak_bytes, 10752);
		CHECK_U64(p.arena_bytes, 10752);
		CHECK_U64(p.sim.peak_step + 1, 10);
		CHECK_U64(p.sim.d2h_bytes, 4096);
		CHECK_U64(p.sim.h2d_bytes, 4096);
		CHECK_U64(p.sim.n_recompute, 0);
		CHECK_NEAR(p.sim.time_ms, time_ms, 1e-9);
		CHECK_NEAR(p.sim.stall_ms, stall_ms, 1e-9);
		plan_release(&p);
	}
	/* with room to spare every planner leaves the net alone */
	f.req.budget_bytes = 14336 + 256; /* the liveness peak, and room for alignment */
	for (int k = 0; k < MP_PLANNER__COUNT; k++) {
		struct mp_plan p;

		plan_init(&p);
		CHECK(plan_run(f.net, &f.route, (enum mp_planner)k, &f.req, &p, &err) == 0);
		CHECK(p.fits);
		CHECK_U64(p.sim.n_swap_out, 0);
		CHECK_U64(p.sim.n_recompute, 0);
		CHECK_NEAR(p.overhead, 0, 1e-12);
		plan_release(&p);
	}
	unload(&f);
}

/* examples/swap-wait.json (worked in its description): the swap-out of
 * c1.out cannot end before big.fwd, so the plan waits for it: tf-swap and
 * superneurons find exactly that plan (stall 0.4096 ms, time 11.5096 ms);
 * tensile and greedy fit by waiting too, with swaps of their own. */
static void known_wait(void)
{
	static const enum mp_planner exact[] = { MP_PLANNER_TFSWAP, MP_PLANNER_SUPERNEURONS };
	static const enum mp_planner fit[] = { MP_PLANNER_TENSILE, MP_PLANNER_GREEDY };
	struct fixture f;
	struct mp_error err;

	if (load(&f, "examples/swap-wait.json") < 0) {
		CHECK(0);
		return;
	}
	f.req.budget_bytes = 10752;
	for (unsigned i = 0; i < sizeof(exact) / sizeof(exact[0]); i++) {
		struct mp_plan p;
		uint32_t waits_out = 0;

		plan_init(&p);
		CHECK(plan_run(f.net, &f.route, exact[i], &f.req, &p, &err) == 0);
		CHECK(p.fits);
		CHECK_U64(p.sim.peak_bytes, 10752);
		CHECK_U64(p.sim.peak_step + 1, 10);
		CHECK_U64(p.sim.d2h_bytes, 4096);
		CHECK_NEAR(p.sim.stall_ms, 0.4096, 1e-9);
		CHECK_NEAR(p.sim.time_ms, 11.5096, 1e-9);
		/* one wait on c1.out while it is swapped out, right before
		 * big.fwd's allocation (m.fwd runs under the copy) */
		{
			int32_t t = net_find_tensor(f.net, "c1.out"), big = net_find_tensor(f.net, "big.out");
			bool out = false;

			for (uint32_t k = 0; k + 1 < p.sched.n; k++) {
				const struct mp_action *a = &p.sched.a[k];

				if (a->tensor == t && a->kind == MP_ACT_SWAP_OUT)
					out = true;
				else if (a->tensor == t && a->kind == MP_ACT_SWAP_IN)
					out = false;
				else if (a->tensor == t && a->kind == MP_ACT_WAIT && out) {
					waits_out++;
					CHECK(p.sched.a[k + 1].kind == MP_ACT_ALLOC && p.sched.a[k + 1].tensor == big);
				}
			}
		}
		CHECK_U64(waits_out, 1);
		plan_release(&p);
	}
	for (unsigned i = 0; i < sizeof(fit) / sizeof(fit[0]); i++) {
		struct mp_plan p;

		plan_init(&p);
		CHECK(plan_run(f.net, &f.route, fit[i], &f.req, &p, &err) == 0);
		CHECK(p.fits);
		CHECK(p.sim.stall_ms >= 0.4096 - 1e-9);
		plan_release(&p);
	}
	unload(&f);
}

/* Every example at 90, 70, 50 and 30% of its liveness peak: a plan that says
 * it fits does, in the simulator; the arena holds its allocations and is
 * never below the max-live bound. */
static void budgets(const char *path)
{
	static const int pct[] = { 90, 70, 50, 30 };
	struct fixture f;
	struct mp_schedule s;
	struct mp_sim live;
	struct mp_error err;

	if (load(&f, path) < 0) {
		CHECK(0);
		return;
	}
	sched_init(&s);
	policy_build(f.net, &f.route, MP_STRAT_LIVENESS, &f.req.popts, &s, NULL);
	CHECK(sim_run(f.net, &f.req.device, &s, &live, &err) == 0);
	sched_release(&s);
	printf("%-32s", path);
	for (unsigned b = 0; b < sizeof(pct) / sizeof(pct[0]); b++) {
		f.req.budget_bytes = live.peak_bytes / 100 * pct[b];
		for (int k = 0; k < MP_PLANNER__COUNT; k++) {
			struct mp_plan p;

			plan_init(&p);
			CHECK(plan_run(f.net, &f.route, (enum mp_planner)k, &f.req, &p, &err) == 0);
			CHECK(p.fits == (p.sim.peak_bytes <= f.req.budget_bytes &&
					 p.arena_bytes <= f.req.budget_bytes));
			CHECK(p.sim.time_ms + 1e-9 >= p.sim.compute_ms);
			plan_assign_arena(f.net, &p);
			CHECK(p.arena_bytes >= p.max_live_bytes);
			CHECK_U64(p.max_live_bytes, p.sim.peak_bytes);
			printf(" %3d%%:%c%.3f", pct[b], p.fits ? '+' : '-',
			       p.max_live_bytes ? (double)p.arena_bytes / (double)p.max_live_bytes : 0.0);
			plan_release(&p);
		}
	}
	printf("\n");
	sim_release(&live);
	unload(&f);
}

/* Regression: superneurons on SuperNeurons' AlexNet at 1200M re-ran an
 * in-place relu on a freshly allocated buffer (its producer's rebuild had
 * been freed); the simulator now refuses reads of unwritten tensors, so
 * planning must succeed and every budget's plan must simulate. */
static void inplace_rebuild(void)
{
	static const uint64_t mib[] = { 1200, 1500, 1700 };
	struct fixture f;
	struct mp_error err;

	if (load(&f, "examples/alexnet.json") < 0) {
		CHECK(0);
		return;
	}
	for (unsigned i = 0; i < sizeof(mib) / sizeof(mib[0]); i++) {
		struct mp_plan p;
		int rc;

		f.req.budget_bytes = mib[i] << 20;
		plan_init(&p);
		rc = plan_run(f.net, &f.route, MP_PLANNER_SUPERNEURONS, &f.req, &p, &err);
		if (rc < 0)
			fprintf(stderr, "alexnet %llu MiB: %s\n", (unsigned long long)mib[i], err.msg);
		CHECK(rc == 0);
		plan_release(&p);
	}
	unload(&f);
}

int main(void)
{
	glob_t g;

	inplace_rebuild();
	known("examples/swap-chain.json", 12.0, 0.0);
	known("examples/swap-chain-stall.json", 11.5096, 0.4096);
	known_wait();
	printf("planners at 90/70/50/30%% of the liveness peak (+ fits, - cannot), arena / max-live:\n");
	if (glob("examples/*.json", 0, NULL, &g) == 0) {
		for (size_t i = 0; i < g.gl_pathc; i++)
			budgets(g.gl_pathv[i]);
		globfree(&g);
	}
	return unit_report("test_planners");
}
