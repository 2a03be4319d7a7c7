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
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../plan/arena.h"
#include "../../plan/planners.h"
#include "unit.h"
#include "fixture.h"

static unsigned placements_compared;

/* load, planning with the default algorithms (--workspace none); a failure
 * is counted.  0, or -1. */
static int load_none(struct fixture *f, const char *path)
{
	if (load(f, path) < 0) {
		CHECK(0);
		return -1;
	}
	f->req.ws_mode = MP_WS_NONE;
	return 0;
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

/* U-Net's liveness schedule in p, simulated; -1 (a failed check) if it
 * does not load. */
static int unet_liveness(struct fixture *f, struct mp_plan *p)
{
	struct mp_error err;

	if (load(f, "examples/unet.json") < 0) {
		CHECK(0);
		return -1;
	}
	plan_init(p);
	policy_build(f->net, &f->route, MP_STRAT_LIVENESS, &f->req.popts, &p->sched, NULL);
	CHECK(sim_run(f->net, &f->req.device, &p->sched, &p->sim, &err) == 0);
	return 0;
}

/* The first allocation of over 64 MiB in s (to grow by a byte: another
 * schedule), or UINT32_MAX. */
static uint32_t big_alloc(const struct mp_schedule *s)
{
	for (uint32_t i = 0; i < s->n; i++)
		if (s->a[i].kind == MP_ACT_ALLOC && s->a[i].bytes > (64u << 20))
			return i;
	return UINT32_MAX;
}

/* One placement of p for the budget peak + extra: whether it searched
 * (1), was answered from a kept search (0), or neither (-1); its offsets
 * are checked. */
static int placed(const struct mp_net *net, struct mp_plan *p, uint64_t extra)
{
	struct plan_arena_stats was = plan_arena_stats;
	struct mp_error err;

	plan_assign_arena_within(net, p, p->sim.peak_bytes + extra);
	CHECK(plan_check_arena(net, p, &err) == 0);
	if (plan_arena_stats.searches == was.searches + 1 && plan_arena_stats.kept_hits == was.kept_hits)
		return 1;
	if (plan_arena_stats.searches == was.searches && plan_arena_stats.kept_hits == was.kept_hits + 1)
		return 0;
	return -1;
}

/* plan_assign_arena_within keeps its searches: U-Net's liveness schedule
 * placed for a budget of its peak (the four orders miss it, so the search
 * runs), placed again, gets the offsets of the first placement to the byte
 * without searching; emptied (plan_arena_forget), the search runs again
 * and gives them too; for another budget, or another schedule (one byte
 * more in one allocation), it is a search of its own. */
static void searched_kept(void)
{
	struct fixture f;
	struct mp_plan p;
	uint64_t *first, bytes;
	uint32_t grown;

	if (unet_liveness(&f, &p) < 0)
		return;
	plan_arena_forget();
	CHECK(placed(f.net, &p, 0) == 1);
	/* (the search stopped short of the peak: what is kept is its best, not
	 * the lower bound) */
	CHECK(p.arena_bytes > p.sim.peak_bytes);
	bytes = p.arena_bytes;
	first = p.offset;
	p.offset = NULL;
	for (int forget = 0; forget < 2; forget++) {
		if (forget)
			plan_arena_forget();
		CHECK(placed(f.net, &p, 0) == forget);
		CHECK_U64(p.arena_bytes, bytes);
		CHECK(memcmp(p.offset, first, p.sched.n * sizeof(*first)) == 0);
	}
	CHECK(placed(f.net, &p, 1u << 20) == 1);
	grown = big_alloc(&p.sched);
	CHECK(grown != UINT32_MAX);
	if (grown != UINT32_MAX)
		p.sched.a[grown].bytes++;
	CHECK(placed(f.net, &p, 0) == 1);
	free(first);
	plan_release(&p);
	unload(&f);
}

/* The kept searches' limits, on U-Net's liveness schedule placed for
 * budgets 4 KiB apart (each a search of its own):
 * - two kept at most: the third search drops the first, and the first
 *   searched again drops the second, so the third is still kept;
 * - bytes for four and a half searches: the fifth drops the first, and
 *   the first searched again drops the second, so the others are still
 *   kept; bytes a little under four searches (one is over a quarter):
 *   nothing is kept;
 * - every hash the same: a schedule one byte apart is searched on its own,
 *   and each is answered with its own offsets. */
static void searched_limits(void)
{
	struct fixture f;
	struct mp_plan p;
	uint64_t *first, arena;
	size_t need;
	uint32_t grown;

	if (unet_liveness(&f, &p) < 0)
		return;

	plan_arena_keep_at_most(2, 0, UINT64_MAX);
	for (uint64_t k = 0; k < 3; k++)
		CHECK(placed(f.net, &p, k * 4096) == 1);
	CHECK(placed(f.net, &p, 0) == 1);
	CHECK(placed(f.net, &p, 2 * 4096) == 0);
	CHECK(placed(f.net, &p, 1 * 4096) == 1);

	plan_arena_keep_at_most(0, 0, UINT64_MAX);
	CHECK(placed(f.net, &p, 0) == 1);
	need = plan_arena_stats.kept_bytes;
	CHECK(need > 0);
	plan_arena_keep_at_most(0, 4 * need + need / 2, UINT64_MAX);
	for (uint64_t k = 0; k < 5; k++)
		CHECK(placed(f.net, &p, k * 4096) == 1);
	CHECK_U64(plan_arena_stats.kept_bytes, 4 * need);
	CHECK(placed(f.net, &p, 0) == 1);
	for (uint64_t k = 2; k < 5; k++)
		CHECK(placed(f.net, &p, k * 4096) == 0);
	CHECK(placed(f.net, &p, 1 * 4096) == 1);
	plan_arena_keep_at_most(0, 4 * need - 4, UINT64_MAX);
	CHECK(placed(f.net, &p, 0) == 1);
	CHECK(placed(f.net, &p, 0) == 1);
	CHECK_U64(plan_arena_stats.kept_bytes, 0);

	plan_arena_keep_at_most(0, 0, 0);
	CHECK(placed(f.net, &p, 0) == 1);
	arena = p.arena_bytes;
	first = p.offset;
	p.offset = NULL;
	grown = big_alloc(&p.sched);
	CHECK(grown != UINT32_MAX);
	if (grown != UINT32_MAX) {
		uint64_t *second;

		p.sched.a[grown].bytes++;
		CHECK(placed(f.net, &p, 0) == 1);
		second = p.offset;
		p.offset = NULL;
		CHECK(placed(f.net, &p, 0) == 0);
		CHECK(memcmp(p.offset, second, p.sched.n * sizeof(*second)) == 0);
		p.sched.a[grown].bytes--;
		CHECK(placed(f.net, &p, 0) == 0);
		CHECK_U64(p.arena_bytes, arena);
		CHECK(memcmp(p.offset, first, p.sched.n * sizeof(*first)) == 0);
		free(second);
	}
	plan_arena_keep_at_most(0, 0, UINT64_MAX);
	free(first);
	plan_release(&p);
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

/* Whether [a, b) and [c, d) share an instant, by enumeration. */
static bool share(uint32_t a, uint32_t b, uint32_t c, uint32_t d)
{
	for (uint32_t t = a; t < b; t++)
		if (c <= t && t < d)
			return true;
	return false;
}

/* The scan's time mask against the definition: random lifetimes over 9
 * event ranks, first lifetimes not empty, second ones empty ([0, 0)) or not,
 * 1 to 64 placed at once (the four-wide loops and their tail), with and
 * without second lifetimes among the placed (without: theirs are junk). */
static void meets_mask_defined(void)
{
	uint32_t ps[64], pe[64], ps2[64], pe2[64], x = 12345;
	unsigned bad = 0, cases = 0;

	/* by hand: [2,5) meets [4,6) but not [5,6); its second [7,9) meets [8,9) */
	memset(ps2, 0, sizeof(ps2));
	memset(pe2, 0, sizeof(pe2));
	ps[0] = 4, pe[0] = 6;
	ps[1] = 5, pe[1] = 6;
	ps[2] = 8, pe[2] = 9;
	CHECK_U64(plan_arena_meets_mask(ps, pe, ps2, pe2, false, 3, 2, 5, 0, 0), 1);
	CHECK_U64(plan_arena_meets_mask(ps, pe, ps2, pe2, false, 3, 2, 5, 7, 9), 5);
	/* a placed second lifetime [0,1) meets [0,2): [5,6) alone does not */
	ps2[1] = 0, pe2[1] = 1;
	CHECK_U64(plan_arena_meets_mask(ps, pe, ps2, pe2, true, 2, 0, 2, 0, 0), 2);
	for (uint32_t round = 0; round < 4000; round++) {
		uint32_t cnt = 1 + round % 64, r[4], s, e, s2, e2;
		bool any2 = round & 64;
		uint64_t want = 0, got;

		for (int q = 0; q < 4; q++) {
			x = x * 1103515245u + 12345u;
			r[q] = (x >> 16) % 9;
		}
		s = r[0] < r[1] ? r[0] : r[1];
		e = r[0] < r[1] ? r[1] : r[0] + 1;
		s2 = r[2] < r[3] ? r[2] : 0;
		e2 = r[2] < r[3] ? r[3] : 0;
		for (uint32_t i = 0; i < cnt; i++) {
			uint32_t v[4];

			for (int q = 0; q < 4; q++) {
				x = x * 1103515245u + 12345u;
				v[q] = (x >> 16) % 9;
			}
			ps[i] = v[0] < v[1] ? v[0] : v[1];
			pe[i] = v[0] < v[1] ? v[1] : v[0] + 1;
			ps2[i] = v[2] < v[3] ? v[2] : 0;
			pe2[i] = v[2] < v[3] ? v[3] : 0;
			/* without any2 the second lifetimes are junk, not read */
			if (share(ps[i], pe[i], s, e) || share(ps[i], pe[i], s2, e2) ||
			    (any2 && (share(ps2[i], pe2[i], s, e) || share(ps2[i], pe2[i], s2, e2))))
				want |= (uint64_t)1 << i;
		}
		got = plan_arena_meets_mask(ps, pe, ps2, pe2, any2, cnt, s, e, s2, e2);
		bad += got != want;
		cases += cnt;
	}
	CHECK(bad == 0);
	printf("arena time masks against the definition: %u pairs in 4000 masks, %u masks wrong\n", cases, bad);
}

/* The arena's two placements, the sorted scan and the segment tree, give the
 * same offsets to the byte. */
static void same_placements(const struct mp_net *net, const struct mp_plan *p)
{
	struct mp_plan q = *p;
	uint64_t *scan, bytes;

	q.offset = NULL;
	plan_arena_placer = 1;
	plan_assign_arena(net, &q);
	scan = q.offset;
	bytes = q.arena_bytes;
	q.offset = NULL;
	plan_arena_placer = -1;
	plan_assign_arena(net, &q);
	plan_arena_placer = 0;
	CHECK_U64(q.arena_bytes, bytes);
	CHECK(memcmp(q.offset, scan, p->sched.n * sizeof(*scan)) == 0);
	placements_compared++;
	free(scan);
	free(q.offset);
}

/* Load path into f and its liveness peak into *peak; -1 (a failed check)
 * when it does not load. */
static int load_live(struct fixture *f, const char *path, uint64_t *peak)
{
	struct mp_schedule s;
	struct mp_sim live;
	struct mp_error err;

	if (load(f, path) < 0) {
		CHECK(0);
		return -1;
	}
	sched_init(&s);
	policy_build(f->net, &f->route, MP_STRAT_LIVENESS, &f->req.popts, &s, NULL);
	CHECK(sim_run(f->net, &f->req.device, &s, &live, &err) == 0);
	sched_release(&s);
	*peak = live.peak_bytes;
	sim_release(&live);
	return 0;
}

/* Greedy weighs its plans by the time plan_run's last steps leave them and,
 * where that was lower than simulated, plans again weighing raw
 * (plan/planner.c, plan_run): its plan p is never beaten by the plan
 * weighed raw alone.  settled_faster counts the plans faster than it.
 * (At 70 and 50% only: under the sanitizers each check is a greedy plan
 * more.) */
static unsigned settled_faster, settled_compared;

static void no_slower_than_raw(struct fixture *f, const struct mp_plan *p)
{
	struct mp_error err;
	struct mp_plan q;

	plan_init(&q);
	f->req.weigh_raw = true;
	CHECK(plan_run(f->net, &f->route, MP_PLANNER_GREEDY, &f->req, &q, &err) == 0);
	f->req.weigh_raw = false;
	CHECK(!q.fits || (p->fits && p->sim.time_ms <= q.sim.time_ms + 1e-9));
	settled_compared++;
	settled_faster += q.fits && p->sim.time_ms < q.sim.time_ms - 1e-9;
	plan_release(&q);
}

/* Every example at 90, 70, 50 and 30% of its liveness peak: a plan that says
 * it fits does, in the simulator; the arena holds its allocations and is
 * never below the max-live bound. */
static void budgets(const char *path)
{
	static const int pct[] = { 90, 70, 50, 30 };
	struct fixture f;
	struct mp_error err;
	uint64_t live;

	if (load_live(&f, path, &live) < 0)
		return;
	printf("%-32s", path);
	for (unsigned b = 0; b < sizeof(pct) / sizeof(pct[0]); b++) {
		f.req.budget_bytes = live / 100 * pct[b];
		for (int k = 0; k < MP_PLANNER__COUNT; k++) {
			struct mp_plan p;

			plan_init(&p);
			CHECK(plan_run(f.net, &f.route, (enum mp_planner)k, &f.req, &p, &err) == 0);
			CHECK(p.fits == (p.sim.peak_bytes <= f.req.budget_bytes &&
					 p.arena_bytes <= f.req.budget_bytes));
			CHECK(p.sim.time_ms + 1e-9 >= p.sim.compute_ms);
			/* plan_run's offsets (searched for, where the orders did
			 * not fit) hold */
			CHECK(plan_check_arena(f.net, &p, &err) == 0);
			CHECK(p.arena_bytes >= p.max_live_bytes);
			if (pct[b] == 70)
				same_placements(f.net, &p);
			CHECK_U64(p.max_live_bytes, p.sim.peak_bytes);
			if (k == MP_PLANNER_GREEDY && (pct[b] == 70 || pct[b] == 50))
				no_slower_than_raw(&f, &p);
			printf(" %3d%%:%c%.3f", pct[b], p.fits ? '+' : '-',
			       p.max_live_bytes ? (double)p.arena_bytes / (double)p.max_live_bytes : 0.0);
			plan_release(&p);
		}
	}
	printf("\n");
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

/*
 * greedy's online pass (DTR) on tests/data/dtr-chain.json at 7680 B:
 * liveness peaks at 8448 B in d.bwd (2048 B of parameters and momentum;
 * data, a, b, c, c.dout, d.dout at 1024 B; d's gradient 256).  Outside the
 * 2048 persistent bytes the pass has 5632.  Forward fits (5376 B after
 * loss.fwd); loss.bwd needs 1024 more for d.dout, so one tensor goes.
 * Candidates: a, b, c (d is read, data cannot re-run).  Clock at loss.bwd
 * 56.2 ms; last touched: a 54.1 (by b.fwd), b 55.1, c 56.1; re-run cost a
 * 50, b 4, c 1 ms.  h = cost / (bytes x staleness): a 50 / 2.1, b 4 / 1.1,
 * c 1 / 0.1 (over 1024 B): b is the smallest and goes.  d.bwd then holds
 * 5376 B; c.bwd reads b: b.fwd re-runs from a (resident) right before it,
 * and c.bwd holds data, a, b, c.dout, b.dout and two gradients: 5632 B, the
 * peak, 7680 with the persistent bytes.  Time: 64.34 + 4 ms.
 */
static void dtr_by_hand(void)
{
	struct fixture f;
	struct mp_error err;
	struct pl_state S;
	struct mp_plan p;
	int32_t b_fwd, c_bwd;
	uint32_t re = 0, at = UINT32_MAX, at_c = UINT32_MAX;

	if (load(&f, "tests/data/dtr-chain.json") < 0) {
		CHECK(0);
		return;
	}
	b_fwd = net_find_op(f.net, "b.fwd");
	c_bwd = net_find_op(f.net, "c.bwd");
	f.req.budget_bytes = 7680;
	f.req.ws_mode = MP_WS_NONE;
	plan_init(&p);
	pl_init(&S, f.net, &f.route, &f.req);
	CHECK(plan_greedy_dtr(&S, &p, &err) == 0);
	CHECK(S.seq != NULL);
	for (uint32_t i = 0; S.seq && i < S.n_seq; i++) {
		if (S.seq[i].recompute) {
			re++;
			at = i;
			CHECK(S.seq[i].op == b_fwd);
		}
		if (S.seq[i].op == c_bwd)
			at_c = i;
	}
	CHECK_U64(re, 1);
	CHECK_U64(at + 1, at_c);
	CHECK_U64(S.sim.peak_bytes, 7680);
	CHECK_NEAR(S.sim.recompute_ms, 4.0, 1e-9);
	CHECK_NEAR(S.sim.time_ms, 64.34 + 4.0, 1e-9);
	/* greedy keeps the best of its passes: no slower (a swap hides here) */
	pl_release(&S);
	CHECK(plan_run(f.net, &f.route, MP_PLANNER_GREEDY, &f.req, &p, &err) == 0);
	CHECK(p.fits);
	CHECK(p.sim.time_ms <= 64.34 + 4.0 + 1e-9);
	plan_release(&p);
	unload(&f);
}

/* tests/data/dtr-again.json at 7168 B: at b1 the online pass needs 1024 B
 * and y is the only tensor it might evict, but f2, which rebuilds y, reads
 * x, which b1 rewrites: a re-run in backward would read the new x.  So y
 * stays, nothing is re-run, and the pass misses the budget (liveness peaks at
 * 8192 B) rather than rebuild y wrong. */
static void dtr_rewritten_input(void)
{
	struct fixture f;
	struct mp_error err;
	struct pl_state S;
	struct mp_plan p;

	if (load(&f, "tests/data/dtr-again.json") < 0) {
		CHECK(0);
		return;
	}
	f.req.budget_bytes = 7168;
	f.req.ws_mode = MP_WS_NONE;
	plan_init(&p);
	pl_init(&S, f.net, &f.route, &f.req);
	CHECK(plan_greedy_dtr(&S, &p, &err) == 0);
	for (uint32_t i = 0; S.seq && i < S.n_seq; i++)
		CHECK(!S.seq[i].recompute);
	CHECK_U64(S.sim.n_recompute, 0);
	CHECK(S.sim.peak_bytes > 7168);
	pl_release(&S);
	plan_release(&p);
	unload(&f);
}

/* tests/data/floor-then-swap.json at 31732 B (75% of liveness): recomputation
 * alone cannot get under it (conv2's backward holds its input, its output's
 * gradient and its input's gradient beside the fc layer's 8 KB of weight and
 * momentum).  Weighed raw (by simulated time, as greedy weighed before
 * plan_run's second weighing), greedy's pass that swaps on top of the
 * recomputing pass's drops fits, with both, and faster than superneurons
 * and tf-swap (15.74 ms); tensile's plan, 17.68 ms, becomes 15.60 ms once
 * its late swap-ins are issued earlier (plan_hoist_swapins: compute stalled
 * 3.38 -> 1.30 ms): faster than that plan, which keeps its 1.14 ms of stall
 * (no move of its swap-ins was kept: its note does not say so).  Weighed by
 * the time after plan_run's last steps (plan_run's default), greedy's start
 * with the optimizer state on the host wins: 14 tensors swapped, nothing
 * re-run, 14.7 ms once its late swap-ins are issued earlier (1.3 ms of
 * stall left), faster than every other planner. */
static void floor_then_swap(void)
{
	struct fixture f;
	struct mp_error err;
	struct pl_state S;
	struct mp_plan p, q;

	if (load(&f, "tests/data/floor-then-swap.json") < 0) {
		CHECK(0);
		return;
	}
	f.req.budget_bytes = 31732;
	f.req.ws_mode = MP_WS_NONE;
	plan_init(&p);
	pl_init(&S, f.net, &f.route, &f.req);
	CHECK(plan_greedy_recompute(&S, &p, &err) == 0);
	CHECK(S.sim.peak_bytes > f.req.budget_bytes);
	pl_release(&S);
	plan_init(&q);
	f.req.weigh_raw = true;
	CHECK(plan_run(f.net, &f.route, MP_PLANNER_GREEDY, &f.req, &q, &err) == 0);
	f.req.weigh_raw = false;
	CHECK(q.fits);
	CHECK(q.sim.n_recompute > 0);
	CHECK(q.sim.d2h_bytes > 0);
	CHECK_NEAR(q.sim.time_ms, 15.74, 1e-9);
	CHECK_NEAR(q.sim.stall_ms, 1.14, 1e-9);
	CHECK(strstr(q.note, " (late swap-ins issued earlier)") == NULL);
	plan_release(&q);
	CHECK(plan_run(f.net, &f.route, MP_PLANNER_GREEDY, &f.req, &p, &err) == 0);
	CHECK(p.fits);
	CHECK_U64(p.sim.n_recompute, 0);
	CHECK(p.sim.d2h_bytes > 0);
	CHECK_NEAR(p.sim.time_ms, 14.7, 1e-9);
	CHECK_NEAR(p.sim.stall_ms, 1.3, 1e-9);
	CHECK(strstr(p.note, "; optimizer state on the host from the start (late swap-ins issued earlier)") != NULL);
	for (int k = MP_PLANNER_SUPERNEURONS; k <= MP_PLANNER_TENSILE; k++) {
		plan_init(&q);
		CHECK(plan_run(f.net, &f.route, (enum mp_planner)k, &f.req, &q, &err) == 0);
		if (k == MP_PLANNER_TENSILE) {
			CHECK(q.fits);
			CHECK_NEAR(q.sim.time_ms, 15.60, 1e-9);
			CHECK(strstr(q.note, " (late swap-ins issued earlier)") != NULL);
		}
		CHECK(!q.fits || p.sim.time_ms < q.sim.time_ms);
		plan_release(&q);
	}
	plan_release(&p);
	unload(&f);
}

/*
 * tests/data/swap-for-drop.json at 7680 B: liveness peaks at 8448 B in
 * d.bwd (2048 B of parameters and momentum; data, a, b, c, c.dout, d.dout
 * at 1024 B; d's gradient 256), 43.34 ms.  The recomputing pass drops a,
 * the cheapest rebuild (5 ms; b and c 10): 48.34 ms, and 7424 B at d.bwd
 * without a.  a's swap-out after b.fwd (15.1 ms) takes 0.1 + 1024 / 10^4 =
 * 0.2024 ms, done long before d.bwd (35.3 ms), and its swap-in, just in
 * time before b.bwd, is issued at c.bwd (2 ms) and hides there: swapping a
 * instead of dropping it costs nothing, 43.34 ms, and c.bwd holds a again
 * as under liveness: data, a, b, c.dout, b.dout, two gradients, 7680 B.
 */
static void swap_for_drop(void)
{
	struct fixture f;
	struct mp_error err;
	struct pl_state S;
	struct mp_plan p;
	int32_t a;

	if (load(&f, "tests/data/swap-for-drop.json") < 0) {
		CHECK(0);
		return;
	}
	a = net_find_tensor(f.net, "a.out");
	f.req.budget_bytes = 7680;
	f.req.ws_mode = MP_WS_NONE;
	for (int swaps = 0; swaps < 2; swaps++) {
		plan_init(&p);
		pl_init(&S, f.net, &f.route, &f.req);
		CHECK((swaps ? plan_greedy_swaps(&S, &p, &err) : plan_greedy_recompute(&S, &p, &err)) == 0);
		CHECK_U64(S.sim.peak_bytes, swaps ? 7680 : 7424);
		CHECK_U64(S.sim.peak_step + 1, swaps ? 9 : 8); /* c.bwd, d.bwd */
		CHECK_NEAR(S.sim.time_ms, swaps ? 43.34 : 48.34, 1e-9);
		CHECK_NEAR(S.sim.stall_ms, 0, 1e-12);
		CHECK_NEAR(S.sim.recompute_ms, swaps ? 0 : 5.0, 1e-9);
		CHECK_U64(S.sim.d2h_bytes, swaps ? 1024 : 0);
		CHECK_U64(S.drop[a], !swaps);
		CHECK_U64(pl_swapped(&S, a), swaps);
		pl_release(&S);
		plan_release(&p);
	}
	unload(&f);
}

/*
 * Several gaps, on tests/data/skip-gaps.json: s (4096 B) is read by p.fwd
 * (route step 2), cat.fwd (7) and p.bwd (15), so it lies idle over big.fwd
 * (step 4, 3 to 5 ms) and over q.bwd (step 12, 12 to 13 ms).  Liveness
 * peaks at 17920 B in q.bwd (s.param0 512 + s 4096 + its gradient 4096,
 * made by cat.bwd + q.dout 1024 + big.dout 8192) and at 13824 B in
 * big.fwd (512 + s + m's output 1024 + big 8192).  Swapped in both gaps,
 * s goes out after p.fwd (2 to 2.5096 ms, before big.fwd allocates at 3)
 * and comes back at r.fwd (the latest start from which a copy of 0.5096
 * ms with a 10% margin ends before cat.fwd at 7: 6 to 6.5096 ms), out
 * again after cat.fwd and back at m.bwd (15 to 15.5096 ms, before p.bwd
 * at 16): big.fwd holds 9728 B, q.bwd 13824, nothing stalls (18 ms), and
 * 8192 B go each way.  With the backward's gap alone, big.fwd's 13824
 * ties q.bwd's; with the forward's alone, q.bwd stays at 17920.  A step
 * of a gap already held names the same gap: one swap.
 */
static void many_gaps(void)
{
	static const struct {
		bool fwd, bwd;
		uint64_t peak, fwd_peak;
		uint32_t swaps;
	} want[] = {
		{ false, false, 17920, 13824, 0 },
		{ true, false, 17920, 9728, 1 },
		{ false, true, 13824, 13824, 1 },
		{ true, true, 13824, 9728, 2 },
	};
	struct fixture f;
	struct mp_error err;

	if (load_none(&f, "tests/data/skip-gaps.json") < 0)
		return;
	for (unsigned i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		struct pl_state S;
		int32_t s = net_find_tensor(f.net, "s.out");
		uint32_t big = f.route.pos[net_find_op(f.net, "big.fwd")], q = f.route.pos[net_find_op(f.net, "q.bwd")];
		uint32_t outs = 0, ins = 0;

		pl_init(&S, f.net, &f.route, &f.req);
		S.prefetch = PL_PREFETCH_JIT;
		CHECK(pl_build(&S, &err) == 0); /* the timeline swap-ins are placed on */
		if (want[i].fwd)
			CHECK(pl_gap_add(&S, s, big));
		if (want[i].bwd) {
			CHECK(pl_gap_add(&S, s, q));
			CHECK(pl_gap_add(&S, s, q - 1)); /* r.bwd: the same gap */
		}
		CHECK(pl_build(&S, &err) == 0);
		for (uint32_t k = 0; k < S.sched.n; k++) {
			outs += S.sched.a[k].kind == MP_ACT_SWAP_OUT && S.sched.a[k].tensor == s;
			ins += S.sched.a[k].kind == MP_ACT_SWAP_IN && S.sched.a[k].tensor == s;
		}
		CHECK_U64(outs, want[i].swaps);
		CHECK_U64(ins, want[i].swaps);
		CHECK_U64(S.sim.d2h_bytes, 4096 * want[i].swaps);
		CHECK_U64(S.sim.peak_bytes, want[i].peak);
		CHECK_U64(S.sim.steps[big].bytes, want[i].fwd_peak);
		CHECK_NEAR(S.sim.time_ms, 18.0, 1e-9);
		CHECK_NEAR(S.sim.stall_ms, 0, 1e-12);
		/* the backward's gap alone: the forward's peak offers s again, in
		 * the other gap, only where several gaps are asked for */
		if (want[i].bwd && !want[i].fwd) {
			struct pl_cand *c;
			uint32_t n;
			bool with = false, without = false;

			CHECK_U64(S.sim.peak_step, big);
			n = pl_peak_candidates(&S, PL_CAND_GAPS, &c);
			for (uint32_t k = 0; k < n; k++)
				with |= c[k].t == s && !c[k].cross;
			free(c);
			n = pl_peak_candidates(&S, 0, &c);
			for (uint32_t k = 0; k < n; k++)
				without |= c[k].t == s;
			free(c);
			CHECK(with);
			CHECK(!without);
		}
		/* nothing queues here: pl_queue_in keeps the state as it was */
		if (want[i].swaps) {
			f.req.budget_bytes = 1 << 20;
			CHECK(pl_queue_in(&S, &err) == 0);
			CHECK(!S.queue_in);
			CHECK_NEAR(S.sim.time_ms, 18.0, 1e-9);
			CHECK_U64(S.sim.peak_bytes, want[i].peak);
		}
		/* a floor delays the swap-in of the last gap that starts before
		 * it, not the others': at p.bwd's step, s comes back at p.bwd
		 * itself (16 to 16.5096 ms, a stall of 0.5096) while its
		 * swap-in for cat.fwd stays at r.fwd: 18.5096 ms (one floor for
		 * both gaps would stall cat.fwd too) */
		if (want[i].swaps == 2) {
			uint32_t p_bwd = f.route.pos[net_find_op(f.net, "p.bwd")];

			memcpy(S.step_start, S.placed_on, f.route.n * sizeof(*S.step_start));
			S.in_floor[s] = p_bwd;
			CHECK(pl_build(&S, &err) == 0);
			CHECK_NEAR(S.sim.stall_ms, 0.5096, 1e-9);
			CHECK_NEAR(S.sim.time_ms, 18.5096, 1e-9);
			CHECK_U64(S.sim.steps[big].bytes, 9728);
			S.in_floor[s] = 0;
			CHECK(pl_build(&S, &err) == 0);
			CHECK_NEAR(S.sim.time_ms, 18.0, 1e-9);
		}
		/* a gap taken back */
		if (want[i].swaps == 2) {
			pl_gap_remove(&S, s, big);
			CHECK(pl_build(&S, &err) == 0);
			CHECK_U64(S.sim.peak_bytes, 13824);
			CHECK_U64(S.sim.steps[big].bytes, 13824);
			pl_gap_remove(&S, s, UINT32_MAX);
			CHECK(!pl_swapped(&S, s));
			/* a weight kept on the host between iterations and swapped
			 * in a gap of its own too: in before s.fwd, out over big,
			 * in for s.bwd, out after it; big.fwd holds 512 B less */
			{
				int32_t w = net_find_tensor(f.net, "s.param0");
				uint32_t w_out = 0, w_in = 0;

				S.host[w] = 1;
				CHECK(pl_gap_add(&S, w, big));
				CHECK(pl_gap_add(&S, w, big)); /* the step it holds: no second slot */
				CHECK_U64(S.swap_step[(size_t)w * PL_GAPS + 1], UINT32_MAX);
				CHECK(pl_build(&S, &err) == 0);
				for (uint32_t k = 0; k < S.sched.n; k++) {
					w_out += S.sched.a[k].kind == MP_ACT_SWAP_OUT && S.sched.a[k].tensor == w;
					w_in += S.sched.a[k].kind == MP_ACT_SWAP_IN && S.sched.a[k].tensor == w;
				}
				CHECK_U64(w_out, 2);
				CHECK_U64(w_in, 2);
				CHECK_U64(S.sim.steps[big].bytes, 13824 - 512);
			}
		}
		pl_release(&S);
	}
	unload(&f);
}

/* tests/data/three-swapins.json into f, and S, just in time, with a, b
 * and c swapped over big (not built): the plan of queued_swapins below.
 * Its liveness timeline (11.6 ms), malloc'd, into *timeline.  -1 (a failed
 * check) where it does not load. */
static int three_swapins(struct fixture *f, struct pl_state *S, double **timeline)
{
	static const char *const name[] = { "a.out", "b.out", "c.out" };
	struct mp_error err;
	uint32_t big;

	if (load_none(f, "tests/data/three-swapins.json") < 0)
		return -1;
	pl_init(S, f->net, &f->route, &f->req);
	S->prefetch = PL_PREFETCH_JIT;
	CHECK(pl_build(S, &err) == 0);
	CHECK_NEAR(S->sim.time_ms, 11.6, 1e-9);
	*timeline = malloc(f->route.n * sizeof(**timeline));
	memcpy(*timeline, S->step_start, f->route.n * sizeof(**timeline));
	big = f->route.pos[net_find_op(f->net, "big.fwd")];
	for (int k = 0; k < 3; k++)
		CHECK(pl_gap_add(S, net_find_tensor(f->net, name[k]), big));
	return 0;
}

/*
 * Swap-ins on one copy engine, on tests/data/three-swapins.json: a, b and c
 * (8192 B, 0.1 + 0.8192 = 0.9192 ms a copy) are swapped over big (route
 * step 5), out after b.fwd, c.fwd and q.fwd (2, 3 and 4 ms), and back for
 * c.bwd, b.bwd and a.bwd at 11.0, 11.2 and 11.4 ms on the liveness
 * timeline (big.bwd 8 to 10, q.bwd 10 to 11).  Just in time one at a time
 * (the copy, with a 10% margin, 1.01112 ms, ends before its use): c is
 * issued at big.bwd (q.bwd's 10.0 is past 11.0 - 1.01112), b and a both at
 * q.bwd, a first (tensor order): a 10.0 to 10.9192, b to 11.8384, so b.bwd
 * waits 0.6384 ms: 12.2384 ms.  On the engine's queue, from the last use
 * back, each to end (with a 5% margin, 0.96516 ms) before the next starts:
 * a by 11.4 from q.bwd, b by 11.4 - 0.96516 = 10.43484, so from big.bwd,
 * c by 9.46968, from big.bwd: b 8.0 to 8.9192, c to 9.8384, a at q.bwd,
 * and nothing stalls: 11.6 ms, with b resident over big.bwd (8192 B more
 * there).
 */
static void queued_swapins(void)
{
	struct fixture f;
	struct mp_error err;
	struct pl_state S;
	double *timeline;
	uint64_t big_bwd_jit = 0;

	if (three_swapins(&f, &S, &timeline) < 0)
		return;
	for (int queue = 0; queue < 2; queue++) {
		int32_t b = net_find_tensor(f.net, "b.out"), big_bwd = net_find_op(f.net, "big.bwd");
		uint32_t b_in = UINT32_MAX, bwd_at = UINT32_MAX, step = f.route.pos[big_bwd];

		memcpy(S.step_start, timeline, f.route.n * sizeof(*timeline));
		S.queue_in = queue;
		CHECK(pl_build(&S, &err) == 0);
		CHECK_NEAR(S.sim.time_ms, queue ? 11.6 : 12.2384, 1e-9);
		CHECK_NEAR(S.sim.stall_ms, queue ? 0 : 0.6384, 1e-9);
		CHECK_U64(S.sim.n_swap_in, 3);
		for (uint32_t k = 0; k < S.sched.n; k++) {
			if (S.sched.a[k].kind == MP_ACT_SWAP_IN && S.sched.a[k].tensor == b)
				b_in = k;
			if (S.sched.a[k].kind == MP_ACT_COMPUTE && S.sched.a[k].op == big_bwd)
				bwd_at = k;
		}
		CHECK(queue ? b_in < bwd_at : b_in > bwd_at);
		if (!queue)
			big_bwd_jit = S.sim.steps[step].bytes;
		else
			CHECK_U64(S.sim.steps[step].bytes, big_bwd_jit + 8192);
	}
	/* pl_queue_in keeps the queue where it is faster and fits: from the
	 * one-at-a-time build, 12.2384 -> 11.6 ms (the peak, 41216 B at
	 * c.bwd with all three back, is the same) */
	memcpy(S.step_start, timeline, f.route.n * sizeof(*timeline));
	S.queue_in = false;
	CHECK(pl_build(&S, &err) == 0);
	f.req.budget_bytes = S.sim.peak_bytes;
	CHECK(pl_queue_in(&S, &err) == 1);
	CHECK(S.queue_in);
	CHECK_NEAR(S.sim.time_ms, 11.6, 1e-9);
	CHECK_U64(S.sim.peak_bytes, 41216);
	free(timeline);
	pl_release(&S);
	unload(&f);
}

/*
 * pl_settled_ms, the time greedy weighs a plan by, on queued_swapins' plan
 * of three swaps one at a time: simulated, 12.2384 ms (b.bwd waits 0.6384
 * ms for b, issued behind a at q.bwd); after plan_run's last steps (worked
 * in issued_by_use: in the order of their uses 12.0384 ms, then a and b
 * issued earlier) 11.6 ms, and it says it weighed lower.  Weighed raw, over
 * the budget, or on the queue's plan, which does not stall, the simulated
 * time and not lower.  The state is left as it was.
 */
static void settled_time(void)
{
	struct fixture f;
	struct mp_error err;
	struct pl_state S;
	double *timeline, ms;
	uint64_t peak;
	uint32_t n;
	bool lower = false;

	if (three_swapins(&f, &S, &timeline) < 0)
		return;
	CHECK(pl_build(&S, &err) == 0);
	CHECK_NEAR(S.sim.time_ms, 12.2384, 1e-9);
	peak = S.sim.peak_bytes;
	n = S.sched.n;
	f.req.budget_bytes = peak;
	f.req.settled_lower = &lower;
	CHECK(pl_settled_ms(&S, &ms, &err) == 0);
	CHECK_NEAR(ms, 11.6, 1e-9);
	CHECK(lower);
	CHECK_NEAR(S.sim.time_ms, 12.2384, 1e-9);
	CHECK_NEAR(S.sim.stall_ms, 0.6384, 1e-9);
	CHECK_U64(S.sched.n, n);
	for (int k = 0; k < 3; k++) {
		lower = false;
		f.req.weigh_raw = k == 0;
		f.req.budget_bytes = k == 1 ? peak - 1 : peak;
		if (k == 2) {
			memcpy(S.step_start, timeline, f.route.n * sizeof(*timeline));
			S.queue_in = true;
			CHECK(pl_build(&S, &err) == 0);
			CHECK_NEAR(S.sim.stall_ms, 0, 1e-9);
		}
		CHECK(pl_settled_ms(&S, &ms, &err) == 0);
		CHECK_NEAR(ms, k == 2 ? 11.6 : 12.2384, 1e-9);
		CHECK(!lower);
	}
	free(timeline);
	pl_release(&S);
	unload(&f);
}

/* The index in p's schedule of t's swap-in (UINT32_MAX: none). */
static uint32_t swap_in_at(const struct mp_plan *p, int32_t t)
{
	for (uint32_t k = 0; k < p->sched.n; k++)
		if (p->sched.a[k].kind == MP_ACT_SWAP_IN && p->sched.a[k].tensor == t)
			return k;
	return UINT32_MAX;
}

/*
 * plan_issue_by_use on the plans of queued_swapins.  Just in time one at a
 * time, a and b are issued together at q.bwd, a first (tensor order): a
 * 10.0 to 10.9192, b to 11.8384, b.bwd waits 0.6384 ms, 12.2384 ms.  In the
 * order of their waits, b (read at b.bwd, 11.2) goes first: b 10.0 to
 * 10.9192, in time; a 10.9192 to 11.8384, so a.bwd (11.4 once c.bwd and
 * b.bwd have run) waits 0.4384 ms: 11.6 + 0.4384 = 12.0384 ms, the same
 * three copies resident from q.bwd on, so the same peak.  On the queue,
 * b and c go together at big.bwd, b first: c first lands both long before
 * c.bwd (8.0 to 9.8384 either way), no faster, so the plan stays as it
 * was.  The note says where the order changed.
 */
static void issued_by_use(void)
{
	struct fixture f;
	struct mp_error err;
	struct pl_state S;
	double *timeline;
	int32_t a, b, c;

	if (three_swapins(&f, &S, &timeline) < 0)
		return;
	a = net_find_tensor(f.net, "a.out");
	b = net_find_tensor(f.net, "b.out");
	c = net_find_tensor(f.net, "c.out");
	for (int queue = 0; queue < 2; queue++) {
		struct mp_plan p;
		uint64_t peak;

		plan_init(&p);
		memcpy(S.step_start, timeline, f.route.n * sizeof(*timeline));
		S.queue_in = queue;
		CHECK(pl_build(&S, &err) == 0);
		peak = S.sim.peak_bytes;
		f.req.budget_bytes = peak;
		pl_take(&S, &p);
		plan_assign_arena_within(f.net, &p, f.req.budget_bytes);
		CHECK(p.arena_bytes <= f.req.budget_bytes);
		CHECK_NEAR(p.sim.time_ms, queue ? 11.6 : 12.2384, 1e-9);
		/* tensor order: a before b at q.bwd; b before c at big.bwd */
		CHECK(queue ? swap_in_at(&p, b) + 1 == swap_in_at(&p, c) : swap_in_at(&p, a) + 1 == swap_in_at(&p, b));
		CHECK(plan_issue_by_use(f.net, &f.req, &p, NULL, &err) == 0);
		CHECK_NEAR(p.sim.time_ms, queue ? 11.6 : 12.0384, 1e-9);
		CHECK_NEAR(p.sim.stall_ms, queue ? 0 : 0.4384, 1e-9);
		CHECK_U64(p.sim.peak_bytes, peak);
		CHECK(p.arena_bytes <= f.req.budget_bytes);
		CHECK(queue ? swap_in_at(&p, b) + 1 == swap_in_at(&p, c) : swap_in_at(&p, b) + 1 == swap_in_at(&p, a));
		CHECK((strstr(p.note, " (swap-ins issued in the order of their uses)") != NULL) == !queue);
		/* issued in use order, a still waits 0.4384 ms (b 10 -> 10.9192,
		 * a 10.9192 -> 11.8384 for a.bwd at 11.4); a's copy queued right
		 * behind b's, both go 0.4384 + 5% of a copy earlier: b to
		 * 9.5156, after loss.bwd (ends 8), queued behind c (8 ->
		 * 8.9192 -> 9.8384), a to 10.4348, after big.bwd (ends 10):
		 * a lands at 10.9192, nothing stalls, the queue's 11.6 ms
		 * (the queue's plan: nothing to move) */
		CHECK(plan_hoist_swapins(f.net, &f.req, &p, NULL, &err) == 0);
		CHECK_NEAR(p.sim.time_ms, 11.6, 1e-9);
		CHECK_NEAR(p.sim.stall_ms, 0, 1e-9);
		CHECK_U64(p.sim.peak_bytes, peak);
		CHECK(p.arena_bytes <= f.req.budget_bytes);
		CHECK(queue ? swap_in_at(&p, b) + 1 == swap_in_at(&p, c) : swap_in_at(&p, c) + 1 == swap_in_at(&p, b));
		CHECK_NEAR(p.sched.a[swap_in_at(&p, b)].start_ms, queue ? 8 : 8.9192, 1e-9);
		CHECK_NEAR(p.sched.a[swap_in_at(&p, a)].start_ms, 10, 1e-9);
		CHECK((strstr(p.note, " (late swap-ins issued earlier)") != NULL) == !queue);
		plan_release(&p);
	}
	/* lazily, as plan_run does on large schedules: the use order is kept
	 * on its simulation alone (12.0384 ms, no offsets, the arena its lower
	 * bound) and the plan it replaces is held (12.2384 ms, placed); then
	 * plan_last_steps places the arena once, after both steps: the same
	 * 11.6 ms plan, at the same peak, with a valid arena */
	for (int last = 0; last < 2; last++) {
		struct pl_held held = { .lazy = true, .have = false };
		struct mp_plan p;
		uint64_t peak;

		plan_init(&p);
		memcpy(S.step_start, timeline, f.route.n * sizeof(*timeline));
		S.queue_in = 0;
		CHECK(pl_build(&S, &err) == 0);
		peak = S.sim.peak_bytes;
		f.req.budget_bytes = peak;
		pl_take(&S, &p);
		plan_assign_arena_within(f.net, &p, f.req.budget_bytes);
		if (!last) {
			CHECK(plan_issue_by_use(f.net, &f.req, &p, &held, &err) == 0);
			CHECK(held.have && p.offset == NULL && held.p.offset != NULL);
			CHECK_NEAR(p.sim.time_ms, 12.0384, 1e-9);
			CHECK_U64(p.arena_bytes, peak);
			CHECK_NEAR(held.p.sim.time_ms, 12.2384, 1e-9);
			CHECK(strstr(held.p.note, "(swap-ins issued") == NULL);
			/* settled under a byte less than the peak: that arena no
			 * longer fits, so the held plan comes back and the steps,
			 * run on it again, keep nothing (its peak is over too) */
			f.req.budget_bytes = peak - 1;
			CHECK(plan_settle_held(f.net, &f.req, &p, &held, &err) == 0);
			CHECK(!held.have && p.offset != NULL);
			CHECK_NEAR(p.sim.time_ms, 12.2384, 1e-9);
			CHECK(strstr(p.note, "(swap-ins issued") == NULL && strstr(p.note, "(late swap-ins") == NULL);
			if (held.have)
				plan_release(&held.p);
		} else {
			CHECK(plan_last_steps(f.net, &f.req, &p, true, &err) == 0);
			CHECK_NEAR(p.sim.time_ms, 11.6, 1e-9);
			CHECK_U64(p.sim.peak_bytes, peak);
			CHECK(p.offset != NULL && p.arena_bytes <= f.req.budget_bytes);
			CHECK(plan_check_arena(f.net, &p, &err) == 0);
			CHECK(strstr(p.note, " (swap-ins issued in the order of their uses) (late swap-ins issued earlier)"));
		}
		plan_release(&p);
	}
	free(timeline);
	pl_release(&S);
	unload(&f);
}

/*
 * keep_from on tests/data/dtr-chain.json (re-runs: a.fwd 50 ms, b.fwd 4,
 * c.fwd 1) with a, b and c dropped: d.bwd reads c (rebuilt from b, from a),
 * c.bwd reads b (from a), b.bwd reads a, so a is rebuilt for readers at
 * three route steps.  Dropped again after each reader, a re-runs three
 * times: 3 x 50 + 2 x 4 + 1 = 159 ms re-run.  Kept once rebuilt, once: 59.
 * Kept from c.bwd's step, the rebuild for d.bwd stays temporary and the
 * one for c.bwd is kept for b.bwd: twice, 109.  Greedy's late keeps and
 * late unkeeps set it.
 */
static void keep_from(void)
{
	static const struct {
		uint8_t keep;
		int from_c; /* keep_from: c.bwd's route step, else 0 */
		double ms;
		uint32_t a_runs;
	} want[] = { { 0, 0, 159, 3 }, { 1, 0, 59, 1 }, { 1, 1, 109, 2 } };
	struct fixture f;
	struct mp_error err;

	if (load_none(&f, "tests/data/dtr-chain.json") < 0)
		return;
	f.req.budget_bytes = 1 << 20;
	for (unsigned i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		struct pl_state S;
		int32_t a = net_find_tensor(f.net, "a.out"), a_fwd = net_find_op(f.net, "a.fwd");
		uint32_t runs = 0;

		pl_init(&S, f.net, &f.route, &f.req);
		S.drop[a] = S.drop[net_find_tensor(f.net, "b.out")] = S.drop[net_find_tensor(f.net, "c.out")] = 1;
		S.keep[a] = want[i].keep;
		S.keep_from[a] = want[i].from_c ? f.route.pos[net_find_op(f.net, "c.bwd")] : 0;
		CHECK(pl_build(&S, &err) == 0);
		for (uint32_t k = 0; k < S.n_entries; k++)
			runs += S.entries[k].recompute && S.entries[k].op == a_fwd;
		CHECK_NEAR(S.sim.recompute_ms, want[i].ms, 1e-9);
		CHECK_U64(runs, want[i].a_runs);
		pl_release(&S);
	}
	unload(&f);
}

/*
 * plan_greedy_give_back on tests/data/dtr-chain.json, a, b and c dropped as
 * a plan made for less so that its arena packs might have them, given back
 * to a budget.  Live at d.bwd with nothing dropped: 4 x 256 B of weights,
 * 4 x 256 of momentum, data, a, b and c (4 x 1024), d.dout and c.dout (2 x
 * 1024), d's gradient 256: 8448 B, 64.34 ms.  a dropped: a is gone at d.bwd
 * and rebuilt (50 ms) for b.bwd: 7424 B, +50.  b dropped: it is rebuilt (4
 * ms) for c.bwd, where data, a, b, b.dout, c.dout and c's and d's gradients
 * are live: 7680 B, +4.  a and b (c too or not): b.bwd holds data, a
 * (rebuilt), b.dout, a.dout and three gradients: 6912 B; a re-runs for
 * c.bwd (under b) and for b.bwd, b once: +104; c dropped too, c, b and a
 * re-run for d.bwd: +55 more, +159.  The fastest set that fits each
 * budget: a and b from 6912 (c kept or not, the peak is b.bwd's), a alone
 * from 7424, b alone from 7680, none from 8448.  At 6912 itself nothing is
 * given back: polish gives room back only below the budget, and the plan's
 * peak is the budget.
 */
static void give_back(void)
{
	static const struct {
		uint64_t budget;
		uint8_t a, b, c;
		double ms;
	} want[] = {
		{ 6912, 1, 1, 1, 223.34 }, { 7168, 1, 1, 0, 168.34 }, { 7423, 1, 1, 0, 168.34 },
		{ 7424, 1, 0, 0, 114.34 }, { 7679, 1, 0, 0, 114.34 }, { 7680, 0, 1, 0, 68.34 },
		{ 8447, 0, 1, 0, 68.34 }, { 8448, 0, 0, 0, 64.34 }, { 1 << 20, 0, 0, 0, 64.34 },
	};
	struct fixture f;
	struct mp_error err;

	if (load_none(&f, "tests/data/dtr-chain.json") < 0)
		return;
	for (unsigned i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		int32_t a = net_find_tensor(f.net, "a.out"), b = net_find_tensor(f.net, "b.out"),
			c = net_find_tensor(f.net, "c.out");
		struct pl_state S;
		struct mp_plan p;

		f.req.budget_bytes = 6912; /* what the plan was made for */
		plan_init(&p);
		pl_init(&S, f.net, &f.route, &f.req);
		S.drop[a] = S.drop[b] = S.drop[c] = 1;
		CHECK(pl_build(&S, &err) == 0);
		CHECK_U64(S.sim.peak_bytes, 6912);
		CHECK(plan_greedy_give_back(&S, &p, want[i].budget, &err) == 0);
		CHECK(S.req == &f.req); /* its budget as it was */
		CHECK_U64(S.drop[a], want[i].a);
		CHECK_U64(S.drop[b], want[i].b);
		CHECK_U64(S.drop[c], want[i].c);
		CHECK_NEAR(S.sim.time_ms, want[i].ms, 1e-9);
		CHECK(S.sim.peak_bytes <= want[i].budget);
		/* the note says so where something was given back */
		CHECK((strstr(p.note, "; drops undone up to the budget") != NULL) == (want[i].ms < 223.34));
		pl_release(&S);
		plan_release(&p);
	}
	unload(&f);
}

/* greedy leaves its state built on the edits it returns: building them
 * again, swap-ins placed on the timeline the last build placed them on
 * (placed_on: a build moves step_start), gives the same schedule, peak and
 * time, so what plan_run reads (the schedule, its peak and time) is the
 * plan the edits describe, after undo, polish, exchange and the swaps for
 * drops have each put back what they did not keep. */
static unsigned rebuilt_alike, swapping;

static void built_as_returned(const char *path)
{
	static const int pct[] = { 70, 50, 33 };
	struct fixture f;
	struct mp_error err;
	uint64_t live;

	if (load_live(&f, path, &live) < 0)
		return;
	f.req.ws_mode = MP_WS_NONE;
	for (unsigned b = 0; b < sizeof(pct) / sizeof(pct[0]); b++) {
		for (int pass = 0; pass < 2; pass++) {
			struct pl_state S;
			struct mp_plan p;
			uint64_t peak;
			double ms;
			uint32_t n;

			f.req.budget_bytes = live / 100 * pct[b];
			plan_init(&p);
			pl_init(&S, f.net, &f.route, &f.req);
			CHECK((pass ? plan_greedy(&S, &p, &err) : plan_greedy_recompute(&S, &p, &err)) == 0);
			peak = S.sim.peak_bytes;
			ms = S.sim.time_ms;
			n = S.sched.n;
			/* swap-ins placed on the timeline the last build placed them on */
			memcpy(S.step_start, S.placed_on, f.route.n * sizeof(*S.step_start));
			CHECK(pl_build(&S, &err) == 0);
			CHECK_U64(S.sim.peak_bytes, peak);
			CHECK(fabs(S.sim.time_ms - ms) < 1e-9);
			CHECK_U64(S.sched.n, n);
			rebuilt_alike++;
			swapping += S.sim.d2h_bytes > 0;
			pl_release(&S);
			plan_release(&p);
		}
	}
	unload(&f);
}

int main(void)
{
	dtr_by_hand();
	dtr_rewritten_input();
	floor_then_swap();
	swap_for_drop();
	many_gaps();
	queued_swapins();
	issued_by_use();
	settled_time();
	keep_from();
	give_back();
	glob_t g;

	inplace_rebuild();
	known("examples/swap-chain.json", 12.0, 0.0);
	known("examples/swap-chain-stall.json", 11.5096, 0.4096);
	known_wait();
	searched_kept();
	searched_limits();
	meets_mask_defined();
	printf("planners at 90/70/50/30%% of the liveness peak (+ fits, - cannot), arena / max-live:\n");
	if (glob("examples/*.json", 0, NULL, &g) == 0) {
		for (size_t i = 0; i < g.gl_pathc; i++)
			budgets(g.gl_pathv[i]);
		globfree(&g);
	}
	printf("arena placements compared, scan against segment tree: %u plans\n", placements_compared);
	printf("greedy against its plan weighed raw: %u plans, %u of them faster\n", settled_compared, settled_faster);
	CHECK(settled_faster >= 1);
	built_as_returned("examples/resnet50-b32.json");
	built_as_returned("examples/unet.json");
	built_as_returned("examples/bert-base.json");
	built_as_returned("examples/densenet121-b32.json");
	built_as_returned("examples/gpt2-small.json");
	printf("greedy's returned state rebuilt alike: %u plans, %u of them swapping\n", rebuilt_alike, swapping);
	CHECK(rebuilt_alike >= 24);
	CHECK(swapping >= 4);
	CHECK(placements_compared >= 100);
	return unit_report("test_planners");
}
