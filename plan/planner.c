/*
 * plan_run: one planner from start to finish: convolution configuration
 * (mu-cuDNN WR/WD when asked), the planner's rounds, dynamic workspace
 * (SuperNeurons 3.5) when asked, metrics against the unconstrained run.
 */
#include "planners.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "arena.h"
#include "convconf.h"

static const char *const names[MP_PLANNER_AUTO + 1] = {
	"superneurons", "tf-swap", "tensile", "greedy", "chain", "chen", "checkpoint-blocks", "optimal", "dqn", "auto",
};

const char *mp_planner_name(enum mp_planner p)
{
	return p <= MP_PLANNER_AUTO ? names[p] : "?";
}

int mp_planner_parse(const char *s)
{
	for (int i = 0; i <= MP_PLANNER_AUTO; i++)
		if (!strcmp(s, names[i]))
			return i;
	if (!strcmp(s, "tfswap"))
		return MP_PLANNER_TFSWAP;
	return -1;
}

char *mp_planner_list(char *buf, size_t n, const char *sep, int count)
{
	size_t l = 0;

	buf[0] = 0;
	for (int i = 0; i < count && i < MP_PLANNER_AUTO && l < n; i++)
		l += (size_t)snprintf(buf + l, n - l, "%s%s", i ? sep : "", names[i]);
	return buf;
}

double plan_now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void plan_init(struct mp_plan *p)
{
	memset(p, 0, sizeof(*p));
	sched_init(&p->sched);
}

void plan_release(struct mp_plan *p)
{
	sched_release(&p->sched);
	sim_release(&p->sim);
	free(p->offset);
	memset(p, 0, sizeof(*p));
}

void plan_note_add(struct mp_plan *p, const char *fmt, ...)
{
	size_t l = strlen(p->note);
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(p->note + l, sizeof(p->note) - l, fmt, ap);
	va_end(ap);
}

void plan_metrics(struct mp_plan *p, uint64_t budget)
{
	p->fits = p->sim.peak_bytes <= budget && p->arena_bytes <= budget;
	p->eor = p->baseline_ms > 0 ? p->sim.time_ms / p->baseline_ms : 1.0;
	p->overhead = p->eor - 1.0;
	p->msr = p->baseline_peak ? ((double)p->baseline_peak - (double)p->sim.peak_bytes) /
				    (double)p->baseline_peak : 0;
	p->cbr = p->eor > 0 ? p->msr / p->eor : 0;
}

int pl_rounds(struct pl_state *S, struct mp_plan *p, pl_round_fn round_fn, void *ctx, struct mp_error *err)
{
	uint64_t best = S->sim.peak_bytes;
	uint32_t stale = 0;

	while (S->sim.peak_bytes > S->req->budget_bytes && p->iterations < PL_MAX_ROUNDS) {
		struct pl_cand *c;
		uint32_t n, m;

		/* when the peak has not come down for a while the copies
		 * cannot keep up: wait for the late swap-outs, else give up */
		if (S->sim.peak_bytes < best) {
			best = S->sim.peak_bytes;
			stale = 0;
		} else if (++stale > PL_MAX_STALE_ROUNDS) {
			if (!pl_wait_swapouts(S))
				break;
			stale = 0;
			p->iterations++;
			if (pl_build(S, err) < 0)
				return -1;
			continue;
		}

		/* a prefetch landing at the peak is moved after it first */
		if (pl_delay_swapins(S)) {
			p->iterations++;
			if (pl_build(S, err) < 0)
				return -1;
			continue;
		}
		n = pl_peak_candidates(S, 0, &c);
		m = round_fn(S, c, n, S->sim.peak_bytes - S->req->budget_bytes, ctx);
		free(c);
		/* nothing left to move: wait for the swap-outs still copying */
		if (!m && !(m = pl_wait_swapouts(S)))
			break;
		p->iterations++;
		if (pl_build(S, err) < 0)
			return -1;
	}
	return 0;
}

struct swap_filter {
	bool (*keep)(const struct pl_state *S, const struct pl_cand *c);
	int (*cmp)(const void *, const void *);
};

static uint32_t swap_round(struct pl_state *S, struct pl_cand *c, uint32_t n, uint64_t excess, void *ctx)
{
	const struct swap_filter *f = ctx;
	uint32_t m = 0;

	for (uint32_t k = 0; k < n; k++)
		if (f->keep(S, &c[k]))
			c[m++] = c[k];
	qsort(c, m, sizeof(*c), f->cmp);
	return pl_take_until(S, c, m, excess);
}

int pl_swap_rounds(struct pl_state *S, struct mp_plan *p,
		   bool (*keep)(const struct pl_state *S, const struct pl_cand *c),
		   int (*cmp)(const void *, const void *), struct mp_error *err)
{
	struct swap_filter f = { keep, cmp };

	return pl_rounds(S, p, swap_round, &f, err);
}

uint32_t pl_take_until(struct pl_state *S, const struct pl_cand *c, uint32_t n, uint64_t excess)
{
	uint64_t got = 0;
	uint32_t m = 0;

	for (uint32_t k = 0; k < n && got < excess; k++) {
		pl_swap(S, &c[k]);
		got += c[k].bytes;
		m++;
	}
	return m;
}

/* Dynamic workspace on a planned state, whose algorithms and swap-in
 * timeline as planned are algo and start.  When the faster algorithms'
 * workspace, filling the gaps, makes an arena that fitted overflow, the state
 * goes back to the algorithms it was planned with, and 1 is returned with
 * *over and *peak of the dynamic version: plan_run then also plans lower with
 * them and keeps the faster (re-planning lower alone could cost more than
 * the speed-ups give: ResNet-50 at 33% of liveness, greedy +188% instead of
 * +24%).  *changed: some algorithm changed.  0, or -1 with *err. */
static int dynamic_workspace(struct pl_state *S, uint64_t budget, const int32_t *algo, const double *start,
			     bool *changed, uint64_t *over, uint64_t *peak, struct mp_error *err)
{
	const struct mp_net *net = S->net;
	int rc;

	/* (no algorithm changed: the planned schedule, no arena to ask) */
	if ((rc = pl_dynamic_workspace(S, err)) == 0 &&
	    (*changed = memcmp(algo, S->algo, net->n_ops * sizeof(*algo)) != 0) &&
	    (*over = pl_overflow(S, budget)) > 0) {
		*peak = S->sim.peak_bytes;
		memcpy(S->algo, algo, net->n_ops * sizeof(*algo));
		memcpy(S->step_start, start, S->r->n * sizeof(*start));
		rc = pl_build(S, err) < 0 ? -1 : 1;
		if (rc == 1 && pl_overflow(S, budget) > 0) /* it overflowed already */
			rc = pl_dynamic_workspace(S, err);
	}
	return rc;
}

/* Does p fit the budget, its simulated peak and its arena (p->fits is set
 * only at the end, by plan_metrics)? */
static bool plan_fits(const struct mp_plan *p, uint64_t budget)
{
	return p->sim.peak_bytes <= budget && p->arena_bytes <= budget;
}

/* Whether a should replace b: a fits budget, peak and arena, and b does
 * not, or a is faster. */
static bool plan_beats(const struct mp_plan *a, const struct mp_plan *b, uint64_t budget)
{
	return a->sim.peak_bytes <= budget && a->arena_bytes <= budget &&
	       (b->sim.peak_bytes > budget || b->arena_bytes > budget || a->sim.time_ms < b->sim.time_ms);
}

/* Greedy with dynamic workspace is planned again leaving these shares of the
 * budget to the faster algorithms, where they would save more than
 * PLAN_RESERVE_GAIN of the net's time (plan_reserves: VGG-16 55%, U-Net
 * 46%; ResNet-50's 12% gained nothing for 2 to 30 times the CPU), and the
 * plan costs at most PLAN_RESERVE_MAX_OVERHEAD over the unconstrained run. */
#define PLAN_RESERVES { 0.1, 0.2 }
#define PLAN_RESERVE_GAIN 0.2
#define PLAN_RESERVE_MAX_OVERHEAD 0.4

/* Plans for a smaller budget when the arena overflows: at most this many. */
#define PLAN_ARENA_ATTEMPTS 6

/* The unconstrained run (liveness with default algorithms) that metrics
 * compare against; for superneurons also what UTP would move without its
 * cache, the offload strategy's traffic.  0, or -1 with *err. */
static int plan_baseline(const struct mp_net *net, const struct mp_route *r, enum mp_planner which,
			 const struct mp_plan_req *req, struct mp_plan *out, struct mp_error *err)
{
	struct mp_schedule base;
	struct mp_sim bsim;
	struct mp_policy_opts po = req->popts;
	int rc;

	sched_init(&base);
	policy_build(net, r, MP_STRAT_LIVENESS, &po, &base, NULL);
	rc = sim_run(net, &req->device, &base, &bsim, err);
	sched_release(&base);
	if (rc < 0)
		return -1;
	out->baseline_ms = bsim.time_ms;
	sim_release(&bsim);
	for (uint32_t t = 0; t < net->n_tensors; t++)
		out->baseline_peak += net->tensors[t].bytes;
	if (which == MP_PLANNER_SUPERNEURONS) {
		sched_init(&base);
		policy_build(net, r, MP_STRAT_OFFLOAD, &po, &base, NULL);
		if (sim_run(net, &req->device, &base, &bsim, err) == 0) {
			out->uncached_swap_bytes = bsim.d2h_bytes + bsim.h2d_bytes;
			sim_release(&bsim);
		}
		sched_release(&base);
	}
	return 0;
}

/* Empty out for another attempt, keeping what from's baseline says. */
static void plan_restart(struct mp_plan *out, const struct mp_plan *from)
{
	plan_init(out);
	out->planner = from->planner;
	out->baseline_ms = from->baseline_ms;
	out->baseline_peak = from->baseline_peak;
	out->uncached_swap_bytes = from->uncached_swap_bytes;
}

/* Say in p's note what plan_within_arena planned p for where that is not
 * req's budget: eff, the budget it planned for, so that the arena fits;
 * with a reserve, the share of it left to the faster algorithms. */
static void note_planned_for(struct mp_plan *p, const struct mp_plan_req *req, uint64_t eff)
{
	char b[32];

	if (req->ws_mode == MP_WS_DYNAMIC && req->ws_reserve > 0)
		plan_note_add(p, " (planned for %s, leaving %.0f%% of %s to faster algorithms)",
			      mp_fmt_bytes((uint64_t)((double)eff * (1 - req->ws_reserve)), b, sizeof(b)),
			      100 * req->ws_reserve, eff < req->budget_bytes ? "what the arena allows" : "the budget");
	else if (eff < req->budget_bytes)
		plan_note_add(p, " (planned for %s so the arena fits)", mp_fmt_bytes(eff, b, sizeof(b)));
}

/* The fastest of the variants of greedy's attempts kept aside (req->alt);
 * the first one offered is held even where it does not fit, and plan_beats
 * lets only one that fits replace the plan plan_run ends with.  Where
 * dynamic workspace made an attempt slower, or its arena overflow, the
 * attempt with the algorithms and swap-in timeline it was planned with:
 * faster steps can hide less of a plan's copies, placed for the planned
 * steps' times (`memplan gen resnet18` at 50% of liveness: greedy's plan
 * with the default algorithms 36.7 ms, given the faster ones 39.4 ms).
 * Where dynamic workspace went back to the default algorithms because the
 * arena overflowed, the faster ones where their workspace leaves that
 * overflow free, or twice it (VGG-16 at 50%: +31.4% -> +17.7%).  Kept
 * aside, so that each of plan_run's re-plans starts from the plan it
 * started from before: taken where it beats the plan plan_run ends with.
 * plain: it was planned so (req->plain_first). */
struct pl_alt {
	struct mp_plan p;
	bool have, plain;
};

/* Greedy's S with the algorithms algo and swap-in timeline start it had
 * before dynamic workspace, built again, with the faster algorithms where
 * their workspace leaves room bytes of eff's budget free (room 0: none),
 * its swap-ins on the copy engine's queue where faster, as plan_attempt
 * does, and offered to eff->alt: kept where it beats what alt holds.  out:
 * the attempt's plan; changed: dynamic workspace changed an algorithm of
 * it.  0, or -1 with *err. */
static int plan_offer_alt(struct pl_state *S, const struct mp_plan_req *req, const struct mp_plan_req *eff,
			  const int32_t *algo, const double *start, uint64_t room, bool changed,
			  const struct mp_plan *out, struct mp_error *err)
{
	struct pl_alt *alt = eff->alt;
	struct mp_plan_req lim = *eff;
	struct mp_plan c;
	char b[32];
	int rc;

	memcpy(S->algo, algo, S->net->n_ops * sizeof(*algo));
	memcpy(S->step_start, start, S->r->n * sizeof(*start));
	S->queue_in = eff->queue_swapins;
	if (pl_build(S, err) < 0)
		return -1;
	lim.budget_bytes = eff->budget_bytes - room;
	S->req = &lim;
	rc = room ? pl_dynamic_workspace(S, err) : 0;
	S->req = eff;
	if (rc < 0 || pl_queue_in(S, err) < 0)
		return -1;
	plan_restart(&c, out);
	c.iterations = out->iterations;
	pl_take(S, &c);
	plan_assign_arena_within(S->net, &c, req->budget_bytes);
	if (alt->have && !plan_beats(&c, &alt->p, req->budget_bytes)) {
		plan_release(&c);
		return 0;
	}
	memcpy(c.note, out->note, sizeof(c.note));
	note_planned_for(&c, req, eff->budget_bytes);
	if (room)
		plan_note_add(&c, " (the faster algorithms where %s stays free for the arena)",
			      mp_fmt_bytes(room, b, sizeof(b)));
	else if (!changed)
		plan_note_add(&c, " (its swap-ins on the timeline it was planned on)");
	else
		plan_note_add(&c, " (the default algorithms kept: %s)", plan_fits(out, req->budget_bytes) ?
			      "the faster hid less of its copies" : "the faster's workspace did not pack");
	if (alt->have)
		plan_release(&alt->p);
	alt->p = c;
	alt->have = true;
	alt->plain = eff->plain_first;
	return 0;
}

/* One run of the planner for eff's budget: conv configurations (wr, wd),
 * the planner, dynamic workspace, the arena.  Returns dynamic_workspace's
 * 1 (with *dyn_over and *dyn_peak) or 0, or -1 with *err. */
static int plan_attempt(const struct mp_net *net, const struct mp_route *r, enum mp_planner which,
			const struct mp_plan_req *req, const struct mp_plan_req *eff, struct mp_plan *out,
			uint64_t *dyn_over, uint64_t *dyn_peak, struct mp_error *err)
{
	static int (*const fns[MP_PLANNER_AUTO])(struct pl_state *, struct mp_plan *, struct mp_error *) = {
		plan_superneurons, plan_tfswap, plan_tensile, plan_greedy, plan_chain, plan_chen, plan_blocks,
		plan_optimal, plan_dqn,
	};
	struct pl_state S;
	struct mp_plan_req low = *eff;
	int reverted = 0;
	bool changed = false;
	int32_t *algo = NULL;
	double *start = NULL, planned_ms;

	/* (planned for less, the faster algorithms then have the rest) */
	if (req->ws_mode == MP_WS_DYNAMIC && eff->ws_reserve > 0)
		low.budget_bytes = (uint64_t)((double)eff->budget_bytes * (1 - eff->ws_reserve));
	if (req->ws_mode == MP_WS_DYNAMIC && eff->plain_first)
		low.ws_mode = MP_WS_NONE;
	pl_init(&S, net, r, &low);
	S.queue_in = eff->queue_swapins;
	if ((req->ws_mode == MP_WS_WR || req->ws_mode == MP_WS_WD) &&
	    plan_conv_configs(net, req, S.algo, S.micro_n, S.micro, err) < 0) {
		pl_release(&S);
		return -1;
	}
	out->iterations = 0;
	if (fns[which](&S, out, err) < 0) {
		pl_release(&S);
		return -1;
	}
	/* (planned lower so that the arena packs, a plan that misses that,
	 * peak or arena, and fits the budget gives the room between back:
	 * greedy gave back only what fits what it planned for; not below a
	 * reserve, which is room left to the faster algorithms, nor where only
	 * a fit is asked) */
	if (which == MP_PLANNER_GREEDY && !eff->ws_reserve && !req->fit_only && eff->budget_bytes < req->budget_bytes &&
	    pl_overflow(&S, eff->budget_bytes) > 0 && pl_overflow(&S, req->budget_bytes) == 0 &&
	    plan_greedy_give_back(&S, out, req->budget_bytes, err) < 0) {
		pl_release(&S);
		return -1;
	}
	S.req = eff;
	planned_ms = S.sim.time_ms;
	/* (a plan that misses what it was planned for and fits the budget
	 * also has the faster algorithms where they fit) */
	if (req->ws_mode == MP_WS_DYNAMIC && S.sim.peak_bytes <= req->budget_bytes) {
		algo = mp_xmalloc((net->n_ops + 1) * sizeof(*algo));
		start = mp_xmalloc((r->n + 1) * sizeof(*start));
		memcpy(algo, S.algo, net->n_ops * sizeof(*algo));
		memcpy(start, S.placed_on, r->n * sizeof(*start));
		reverted = dynamic_workspace(&S, req->budget_bytes, algo, start, &changed, dyn_over, dyn_peak, err);
	}
	/* greedy's swap-ins on the engine's queue, where that is faster: not
	 * the papers' planners, whose triggers are theirs */
	if (reverted < 0 || (which == MP_PLANNER_GREEDY && pl_queue_in(&S, err) < 0)) {
		free(algo);
		free(start);
		pl_release(&S);
		return -1;
	}
	pl_take(&S, out);
	free(out->offset);
	out->offset = NULL;
	plan_assign_arena_within(net, out, req->budget_bytes);
	/* (slower with the faster algorithms, or its arena does not pack
	 * with them: the plan as planned is a candidate too; also where
	 * dynamic workspace left every algorithm as it was, since its builds
	 * moved the timeline the swap-ins are placed on: resnet34 at 33%) */
	if (eff->alt && algo && reverted == 0 &&
	    (out->sim.time_ms > planned_ms || !plan_fits(out, req->budget_bytes)) &&
	    plan_offer_alt(&S, req, eff, algo, start, 0, changed, out, err) < 0)
		reverted = -1;
	/* (where the faster algorithms' workspace made the arena overflow and
	 * the attempt went back to the default ones: the faster where their
	 * workspace leaves the overflow free, twice that, are candidates too) */
	for (int k = 0; eff->alt && reverted == 1 && k < 2; k++)
		if ((*dyn_over << k) < eff->budget_bytes &&
		    plan_offer_alt(&S, req, eff, algo, start, *dyn_over << k, true, out, err) < 0)
			reverted = -1;
	free(algo);
	free(start);
	pl_release(&S);
	return reverted;
}

/* Does some step of p run other than the default algorithm? */
static bool plan_gave_faster(const struct mp_plan *p)
{
	for (uint32_t i = 0; i < p->sched.n; i++)
		if ((p->sched.a[i].kind == MP_ACT_COMPUTE || p->sched.a[i].kind == MP_ACT_RECOMPUTE) &&
		    p->sched.a[i].algo >= 0)
			return true;
	return false;
}

/* The schedule must fit twice: its simulated peak, and the arena its
 * allocations are placed in (fragmentation, workspace grown into every
 * step's free memory).  When the arena overflows, plan again for a
 * budget smaller by the overflow, a few times; an attempt that does
 * not reach its smaller budget gives way to the one before it.  The
 * attempts share optimal's time limit.  0, or -1 with *err. */
static int plan_within_arena(const struct mp_net *net, const struct mp_route *r, enum mp_planner which,
			     const struct mp_plan_req *req, struct mp_plan *out, struct mp_error *err)
{
	struct mp_plan_req eff = *req;
	struct mp_plan prev, kept;
	bool have_prev = false, have_kept = false;
	uint64_t kept_eff = 0;

	eff.deadline_s = plan_now_s() + plan_time_limit(req);
	for (int attempt = 0; attempt < PLAN_ARENA_ATTEMPTS; attempt++) {
		uint64_t dyn_over = 0, dyn_peak = 0;
		int reverted = plan_attempt(net, r, which, req, &eff, out, &dyn_over, &dyn_peak, err);

		if (reverted < 0) {
			if (have_prev)
				plan_release(&prev);
			if (have_kept)
				plan_release(&kept);
			return -1;
		}
		if (out->sim.peak_bytes <= req->budget_bytes && out->arena_bytes <= req->budget_bytes) {
			uint64_t from = dyn_peak < eff.budget_bytes ? dyn_peak : eff.budget_bytes;

			if (reverted != 1 || have_kept || attempt == PLAN_ARENA_ATTEMPTS - 1 || from <= dyn_over)
				break; /* fits */
			/* it fits with the algorithms it was planned with: kept,
			 * while a plan lower tries the faster ones */
			kept = *out;
			kept_eff = eff.budget_bytes;
			have_kept = true;
			eff.have_fit = true;
			eff.budget_bytes = from - dyn_over;
			plan_restart(out, &kept);
			continue;
		}
		if (out->sim.peak_bytes > eff.budget_bytes || out->arena_bytes <= req->budget_bytes) {
			/* the planner cannot go lower: shrinking will not help */
			if (have_prev && prev.arena_bytes <= out->arena_bytes) {
				plan_release(out);
				*out = prev;
				have_prev = false;
				eff.budget_bytes = req->budget_bytes;
			}
			break;
		}
		{
			/* below the peak this plan reached, by what its arena
			 * overflowed, twice that the next time */
			uint64_t over = (out->arena_bytes - req->budget_bytes) << attempt;
			uint64_t from = out->sim.peak_bytes < eff.budget_bytes ? out->sim.peak_bytes : eff.budget_bytes;

			if (from <= over)
				break;
			eff.budget_bytes = from - over;
		}
		if (attempt == PLAN_ARENA_ATTEMPTS - 1)
			break;
		/* this attempt waits as prev; out starts again */
		if (have_prev)
			plan_release(&prev);
		prev = *out;
		have_prev = true;
		plan_restart(out, &prev);
	}
	if (have_prev)
		plan_release(&prev);
	if (have_kept) {
		if (plan_beats(out, &kept, req->budget_bytes)) { /* (kept fits) */
			plan_release(&kept);
		} else {
			plan_release(out);
			*out = kept;
			eff.budget_bytes = kept_eff;
		}
	}
	if (out->arena_bytes <= req->budget_bytes) {
		note_planned_for(out, req, eff.budget_bytes);
		if (req->ws_mode == MP_WS_DYNAMIC && req->plain_first)
			plan_note_add(out, " (planned with the default algorithms%s)",
				      plan_gave_faster(out) ? ", the faster given after" : "");
	}
	return 0;
}

/* SuperNeurons' own fixed strategies are schedules of this planner too:
 * offload, and offload with cost-aware recomputation, as `memplan analyze`
 * builds them; one that fits and is faster replaces out.  0, or -1. */
static int plan_fixed_strategies(const struct mp_net *net, const struct mp_route *r,
				 const struct mp_plan_req *req, struct mp_plan *out, struct mp_error *err)
{
	static const enum mp_strategy fixed[] = { MP_STRAT_OFFLOAD, MP_STRAT_RECOMPUTE };
	struct mp_policy_opts po = req->popts;

	for (size_t k = 0; k < sizeof(fixed) / sizeof(fixed[0]); k++) {
		struct mp_plan c;

		plan_init(&c);
		if (analysis_strategy(net, r, fixed[k], &po, &req->device, &c.sched, &c.sim, NULL, err) < 0) {
			plan_release(&c);
			return -1;
		}
		if (c.sim.peak_bytes <= req->budget_bytes) {
			plan_assign_arena_within(net, &c, req->budget_bytes);
			if (plan_beats(&c, out, req->budget_bytes)) {
				c.planner = out->planner;
				c.baseline_ms = out->baseline_ms;
				c.baseline_peak = out->baseline_peak;
				c.uncached_swap_bytes = out->uncached_swap_bytes;
				c.iterations = out->iterations;
				snprintf(c.note, sizeof(c.note), "the %s strategy's schedule (%s)",
					 mp_strategy_name(fixed[k]), fixed[k] == MP_STRAT_OFFLOAD ?
					 "checkpoints offloaded, prefetched one ahead" :
					 "offload + cost-aware recomputation");
				plan_release(out);
				*out = c;
				continue;
			}
		}
		plan_release(&c);
	}
	return 0;
}

typedef int (*plan_fn)(const struct mp_net *net, const struct mp_route *r, enum mp_planner which,
		       const struct mp_plan_req *req, struct mp_plan *out, struct mp_error *err);

/* Plan again with fn under other, and keep that plan where it beats out's
 * (plan_beats, under budget).  1 where it was kept, 0, or -1 with *err. */
static int plan_also(const struct mp_net *net, const struct mp_route *r, enum mp_planner which, plan_fn fn,
		     const struct mp_plan_req *other, uint64_t budget, struct mp_plan *out, struct mp_error *err)
{
	struct mp_plan q;

	plan_restart(&q, out);
	if (fn(net, r, which, other, &q, err) < 0) {
		plan_release(&q);
		return -1;
	}
	if (plan_beats(&q, out, budget)) {
		plan_release(out);
		*out = q;
		return 1;
	}
	plan_release(&q);
	return 0;
}

/* plan_within_arena, then, where greedy's two weighings of its swaps for
 * drops decided differently, again weighing the other way, the faster
 * kept.  Greedy's swaps for drops, with dynamic workspace, are weighed as
 * plan_run first takes a plan (the faster algorithms where their arena
 * packs), which does not foresee planning lower when it does not
 * (bench/plan-quality.md, session 12).  0, or -1 with *err. */
static int plan_both_ways(const struct mp_net *net, const struct mp_route *r, enum mp_planner which,
			  const struct mp_plan_req *req, struct mp_plan *out, struct mp_error *err)
{
	struct mp_plan_req other = *req;

	if (plan_within_arena(net, r, which, req, out, err) < 0)
		return -1;
	if (!out->weigh_split || req->swaps_unpacked)
		return 0;
	other.swaps_unpacked = true;
	return plan_also(net, r, which, plan_within_arena, &other, req->budget_bytes, out, err);
}

/* Greedy planned again under other (both ways), kept where it beats out's
 * plan under other's budget: the one way plan_run tries greedy once more.
 * 1 where it was kept, 0, or -1 with *err. */
static int plan_greedy_again(const struct mp_net *net, const struct mp_route *r, const struct mp_plan_req *other,
			     struct mp_plan *out, struct mp_error *err)
{
	return plan_also(net, r, MP_PLANNER_GREEDY, plan_both_ways, other, other->budget_bytes, out, err);
}

/* Do the ops' algorithms faster than their defaults save more than share
 * of the net's time in all (share 0: does any have one)? */
static bool faster_algorithms(const struct mp_net *net, double share)
{
	double all = 0, gain = 0;

	for (uint32_t o = 0; o < net->n_ops; o++) {
		double best = net->ops[o].ms;

		for (uint32_t k = 0; k < net->ops[o].n_algos; k++)
			if (!net->ops[o].algos[k].batch && net->ops[o].algos[k].ms < best)
				best = net->ops[o].algos[k].ms;
		all += net->ops[o].ms;
		gain += net->ops[o].ms - best;
	}
	return gain > share * all;
}

/* Greedy with dynamic workspace plans its drops and swaps first and gives
 * the faster algorithms what room is left: at a budget it fills, none.
 * Planned again for less (each share of PLAN_RESERVES), the faster
 * algorithms have the rest; the fastest plan that fits stays (U-Net at 70%
 * of liveness: +7.5% planned for the budget, -7.9% for 90% of it).
 * 0, or -1 with *err. */
static int plan_reserves(const struct mp_net *net, const struct mp_route *r, const struct mp_plan_req *req,
			 struct mp_plan *out, struct mp_error *err)
{
	static const double reserves[] = PLAN_RESERVES;

	/* (where the plan already pays much for its saving, planning for less
	 * pays more than the algorithms give back: U-Net at 50% of liveness,
	 * +41.9%, gained nothing for 14 times the CPU) */
	if (!faster_algorithms(net, PLAN_RESERVE_GAIN) || out->sim.peak_bytes > req->budget_bytes || out->arena_bytes > req->budget_bytes ||
	    out->sim.time_ms > (1 + PLAN_RESERVE_MAX_OVERHEAD) * out->baseline_ms)
		return 0;
	for (size_t k = 0; k < sizeof(reserves) / sizeof(reserves[0]); k++) {
		struct mp_plan_req other = *req;

		other.ws_reserve = reserves[k];
		other.have_fit = true;
		if (plan_greedy_again(net, r, &other, out, err) < 0)
			return -1;
	}
	return 0;
}

/* Greedy planned again with its swap-ins on the copy engine's queue from
 * its first build (req->queue_swapins), where its plan stalls more than
 * PLAN_QUEUE_STALL of its time: its rounds then weigh swaps as the queue
 * lands them, where placed one at a time they land late (pl_queue_in only
 * re-places the swap-ins of a plan made so).  Each way wins somewhere
 * (U-Net at 50% of liveness, auto: +41.6% -> +23.0%; planned so from the
 * start for every plan, ResNet-50 at 33% +9.0% -> +15.6%), so the faster
 * stays; after the reserve tries, which judge the first plan (they cost
 * 14 s of CPU for nothing on that U-Net cell once it was +23.0%). */
#define PLAN_QUEUE_STALL 0.05

/* Greedy with dynamic workspace weighs its drops and swaps by their time
 * with the faster algorithms, which the arena may then not give them: its
 * plan can cost more than planning as with the default algorithms and
 * giving each step the fastest that fits after (ResNet-152 at 25% of
 * liveness: +53.1%, DTR's evictions, where so +26.4%).  Where its plan does
 * not fit or costs more than PLAN_PLAIN_OVERHEAD over the unconstrained run,
 * greedy is planned again so (req->plain_first), and the faster stays; below
 * it, the second plan gained nothing on the bench's nets for up to twice the
 * CPU. */
#define PLAN_PLAIN_OVERHEAD 0.25

/* A swap-in's place in the order its run is issued in: the action index
 * of its wait (its first use), ties by its own index. */
struct issue {
	uint32_t wait, at;
};

static int by_wait(const void *a, const void *b)
{
	const struct issue *x = a, *y = b;

	if (x->wait != y->wait)
		return x->wait < y->wait ? -1 : 1;
	return x->at < y->at ? -1 : x->at > y->at;
}

/*
 * out's actions in the order ord (ord[k]: the action that goes k-th, a
 * permutation of out's), simulated again and kept where the plan still
 * fits req's budget, peak and arena, and is faster: then *kept and note
 * added.  The arena is placed only where the simulation already fits and
 * is faster; with held->lazy not at all (plan_last_steps places it once,
 * after every reordering): the plan is kept on its simulation, and the
 * one it replaces, where held has none yet, goes to held.  0, or -1 with
 * *err: a reordering that no longer simulates is our bug (what
 * plan_issue_by_use and plan_hoist_swapins make keeps every swap-in after
 * its swap-out and before its wait).
 */
static int plan_try_order(const struct mp_net *net, const struct mp_plan_req *req, struct mp_plan *out,
			  struct pl_held *held, const uint32_t *ord, const char *what, const char *note, bool *kept,
			  struct mp_error *err)
{
	const struct mp_schedule *s = &out->sched;
	bool lazy = held && held->lazy;
	struct mp_plan c = *out;
	int rc;

	*kept = false;
	sched_copy(&c.sched, s, ord);
	memset(&c.sim, 0, sizeof(c.sim));
	c.offset = NULL;
	if ((rc = sim_run(net, &req->device, &c.sched, &c.sim, err)) == 0 &&
	    c.sim.peak_bytes <= req->budget_bytes && c.sim.time_ms < out->sim.time_ms - 1e-9) {
		if (lazy)
			c.arena_bytes = c.max_live_bytes = c.sim.peak_bytes; /* (unplaced: its lower bound) */
		else
			plan_assign_arena_within(net, &c, req->budget_bytes);
		if (lazy || plan_beats(&c, out, req->budget_bytes)) {
			if (lazy && !held->have) {
				held->p = *out;
				held->have = true;
			} else {
				sched_release(&out->sched);
				sim_release(&out->sim);
				free(out->offset);
			}
			*out = c;
			plan_metrics(out, req->budget_bytes);
			plan_note_add(out, "%s", note);
			*kept = true;
			return 0;
		}
	}
	if (rc < 0) {
		char msg[sizeof(err->msg)];

		snprintf(msg, sizeof(msg), "%s", err->msg);
		snprintf(err->msg, sizeof(err->msg), "internal error: %s: %s", what, msg);
	}
	sched_release(&c.sched);
	if (rc == 0)
		sim_release(&c.sim);
	free(c.offset);
	return rc;
}

/*
 * The swap-ins a schedule issues together (a run of swap_in actions before
 * one step) go to the copy engine first come first served, and the
 * planners emit them in tensor order: GPT-2's layer 10 waited behind
 * layers 6 to 9, whose backward comes after it.  Here each run goes in the
 * order of the waits that follow it, the one needed first first (earliest
 * deadline first, which on one engine is what lands them all soonest),
 * simulated again, and kept where the plan still fits, peak and arena, and
 * is faster.  No trigger moves, so no planner's rule changes; done once on
 * the plan plan_run ends with, so none of its re-plans decides
 * differently (done in each attempt, U-Net at 50% of liveness lost: auto
 * +23.0% -> +32.2%).  0, or -1 with *err.
 */
int plan_issue_by_use(const struct mp_net *net, const struct mp_plan_req *req, struct mp_plan *out,
		      struct pl_held *held, struct mp_error *err)
{
	const struct mp_schedule *s = &out->sched;
	uint32_t *wait = mp_xmalloc((net->n_tensors + 1) * sizeof(*wait)), *ord;
	struct issue *run = mp_xmalloc((s->n + 1) * sizeof(*run));
	bool moved = false, kept;
	int rc;

	/* each swap-in's wait: the next one on its tensor */
	for (uint32_t t = 0; t < net->n_tensors; t++)
		wait[t] = UINT32_MAX;
	for (uint32_t i = s->n; i-- > 0;) {
		if (s->a[i].kind == MP_ACT_WAIT)
			wait[s->a[i].tensor] = i;
		else if (s->a[i].kind == MP_ACT_SWAP_IN)
			run[i] = (struct issue){ wait[s->a[i].tensor], i };
	}
	/* run[i] for each action i of a run of swap-ins issued together: the
	 * action that goes there */
	for (uint32_t i = 0, j; i < s->n; i = j + 1) {
		for (j = i; j < s->n && s->a[j].kind == MP_ACT_SWAP_IN; j++)
			;
		if (j - i < 2)
			continue;
		qsort(run + i, j - i, sizeof(*run), by_wait);
		for (uint32_t k = i; k < j; k++)
			moved |= run[k].at != k;
	}
	free(wait);
	if (!moved) { /* (most plans: no two swap-ins issued together) */
		free(run);
		return 0;
	}
	ord = mp_xmalloc((s->n + 1) * sizeof(*ord));
	for (uint32_t i = 0; i < s->n; i++)
		ord[i] = s->a[i].kind == MP_ACT_SWAP_IN ? run[i].at : i;
	free(run);
	rc = plan_try_order(net, req, out, held, ord, "swap-ins in the order of their uses",
			    " (swap-ins issued in the order of their uses)", &kept, err);
	free(ord);
	return rc;
}

/* A swap-in to issue earlier: its action, its new place (behind action
 * at) and the stall it is moved by. */
struct hoist {
	uint32_t in, at;
	double stall;
};

static int by_stall_desc(const void *a, const void *b)
{
	const struct hoist *x = a, *y = b;

	if (x->stall != y->stall)
		return x->stall > y->stall ? -1 : 1;
	return x->in < y->in ? -1 : x->in > y->in;
}

/* A place in the new order: action i where action at was (at = i: it
 * stays); ties by action, so the one that was there goes first and the
 * swap-ins moved there behind it. */
struct okey {
	uint32_t at, i;
};

static int by_okey(const void *a, const void *b)
{
	const struct okey *x = a, *y = b;

	if (x->at != y->at)
		return x->at < y->at ? -1 : 1;
	return x->i < y->i ? -1 : x->i > y->i;
}

/* The swap-ins of out to issue earlier, each with its place: the copies
 * whose waits stall compute, by the wait's stall (from the last compute's
 * end to the wait's: after an earlier wait in the same gap that includes
 * its stall; the copy's own lateness instead lost 12 cells and won 4 on
 * the large examples), and the copies queued back to back ahead of such a
 * copy on the host-to-device engine (each started when the one before
 * ended), by as much, each with HOIST_MARGIN of its copy more.  Placed
 * behind the first action after the last compute that has ended by then
 * and the frees that follow it (so where the next compute follows at once,
 * issued as it ends: ahead of that action instead, 30 of 81 cells of
 * bench/issue-order.sh on the large examples got slower and 13 faster),
 * never before the last action on its tensor (its swap-out, a wait for
 * that, an allocation or free of it).  Returns how many (h[], the
 * caller's, of out's length). */
#define HOIST_MARGIN 0.05

static uint32_t late_swapins(const struct mp_net *net, const struct mp_schedule *s, struct hoist *h)
{
	int32_t *in_at = mp_xmalloc((net->n_tensors + 1) * sizeof(*in_at));
	int32_t *touch = mp_xmalloc((net->n_tensors + 1) * sizeof(*touch));
	uint32_t *comp = mp_xmalloc((s->n + 1) * sizeof(*comp)), n_comp = 0, n = 0, next = UINT32_MAX;
	double *d = mp_xcalloc(s->n + 1, sizeof(*d)), last_end = 0;

	for (uint32_t t = 0; t < net->n_tensors; t++)
		in_at[t] = -1;
	/* each wait's stall, on the swap-in it waits for */
	for (uint32_t i = 0; i < s->n; i++) {
		const struct mp_action *a = &s->a[i];
		int32_t j;

		if (a->kind == MP_ACT_COMPUTE || a->kind == MP_ACT_RECOMPUTE)
			last_end = a->end_ms;
		else if (a->kind == MP_ACT_SWAP_IN)
			in_at[a->tensor] = (int32_t)i;
		else if (a->kind == MP_ACT_SWAP_OUT)
			in_at[a->tensor] = -1; /* (a wait for the swap-out) */
		else if (a->kind == MP_ACT_WAIT && (j = in_at[a->tensor]) >= 0 && a->end_ms - last_end > 1e-9 &&
			 a->end_ms - last_end > d[j])
			d[j] = a->end_ms - last_end;
	}
	/* back along the copies queued back to back */
	for (uint32_t i = s->n; i-- > 0;) {
		if (s->a[i].kind != MP_ACT_SWAP_IN)
			continue;
		if (next != UINT32_MAX && s->a[next].start_ms <= s->a[i].end_ms + 1e-9 && d[next] > d[i])
			d[i] = d[next];
		next = i;
	}
	for (uint32_t t = 0; t < net->n_tensors; t++)
		touch[t] = -1;
	for (uint32_t i = 0; i < s->n; i++) {
		const struct mp_action *a = &s->a[i];
		uint32_t lo = 0, hi = n_comp, p;
		int32_t last;
		double target;

		if (a->kind == MP_ACT_COMPUTE || a->kind == MP_ACT_RECOMPUTE)
			comp[n_comp++] = i;
		if (a->tensor < 0)
			continue;
		/* the last action on its tensor before it (its swap-out, a
		 * wait for that, an allocation or free of it) */
		last = touch[a->tensor];
		touch[a->tensor] = (int32_t)i;
		if (a->kind != MP_ACT_SWAP_IN || d[i] <= 0)
			continue;
		target = a->start_ms - d[i] - HOIST_MARGIN * (a->end_ms - a->start_ms);
		/* the last compute before i that ends by the target (their ends
		 * rise with the order) */
		while (lo < hi) {
			uint32_t mid = lo + (hi - lo) / 2;

			if (s->a[comp[mid]].end_ms <= target)
				lo = mid + 1;
			else
				hi = mid;
		}
		p = lo ? comp[lo - 1] + 1 : 0;
		if ((int32_t)p <= last)
			p = (uint32_t)last + 1;
		while (p < i && s->a[p].kind == MP_ACT_FREE)
			p++;
		if (p + 1 < i) /* (behind i - 1 is where it is) */
			h[n++] = (struct hoist){ i, p, d[i] };
	}
	free(in_at);
	free(touch);
	free(comp);
	free(d);
	return n;
}

/* out's order with the swap-ins h[0 .. n) moved to their places: ord[] */
static void hoisted_order(const struct mp_schedule *s, const struct hoist *h, uint32_t n, struct okey *k,
			  uint32_t *ord)
{
	for (uint32_t i = 0; i < s->n; i++)
		k[i] = (struct okey){ i, i };
	for (uint32_t q = 0; q < n; q++)
		k[h[q].in].at = h[q].at;
	qsort(k, s->n, sizeof(*k), by_okey);
	for (uint32_t i = 0; i < s->n; i++)
		ord[i] = k[i].i;
}

/*
 * Swap-ins issued too late.  The planners place a swap-in's issue on the
 * steps' start times (trigger_rule and queue_swapins read est_start), and
 * the recomputes that rebuild a tensor before a step run before that
 * step's start: a swap-in that feeds such a chain is issued for when the
 * step starts and waited for when the chain does.  BERT at 50% of
 * liveness rebuilt layers 8 to 5's outputs in one chain at 117.95 ms, each
 * from a 12 MiB swap-in issued together at 116.7 ms, and compute waited
 * 1.05 ms before each while the host-to-device engine had been idle since
 * 110 ms.  Here, on a plan that fits, every swap-in whose wait stalls
 * compute, and every copy queued back to back ahead of one, is issued
 * earlier on the simulated timeline by that stall and 5% of its copy
 * (late_swapins), all at once; or, where
 * that no longer fits or is no faster, alone, the largest stall first, at
 * most HOIST_ALONE of them and not on schedules of more than
 * HOIST_ALONE_MAX_ACTIONS actions (each try simulates the whole schedule
 * and may place an arena).  A move is kept where the plan still fits,
 * peak and arena, and is faster (plan_try_order; on large schedules on its
 * simulation, plan_last_steps), and the pass repeats on the new timeline
 * up to HOIST_ROUNDS times.  Like plan_issue_by_use it runs once, on the
 * plan plan_run ends with.
 */
#define HOIST_ROUNDS 8
#define HOIST_ALONE 8
#define HOIST_ALONE_MAX_ACTIONS 20000

int plan_hoist_swapins(const struct mp_net *net, const struct mp_plan_req *req, struct mp_plan *out,
		       struct pl_held *held, struct mp_error *err)
{
	const char *what = "late swap-ins issued earlier", *note = " (late swap-ins issued earlier)";
	bool noted = false;

	/* (after a lazy keep its arena is its peak, so this reads the peak:
	 * plan_settle_held checks the arena) */
	for (int round = 0; round < HOIST_ROUNDS && plan_fits(out, req->budget_bytes); round++) {
		const struct mp_schedule *s = &out->sched;
		struct hoist *h = mp_xmalloc((s->n + 1) * sizeof(*h));
		struct okey *k = mp_xmalloc((s->n + 1) * sizeof(*k));
		uint32_t *ord = mp_xmalloc((s->n + 1) * sizeof(*ord)), n = late_swapins(net, s, h);
		bool kept = false;
		int rc = 0;

		if (n) {
			hoisted_order(s, h, n, k, ord);
			rc = plan_try_order(net, req, out, held, ord, what, noted ? "" : note, &kept, err);
		}
		if (rc == 0 && !kept && n > 1 && s->n <= HOIST_ALONE_MAX_ACTIONS) {
			qsort(h, n, sizeof(*h), by_stall_desc);
			for (uint32_t q = 0; q < n && q < HOIST_ALONE && !kept && rc == 0; q++) {
				hoisted_order(&out->sched, h + q, 1, k, ord);
				rc = plan_try_order(net, req, out, held, ord, what, noted ? "" : note, &kept, err);
			}
		}
		free(h);
		free(k);
		free(ord);
		if (rc < 0)
			return -1;
		if (!kept)
			break;
		noted = true;
	}
	return 0;
}

/*
 * plan_run's last steps: the reorderings of plan_issue_by_use, then of
 * plan_hoist_swapins.  Each plan they keep has its arena placed, tenths of
 * a second on a 10^4-layer schedule: tf-swap on the 10^4-layer fchain at
 * 50% placed four arenas, three of them here.  With lazy (plan_run: on
 * schedules of more than PLAN_LAZY_ARENA_ACTIONS actions; the 10^4-layer
 * fchain's has 120635) they keep a reordering on its simulation alone
 * (peak within the budget, faster), and plan_settle_held places its arena
 * once, after them.
 */
#define PLAN_LAZY_ARENA_ACTIONS 20000

/* out back to the plan held before the first reordering kept */
static void held_restore(struct mp_plan *out, struct pl_held *held)
{
	held->have = false;
	plan_release(out);
	*out = held->p;
}

int plan_settle_held(const struct mp_net *net, const struct mp_plan_req *req, struct mp_plan *out,
		     struct pl_held *held, struct mp_error *err)
{
	if (!held->have)
		return 0;
	plan_assign_arena_within(net, out, req->budget_bytes);
	if (plan_fits(out, req->budget_bytes)) {
		held->have = false;
		plan_release(&held->p);
		return 0;
	}
	/* the steps again from the plan before them, as on small schedules:
	 * what they keep then fits, arena too */
	held_restore(out, held);
	return plan_last_steps(net, req, out, false, err);
}

int plan_last_steps(const struct mp_net *net, const struct mp_plan_req *req, struct mp_plan *out, bool lazy,
		    struct mp_error *err)
{
	struct pl_held held = { .lazy = lazy, .have = false };
	int rc = plan_issue_by_use(net, req, out, &held, err);

	if (rc == 0)
		rc = plan_hoist_swapins(net, req, out, &held, err);
	if (rc < 0) {
		if (held.have)
			held_restore(out, &held);
		return -1;
	}
	return plan_settle_held(net, req, out, &held, err);
}

/* (planners.h.  The arena is not placed: where a move of the steps does
 * not pack, the time is lower than plan_run's last steps leave, and
 * plan_run then plans again weighing raw.  Not on large schedules: each
 * call simulates the schedule up to some seventy times, 1 + 1 + 8 rounds of
 * 1 + 8.) */
int pl_settled_ms(struct pl_state *S, double *ms, struct mp_error *err)
{
	const struct mp_schedule *s = &S->sched;
	struct pl_held held = { .lazy = true, .have = false };
	struct mp_plan c;
	int rc;

	*ms = S->sim.time_ms;
	if (S->req->weigh_raw || S->sim.stall_ms <= 0 || S->sim.peak_bytes > S->req->budget_bytes ||
	    s->n > PLAN_LAZY_ARENA_ACTIONS)
		return 0;
	plan_init(&c);
	sched_copy(&c.sched, s, NULL);
	if ((rc = sim_run(S->net, &S->req->device, &c.sched, &c.sim, err)) == 0) {
		c.arena_bytes = c.max_live_bytes = c.sim.peak_bytes;
		rc = plan_issue_by_use(S->net, S->req, &c, &held, err);
		if (rc == 0)
			rc = plan_hoist_swapins(S->net, S->req, &c, &held, err);
		if (rc == 0)
			*ms = c.sim.time_ms;
		if (rc == 0 && *ms < S->sim.time_ms && S->req->settled_lower)
			*S->req->settled_lower = true;
	}
	if (held.have)
		plan_release(&held.p);
	plan_release(&c);
	return rc;
}

static int plan_run_weighed(const struct mp_net *net, const struct mp_route *r, enum mp_planner which,
			    const struct mp_plan_req *req, struct mp_plan *out, struct mp_error *err)
{
	struct mp_plan_req mine = *req, cur;
	struct pl_alt alt = { .have = false };

	MP_ASSERT(which < MP_PLANNER_AUTO);
	plan_release(out);
	plan_init(out);
	out->planner = which;
	mine.alt = which == MP_PLANNER_GREEDY && req->ws_mode == MP_WS_DYNAMIC && !req->fit_only ? &alt : NULL;
	req = &mine;
	cur = mine;
	if (plan_baseline(net, r, which, req, out, err) < 0 || plan_both_ways(net, r, which, req, out, err) < 0)
		goto fail;
	if (which == MP_PLANNER_GREEDY && req->ws_mode == MP_WS_DYNAMIC &&
	    plan_reserves(net, r, req, out, err) < 0)
		goto fail;
	/* (not where no op has a faster algorithm: the same plan again) */
	if (which == MP_PLANNER_GREEDY && req->ws_mode == MP_WS_DYNAMIC && faster_algorithms(net, 0) &&
	    (!plan_fits(out, req->budget_bytes) ? !req->have_fit :
	     !req->fit_only && out->sim.time_ms > (1 + PLAN_PLAIN_OVERHEAD) * out->baseline_ms)) {
		struct mp_plan_req plain = *req;
		int rc;

		plain.plain_first = true;
		if ((rc = plan_greedy_again(net, r, &plain, out, err)) < 0)
			goto fail;
		cur.plain_first = rc == 1; /* (the queue re-plans the plan kept) */
	}
	/* (have_fit as it was: where only greedy's last start fits, planned
	 * again so it needs that start too, U-Net at 36% of liveness) */
	cur.queue_swapins = true;
	if (which == MP_PLANNER_GREEDY && out->sim.stall_ms > PLAN_QUEUE_STALL * out->sim.time_ms &&
	    !(req->fit_only && plan_fits(out, req->budget_bytes))) {
		/* (where a plan kept aside, planned as with the default
		 * algorithms, beats the plan held, the queue re-plans as with
		 * them too) */
		bool plain_too = !cur.plain_first && alt.have && alt.plain && plan_beats(&alt.p, out, req->budget_bytes);

		if (plan_greedy_again(net, r, &cur, out, err) < 0)
			goto fail;
		if (plain_too) {
			cur.plain_first = true;
			if (plan_greedy_again(net, r, &cur, out, err) < 0)
				goto fail;
		}
	}
	if (alt.have && plan_beats(&alt.p, out, req->budget_bytes)) {
		plan_release(out);
		*out = alt.p;
		alt.have = false;
	}
	if (alt.have)
		plan_release(&alt.p);
	/* (with wr or wd the default algorithms may break the workspace limit) */
	if (which == MP_PLANNER_SUPERNEURONS && (req->ws_mode == MP_WS_NONE || req->ws_mode == MP_WS_DYNAMIC) &&
	    plan_fixed_strategies(net, r, req, out, err) < 0)
		return -1;
	if (plan_last_steps(net, req, out, out->sched.n > PLAN_LAZY_ARENA_ACTIONS, err) < 0)
		return -1;
	plan_metrics(out, req->budget_bytes);
	return 0;
fail:
	if (alt.have)
		plan_release(&alt.p);
	return -1;
}

int plan_jobs_alone(struct mp_net *merged, struct mp_net *const *nets, enum mp_planner which,
		    const struct mp_plan_req *req, uint32_t *failed, struct mp_error *err)
{
	for (uint32_t j = 0; j < merged->n_jobs; j++) {
		struct mp_route r;
		struct mp_plan p;
		int rc;

		*failed = j;
		if (route_build(nets[j], &r, err) < 0)
			return -1;
		plan_init(&p);
		rc = plan_run(nets[j], &r, which, req, &p, err);
		if (rc == 0)
			merged->jobs[j].alone_ms = p.sim.time_ms;
		plan_release(&p);
		route_release(&r);
		if (rc < 0)
			return -1;
	}
	return 0;
}

/*
 * Greedy weighs its swaps for drops, and its passes against each other, by
 * the time a plan runs in after plan_run's last steps (pl_settled_ms), not
 * by its simulated time: a swap whose copy stalls compute, which those
 * steps issue earlier, is weighed without the stall they remove (GPT-2 at
 * 50% of liveness: +13.0% -> +9.3%, bench/plan-quality.md, session 26).
 * Where any plan weighed so was
 * faster than simulated, the weighing may have decided otherwise than the
 * simulated time would, and each wins somewhere (U-Net at 70% of liveness,
 * auto: -21.1% weighed raw, -16.2% settled), so greedy plans again weighing
 * raw (req->weigh_raw), and after both have had the last steps the plan
 * weighed raw stays unless the other beats it (fits where it does not, or
 * is faster): where they tie, the plan greedy made before this weighing.
 * Not again where only fitting is asked and the first fits.
 */
int plan_run(const struct mp_net *net, const struct mp_route *r, enum mp_planner which,
	     const struct mp_plan_req *req, struct mp_plan *out, struct mp_error *err)
{
	struct mp_plan_req mine = *req;
	struct mp_plan q;
	bool lower = false;

	mine.settled_lower = &lower;
	if (plan_run_weighed(net, r, which, &mine, out, err) < 0)
		return -1;
	if (which != MP_PLANNER_GREEDY || !lower || mine.weigh_raw ||
	    (req->fit_only && plan_fits(out, req->budget_bytes)))
		return 0;
	mine.weigh_raw = true;
	mine.settled_lower = NULL;
	plan_init(&q);
	if (plan_run_weighed(net, r, which, &mine, &q, err) < 0) {
		plan_release(&q);
		return -1;
	}
	if (plan_beats(out, &q, req->budget_bytes)) {
		plan_release(&q);
	} else {
		plan_release(out);
		*out = q;
	}
	return 0;
}
