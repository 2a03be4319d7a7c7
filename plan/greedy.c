/*
 * greedy: at each peak in turn, free the excess by the cheapest means per
 * byte, any op's output included (DTR's heuristic, Kirisame et al. 2021,
 * made static from the simulator's peaks as Capuchin does).  Per tensor
 * resident at the peak, the cheapest of:
 *   drop    rebuild it before its first backward reader and keep it to its
 *           last (cost: re-running its forward writers, plus the rebuild of
 *           its dropped inputs, DTR's evicted neighbourhood; refused when
 *           the rebuild keeps more alive at the peak than it frees)
 *   unkeep  a rebuilt tensor waiting for a later reader is dropped again
 *           after each reader, or (late) kept from the reader after the
 *           peak, rebuilt once more (both_ways plans each way)
 *   swap    when the swap-in hides before the next use and the copy engines
 *           stay under GR_LINK_LOAD (Capuchin's rule): cost ~0, or, when the
 *           swap-out would end after the peak, the stall of waiting for it
 * Candidates are taken by cost per byte until their bytes cover the excess;
 * the state is rebuilt and simulated; a round that raises the peak (or makes
 * the sequence longer than GR_MAX_ENTRIES times the route) is undone and
 * retried with half the bytes, a single pick that does is never taken again;
 * repeated until the budget holds or the peak stops coming down.  When the
 * schedule's arena overflows the budget (fragmentation), the rounds go on to
 * a peak lower by the overflow, and then the pass starts afresh lower
 * (greedy_pass).  Then the drops no longer needed are undone, the most
 * expensive first, and re-drops kept once rebuilt, or from a later reader,
 * where the peak allows (undo_drops, late_keeps); the room left under the
 * budget goes back to rebuilds while the arena packs (polish); and a few
 * drops whose rebuilds cost most are undone even though the peak rises, more
 * rounds paying for them elsewhere (exchange); passes that swap then swap
 * drops instead where the copies hide (to_swaps).  Five passes
 * (plan_greedy): recomputation alone, with swaps, and DTR itself, online
 * (plan/dtr.c); between them, from the first
 * pass's drops, where it fits, those drops swapped instead where that is
 * faster, and where it missed, swaps on top (there, when nothing is left
 * to take, compute also waits for the swap-outs still copying at the peak:
 * memplan-plan(5) "wait"), twice: strict (a round of swaps that stalls more
 * than GR_STALL_OVER times its estimate is undone) and not; the best wins:
 * it fits, peak and arena, and is the fastest, or misses by the least.
 * Where a round unkept, all of it again the other way (both_ways).
 * O(rounds * n); the undo passes are bounded to GR_UNDO_BUILDS builds, and
 * to O(1) builds of large schedules, which polish and exchange skip.
 */
#include "planners.h"

#include <stdlib.h>
#include <string.h>

enum gr_how { GR_DROP, GR_UNKEEP, GR_SWAP, GR_SWAP_WAIT };

struct gr_pick {
	struct pl_cand c;
	double cost;       /* estimated milliseconds added */
	enum gr_how how;
};

/* The most of an iteration's time each copy engine may be kept busy by
 * swaps: beyond it the copies queue and their prefetches come late. */
#define GR_LINK_LOAD 0.8

/* strict passes: a round of swaps may add at most GR_STALL_OVER times the
 * time its picks were estimated to add, plus GR_STALL_SLACK of the
 * iteration: greedy's stall estimate sees one copy at a time, not the queue
 * on the engine, and a round of many swaps can stall far more */
#define GR_STALL_OVER 2.0
#define GR_STALL_SLACK 0.05

/* A plan's sequence may be at most this many times the route (rebuilds
 * included): a round whose rebuild chains would make it longer is undone, so
 * every build stays linear. */
#define GR_MAX_ENTRIES 4

/* Builds the undo pass may spend: GR_UNDO_BUILDS, fewer where they would
 * take more than GR_UNDO_WORK scheduled actions in all, never fewer than
 * GR_UNDO_MIN (a 10^4-layer chain: some 1.2 * 10^5 actions a build). */
#define GR_UNDO_BUILDS 96
#define GR_UNDO_WORK (1u << 20)
#define GR_UNDO_MIN 16

static int by_cost_per_byte(const void *a, const void *b)
{
	const struct gr_pick *x = a, *y = b;
	double cx = x->cost / (double)x->c.bytes, cy = y->cost / (double)y->c.bytes;

	if (cx != cy)
		return cx < cy ? -1 : 1;
	if (x->c.gap_ms != y->c.gap_ms)
		return x->c.gap_ms > y->c.gap_ms ? -1 : 1;
	return x->c.t - y->c.t;
}

/*
 * What dropping t costs: the rebuild re-runs t's forward writers, and first
 * the dropped inputs they read (DTR's evicted neighbourhood); an input that
 * is dead at the peak is kept alive until the rebuild, unless it may be
 * dropped too (then it is rebuilt on the way, and what its writers read is
 * kept alive instead).  Returns the bytes the rebuild keeps alive at the
 * peak, *ms its estimated time; apply: mark the inputs dropped on the way.
 * at_peak[x] says what is resident at the peak; what is counted is marked
 * so that the round's later picks do not count it again.
 */
static uint64_t drop_effect(struct pl_state *S, uint8_t *at_peak, int32_t t, bool apply, double *ms)
{
	const struct mp_net *net = S->net;
	uint64_t more = 0;

	*ms = pl_rebuild_ms(S, t);
	for (uint32_t j = S->fw_start[t]; j < S->fw_start[t + 1]; j++) {
		const struct mp_op *w = &net->ops[S->fw_list[j]];

		for (uint32_t k = 0; k < w->n_in; k++) {
			int32_t x = w->in[k];

			if (x == t || sched_persistent(&net->tensors[x]))
				continue;
			if (S->drop[x]) {
				*ms += pl_rebuild_ms(S, x);
			} else if (at_peak[x]) {
				continue;
			} else if (S->droppable[x]) {
				/* dead at the peak: rebuilt on the way, from what its
				 * writers read */
				*ms += pl_rebuild_ms(S, x);
				for (uint32_t i = S->fw_start[x]; i < S->fw_start[x + 1]; i++) {
					const struct mp_op *v = &net->ops[S->fw_list[i]];

					for (uint32_t q = 0; q < v->n_in; q++) {
						int32_t y = v->in[q];

						if (y != x && !at_peak[y] && !S->drop[y] && !sched_persistent(&net->tensors[y])) {
							more += net->tensors[y].bytes;
							at_peak[y] |= apply;
						}
					}
				}
				if (apply) {
					S->drop[x] = 1;
					S->keep[x] = 1;
					S->keep_from[x] = 0;
				}
			} else {
				more += net->tensors[x].bytes;
				at_peak[x] |= apply;
			}
		}
	}
	return more;
}

/* The edits a planner makes, saved to be put back. */
struct gr_saved {
	uint8_t *drop, *keep, *host, *early;
	uint32_t *swap, *floor, *wait, *keep_from;
	double *start;        /* the timeline just-in-time swap-ins were placed on */
};

struct gr_ctx {
	bool swaps;               /* may swap */
	bool gaps;                /* may swap a tensor in several gaps, or a
				   * tensor kept on the host in a gap too */
	bool waits;               /* compute may wait for a swap-out at the peak
				   * when nothing else is left to take */
	struct gr_saved *from;    /* the edits a pass starts from (NULL: none) */
	uint8_t *at_peak;         /* [nt] resident at the current peak */
	uint8_t *tabu;            /* [nt] alone, raised the peak: never taken again */
	int32_t last;             /* the round's last pick */
	struct gr_saved before;   /* the state before the round, to undo one that
				   * raised the peak */
	double link_out, link_in; /* ms of the swaps taken, per engine */
	bool strict;              /* a round of swaps whose stalls the simulator
				   * puts above GR_STALL_OVER times the picks'
				   * estimate (and GR_STALL_SLACK of the
				   * iteration) is undone */
	double round_ms;          /* estimated ms the last round's picks add */
	bool late;                /* unkeep: keep from the reader after the peak */
	uint32_t limit;           /* rounds stop once p->iterations reaches it
				   * (0: PL_MAX_ROUNDS) */
	bool unkept;              /* an unkeep was taken */
};

/* The picks of one round at the current peak.  Returns the count; *out
 * malloc'd. */
static uint32_t gather(struct pl_state *S, const struct gr_ctx *g, struct gr_pick **out)
{
	const struct mp_net *net = S->net;
	const struct mp_device *dev = &S->req->device;
	const struct mp_entry *e = S->entries;
	struct pl_cand *c;
	uint32_t n = pl_peak_candidates(S, PL_CAND_REBUILT | (g->gaps ? PL_CAND_GAPS : 0), &c), m = 0;
	double tp = S->step_start[S->sim.peak_step];
	struct gr_pick pick;

	*out = mp_xmalloc((n + 1) * sizeof(**out));
	for (uint32_t k = 0; k < n; k++) {
		int32_t t = c[k].t;

		if (g->tabu[t])
			continue;
		/* next read in backward: by a backward op or a rebuild */
		bool bwd_use = c[k].next_use != UINT32_MAX &&
			       (e[c[k].next_use].recompute || net->ops[e[c[k].next_use].op].phase != MP_PHASE_FWD);

		if (c[k].rebuilt) {
			double cost;

			drop_effect(S, g->at_peak, t, false, &cost);
			(*out)[m++] = (struct gr_pick){ c[k], cost, GR_UNKEEP };
			continue;
		}
		pick = (struct gr_pick){ c[k], 1e300, GR_DROP };
		/* (not a tensor swapped in another gap: dropped, its gaps
		 * would be those of its rebuilds) */
		if (!c[k].cross && S->droppable[t] && bwd_use && !pl_swapped(S, t)) {
			uint64_t more = drop_effect(S, g->at_peak, t, false, &pick.cost);

			if (more < c[k].bytes)
				pick.c.bytes = c[k].bytes - more;
			else
				pick.cost = 1e300;
		}
		if (g->swaps) {
			double out_ms = device_copy_ms(dev, c[k].bytes, false), in_ms = device_copy_ms(dev, c[k].bytes, true);
			double stall = 0;
			bool hides;

			if (c[k].cross) {
				hides = c[k].gap_ms >= 1.1 * (out_ms + in_ms);
			} else {
				int32_t a = e[c[k].last_use].op;
				double end_a = pl_entry_start(S, c[k].last_use) + sched_op_ms(net, a, S->algo[a]);

				/* a swap-out that would end after the peak is waited for */
				hides = pl_entry_start(S, c[k].next_use) - tp >= 1.1 * in_ms;
				if (end_a + 1.1 * out_ms > tp)
					stall = end_a + 1.1 * out_ms - tp;
			}
			/* the engines' load over the iteration stays under GR_LINK_LOAD */
			hides = hides && g->link_out + out_ms <= GR_LINK_LOAD * S->sim.time_ms &&
				g->link_in + in_ms <= GR_LINK_LOAD * S->sim.time_ms;
			if (hides && stall + 1e-3 * (out_ms + in_ms) < pick.cost)
				pick = (struct gr_pick){ c[k], stall + 1e-3 * (out_ms + in_ms), stall > 0 ? GR_SWAP_WAIT : GR_SWAP };
		}
		if (pick.cost < 1e300)
			(*out)[m++] = pick;
	}
	free(c);
	return m;
}

static void peak_set(const struct pl_state *S, uint8_t *at_peak)
{
	memset(at_peak, 0, S->nt);
	for (uint32_t k = 0; k < S->sim.n_peak_tensors; k++)
		at_peak[S->sim.peak_tensors[k]] = 1;
}

static uint32_t greedy_round(struct pl_state *S, struct gr_ctx *g, uint64_t excess)
{
	const struct mp_device *dev = &S->req->device;
	struct gr_pick *pk;
	uint32_t n, m = 0;
	uint64_t got = 0;
	double q_out = 0, q_in = 0; /* copies taken this round, queued on each engine */

	/* gather only reads at_peak; the picks applied below mark it */
	g->round_ms = 0;
	peak_set(S, g->at_peak);
	n = gather(S, g, &pk);
	qsort(pk, n, sizeof(*pk), by_cost_per_byte);
	for (uint32_t k = 0; k < n && got < excess; k++) {
		const struct pl_cand *c = &pk[k].c;

		switch (pk[k].how) {
		case GR_DROP: {
			double ms;

			if (drop_effect(S, g->at_peak, c->t, true, &ms) >= S->net->tensors[c->t].bytes)
				continue; /* an earlier pick of the round made it useless */
			S->drop[c->t] = 1;
			S->keep[c->t] = 1;
			S->keep_from[c->t] = 0;
			break;
		}
		case GR_UNKEEP:
			/* late: kept from the reader after the peak, rebuilt once
			 * more; else rebuilt for every reader */
			if (g->late && c->next_use != UINT32_MAX)
				S->keep_from[c->t] = S->entry_step[c->next_use];
			else
				S->keep[c->t] = 0;
			g->unkept = true;
			break;
		case GR_SWAP:
		case GR_SWAP_WAIT: {
			double o = device_copy_ms(dev, c->bytes, false), i = device_copy_ms(dev, c->bytes, true);

			/* the copies of this round share the engines: stop taking swaps
			 * whose queue no longer fits the gap */
			if (!c->cross && (q_out + o > c->gap_ms / 2 || q_in + i > c->gap_ms / 2) && pk[k].how == GR_SWAP)
				continue;
			q_out += o;
			q_in += i;
			g->link_out += o;
			g->link_in += i;
			pl_swap(S, c);
			if (pk[k].how == GR_SWAP_WAIT)
				S->out_wait[c->t] = S->sim.peak_step;
			break;
		}
		}
		got += c->bytes;
		g->last = c->t;
		g->round_ms += pk[k].cost;
		m++;
	}
	free(pk);
	return m;
}

struct undo {
	int32_t t;
	double ms;
	uint8_t keep;   /* S->keep[t] while dropped */
	uint8_t rekeep; /* the edit keeps t once rebuilt for a reader at route
			 * step from or later (keep 1, keep_from from)
			 * instead of undoing its drop */
	uint32_t swap_at; /* the edit swaps t, in the gap that holds this
			   * route step, instead of dropping it (0: not a swap) */
	uint32_t from;     /* rekeep: the keep_from it sets */
	uint32_t from_was; /* S->keep_from[t] before the edit */
};

static int by_ms_desc(const void *a, const void *b)
{
	const struct undo *x = a, *y = b;

	if (x->ms != y->ms)
		return x->ms > y->ms ? -1 : 1;
	return x->t - y->t;
}

/* Make the edits d[0..m) (undo: put a drop back, or keep a tensor dropped
 * again after readers once rebuilt), or take them back. */
static void undo_set(struct pl_state *S, struct undo *d, uint32_t m, bool undo)
{
	for (uint32_t k = 0; k < m; k++) {
		int32_t t = d[k].t;

		/* (an undone drop keeps no step: dropped again, it is kept from
		 * its first rebuild) */
		S->keep_from[t] = !undo ? d[k].from_was : d[k].rekeep ? d[k].from : 0;
		if (d[k].rekeep) {
			S->keep[t] = undo ? 1 : d[k].keep;
			continue;
		}
		if (d[k].swap_at && undo)
			pl_gap_add(S, t, d[k].swap_at);
		else if (d[k].swap_at)
			pl_gap_remove(S, t, d[k].swap_at);
		S->drop[t] = !undo;
		S->keep[t] = undo ? 0 : d[k].keep;
	}
}

/* The edits d[0..nd) tried in runs that double after each success and
 * halve after a failure, down to one edit, which then stays, while the peak
 * stays at most target and the plan gets no slower (with settled, no slower
 * after plan_run's last steps, pl_settled_ms; *best is then such a time),
 * up to *builds < most.  Returns -1 on error, else whether the state is
 * built on the last edit tried (kept). */
static int undo_runs(struct pl_state *S, struct mp_plan *p, struct undo *d, uint32_t nd, uint64_t target,
		     double *best, uint32_t *builds, uint32_t most, bool settled, struct mp_error *err)
{
	size_t steps = S->r->n * sizeof(*S->step_start);
	/* the timeline the last kept build placed its swap-ins on (acc_in),
	 * and the one it made (acc_out): a rejected try's build moved
	 * step_start, and swap-ins placed on that are not the kept ones */
	double *acc_in = mp_xmalloc(steps + sizeof(double)), *acc_out = mp_xmalloc(steps + sizeof(double));
	uint32_t run = 1;
	int kept = 1, rc = 0;
	double ms;

	memcpy(acc_in, S->placed_on, steps);
	memcpy(acc_out, S->step_start, steps);
	for (uint32_t k = 0; k < nd && *builds < most;) {
		uint32_t m = run < nd - k ? run : nd - k;

		undo_set(S, d + k, m, true);
		++*builds;
		p->iterations++;
		if ((rc = pl_build(S, err)) < 0)
			break;
		ms = S->sim.time_ms;
		if (rc == 0 && settled && S->sim.peak_bytes <= target && (rc = pl_settled_ms(S, &ms, err)) < 0)
			break;
		kept = rc == 0 && S->sim.peak_bytes <= target && ms <= *best;
		if (kept) {
			*best = ms;
			memcpy(acc_in, S->placed_on, steps);
			memcpy(acc_out, S->step_start, steps);
			k += m;
			run = 2 * m;
			continue;
		}
		undo_set(S, d + k, m, false);
		memcpy(S->step_start, acc_out, steps);
		if (m == 1)
			k++;
		run = m > 1 ? m / 2 : 1;
	}
	/* not built on the kept edits: placed as they were when kept (and so
	 * a later undo_runs, which reads placed_on, starts from there) */
	if (!kept && rc >= 0) {
		memcpy(S->step_start, acc_in, steps);
		memcpy(S->placed_on, acc_in, steps);
	}
	free(acc_in);
	free(acc_out);
	return rc < 0 ? -1 : kept;
}

/* The builds an undo pass may spend on S's schedule: about GR_UNDO_WORK
 * scheduled actions in all, at least GR_UNDO_MIN, at most cap. */
static uint32_t undo_builds(const struct pl_state *S, uint32_t cap)
{
	uint32_t most = GR_UNDO_WORK / (S->sched.n + 1);

	return most < GR_UNDO_MIN ? GR_UNDO_MIN : most > cap ? cap : most;
}

/* Late keeps, tried after re-keeping from the first rebuild: a tensor
 * dropped again after each reader and rebuilt for readers at more than
 * j + 1 route steps is kept from the (j + 1)-th of them (keep_from), its
 * rebuilds before it staying temporary: the memory is held only over the
 * readers that follow (ResNet-50 at 33%: layer1.1's output, rebuilt once in
 * layer2.0's backward for layer1.2's output and three times in layer1.2's,
 * kept from the second).  Fills d from the last build's sequence, each
 * edit weighed by the re-runs it saves; returns the count. */
#define GR_LATE_KEEPS 4
#define GR_LATE_BUILDS 32

static uint32_t late_keeps(struct pl_state *S, struct undo *d, uint32_t j)
{
	const struct mp_net *net = S->net;
	uint32_t *n = mp_xcalloc(S->nt + 1, sizeof(*n)), *last = mp_xmalloc((S->nt + 1) * sizeof(*last));
	uint32_t *from = mp_xcalloc(S->nt + 1, sizeof(*from)), nd = 0;
	double *ms = mp_xcalloc(S->nt + 1, sizeof(*ms));

	memset(last, 0xff, (S->nt + 1) * sizeof(*last));
	for (uint32_t i = 0; i < S->n_entries; i++) {
		const struct mp_op *op = &net->ops[S->entries[i].op];
		uint32_t step = S->entry_step[i];

		for (uint32_t k = 0; S->entries[i].recompute && k < op->n_out; k++) {
			int32_t y = op->out[k];

			if (!S->drop[y] || S->keep[y])
				continue;
			ms[y] += sched_op_ms(net, S->entries[i].op, S->algo[S->entries[i].op]);
			if (last[y] == step)
				continue;
			last[y] = step;
			if (n[y]++ == j)
				from[y] = step;
		}
	}
	for (uint32_t t = 0; t < S->nt; t++)
		if (n[t] > j + 1)
			d[nd++] = (struct undo){ (int32_t)t, ms[t] * (n[t] - j - 1) / n[t], 0, 1, 0, from[t],
						 S->keep_from[t] };
	free(n);
	free(last);
	free(from);
	free(ms);
	return nd;
}

/*
 * Undo drops the plan does not need, the most expensive rebuild first, while
 * its peak stays at most target and it gets no slower, within the builds
 * GR_UNDO_* allow (undo_runs: where the rounds went far below the target, a
 * 10^4-layer chain: 4473 drops, the first 96 tried one by one all undone, a
 * build puts many back; where most drops are needed, ResNet-50 at 33%: 13 of
 * 79 undone, it costs about one build per drop).  Then the tensors still
 * dropped again after each reader are kept once rebuilt where the peak
 * allows: a round unkept them for a peak that later rounds lowered
 * elsewhere (ResNet-50 at 33%: layer1.1's output rebuilt three times over
 * for three readers while memory 150 MiB under the budget sat free).
 */
static int undo_drops(struct pl_state *S, struct mp_plan *p, uint64_t target, uint32_t cap, struct mp_error *err)
{
	uint32_t nd = 0, builds = 0, most = undo_builds(S, cap);
	struct undo *d = mp_xmalloc((S->nt + 1) * sizeof(*d));
	double best = S->sim.time_ms;
	int kept = 1;

	for (int rekeep = 0; rekeep < 2 && kept >= 0; rekeep++) {
		nd = 0;
		for (uint32_t t = 0; t < S->nt; t++)
			if (S->drop[t] && (!rekeep || !S->keep[t]))
				d[nd++] = (struct undo){ (int32_t)t, pl_rebuild_ms(S, (int32_t)t), S->keep[t],
							 (uint8_t)rekeep, 0, 0, S->keep_from[t] };
		qsort(d, nd, sizeof(*d), by_ms_desc);
		if (nd && builds < most) /* else kept stays: whether S is built on the edits */
			kept = undo_runs(S, p, d, nd, target, &best, &builds, most, false, err);
	}
	/* late keeps have builds of their own: where most drops are needed
	 * the first two phases spend the allowance */
	most = builds + undo_builds(S, GR_LATE_BUILDS);
	for (uint32_t j = 1; j < GR_LATE_KEEPS && kept >= 0 && builds < most; j++) {
		if (!kept) {
			builds++;
			p->iterations++;
			if ((kept = pl_build(S, err)) != 0)
				break; /* 1: cannot be, it was built before */
			kept = 1;
		}
		nd = late_keeps(S, d, j);
		qsort(d, nd, sizeof(*d), by_ms_desc);
		if (nd)
			kept = undo_runs(S, p, d, nd, target, &best, &builds, most, false, err);
	}
	free(d);
	return kept < 0 ? -1 : kept ? 0 : pl_build(S, err);
}

static void saved_init(struct gr_saved *v, size_t n, size_t steps)
{
	v->start = mp_xmalloc((steps + 1) * sizeof(*v->start));
	v->drop = mp_xmalloc(n);
	v->keep = mp_xmalloc(n);
	v->host = mp_xmalloc(n);
	v->early = mp_xmalloc(n);
	v->swap = mp_xmalloc(n * PL_GAPS * sizeof(*v->swap));
	v->floor = mp_xmalloc(n * sizeof(*v->floor));
	v->wait = mp_xmalloc(n * sizeof(*v->wait));
	v->keep_from = mp_xmalloc(n * sizeof(*v->keep_from));
}

static void saved_release(struct gr_saved *v)
{
	free(v->drop);
	free(v->keep);
	free(v->host);
	free(v->early);
	free(v->swap);
	free(v->floor);
	free(v->wait);
	free(v->keep_from);
	free(v->start);
}

#define GR_COPY(a, b, sz) memcpy(restore ? (a) : (b), restore ? (b) : (a), (sz))

/* Save S's edits into v, or (restore) put v's back; not the timeline. */
static void snapshot_edits(struct pl_state *S, struct gr_saved *v, bool restore)
{
	size_t n = S->nt;

	GR_COPY(S->drop, v->drop, n);
	GR_COPY(S->keep, v->keep, n);
	GR_COPY(S->host, v->host, n);
	GR_COPY(S->host_early, v->early, n);
	GR_COPY(S->swap_step, v->swap, n * PL_GAPS * sizeof(*S->swap_step));
	GR_COPY(S->in_floor, v->floor, n * sizeof(*S->in_floor));
	GR_COPY(S->out_wait, v->wait, n * sizeof(*S->out_wait));
	GR_COPY(S->keep_from, v->keep_from, n * sizeof(*S->keep_from));
}

/* Save S's edits and the timeline its last build placed swap-ins on into
 * v, or (restore) put them back: built again, the same schedule. */
static void snapshot(struct pl_state *S, struct gr_saved *v, bool restore)
{
	snapshot_edits(S, v, restore);
	GR_COPY(restore ? S->step_start : S->placed_on, v->start, S->r->n * sizeof(*S->step_start));
}
#undef GR_COPY

/* Put v's edits back and build them again (pl_build's answer). */
static int put_back(struct pl_state *S, struct mp_plan *p, struct gr_saved *v, struct mp_error *err)
{
	snapshot(S, v, true);
	p->iterations++;
	return pl_build(S, err);
}

/*
 * Rounds until the peak is at most target.  A round that raises the peak (a
 * rebuild chain that materialises more than it saved), or in a strict pass
 * takes swaps that stall beyond GR_STALL_OVER times the picks' estimate, is
 * undone and tried again with half the bytes; a single pick that does is
 * never taken again.
 */
static int rounds(struct pl_state *S, struct mp_plan *p, struct gr_ctx *g, uint64_t target, struct mp_error *err)
{
	uint64_t best = UINT64_MAX;
	uint32_t stale = 0, halve = 0;
	bool wait;
	int rc;

	while (S->sim.peak_bytes > target && p->iterations < (g->limit ? g->limit : PL_MAX_ROUNDS)) {
		uint64_t before = S->sim.peak_bytes, excess = before - target;
		double link_out = g->link_out, link_in = g->link_in, ms_before = S->sim.time_ms;
		uint32_t m;

		if (S->sim.peak_bytes < best) {
			best = S->sim.peak_bytes;
			stale = 0;
		} else if (++stale > PL_MAX_STALE_ROUNDS) {
			break;
		}
		if (g->swaps && pl_delay_swapins(S)) {
			p->iterations++;
			if (pl_build(S, err) < 0)
				return -1;
			continue;
		}
		snapshot(S, &g->before, false);
		m = greedy_round(S, g, halve < 63 ? (excess >> halve) | 1 : 1);
		/* nothing left to take: compute waits for the swap-outs still
		 * copying at the peak (their memory is free only at their end) */
		wait = !m && g->waits;
		if (!m && !(wait && pl_wait_swapouts(S)))
			break;
		p->iterations++;
		if ((rc = pl_build(S, err)) < 0)
			return -1;
		if (rc == 0 && (wait ? S->sim.peak_bytes < before : S->sim.peak_bytes <= before) &&
		    (!g->strict || wait || g->link_out == link_out ||
		     S->sim.time_ms - ms_before <= GR_STALL_OVER * g->round_ms + GR_STALL_SLACK * ms_before)) {
			halve = 0;
			continue;
		}
		/* undo the round: a round whose sequence was over max_entries
		 * was not built, and S is still built on the edits before it */
		g->link_out = link_out;
		g->link_in = link_in;
		if (rc == 1) {
			snapshot_edits(S, &g->before, true);
		} else {
			snapshot(S, &g->before, true);
			p->iterations++;
			if (pl_build(S, err) < 0)
				return -1;
		}
		if (wait)
			break; /* the waits did not lower the peak: nothing left */
		if (m == 1)
			g->tabu[g->last] = 1;
		else
			halve++;
	}
	return 0;
}

/*
 * What the plan's time will be once it is done: with --workspace dynamic,
 * after each convolution takes the fastest algorithm whose workspace fits
 * what the plan leaves free (pl_dynamic_workspace, which plan_run applies
 * next), so that giving room back to rebuilds is weighed against giving it
 * to faster algorithms; either way after plan_run's last steps issue its
 * late swap-ins earlier (pl_settled_ms).  *packed (when asked):
 * the same, but where the arena does not pack with those algorithms the
 * time with the planned ones, as plan_run first takes such a plan (it then
 * also plans lower, which this does not foresee).  *ms does not ask the
 * packing (it costs up to some hundred builds), so it may favour room the
 * plan then cannot give to them.  The state is rebuilt as it was.  0, or
 * -1 with *err.
 */
static int final_ms(struct pl_state *S, double *ms, double *packed, struct mp_error *err)
{
	size_t n = S->net->n_ops * sizeof(*S->algo), steps = S->r->n * sizeof(*S->step_start);
	int32_t *algo;
	double *start;
	int rc;

	if (pl_settled_ms(S, ms, err) < 0)
		return -1;
	if (packed)
		*packed = *ms;
	if (S->req->ws_mode != MP_WS_DYNAMIC)
		return 0;
	algo = mp_xmalloc(n + sizeof(*algo));
	start = mp_xmalloc(steps + sizeof(*start));
	memcpy(algo, S->algo, n);
	memcpy(start, S->placed_on, steps);
	if ((rc = pl_dynamic_workspace(S, err)) == 0 && (rc = pl_settled_ms(S, ms, err)) == 0) {
		if (packed && (!memcmp(algo, S->algo, n) || pl_overflow(S, S->req->budget_bytes) == 0))
			*packed = *ms;
		/* back, swap-ins placed on the timeline they were placed on */
		memcpy(S->algo, algo, n);
		memcpy(S->step_start, start, steps);
		rc = pl_build(S, err) < 0 ? -1 : 0;
	}
	free(algo);
	free(start);
	return rc;
}

/* The plan's fragmentation: its arena over its peak. */
static uint64_t frag_of(struct pl_state *S)
{
	uint64_t arena = pl_arena_bytes(S, S->req->budget_bytes);

	return arena > S->sim.peak_bytes ? arena - S->sim.peak_bytes : 0;
}

/* Whether polish and exchange apply: the plan fits, peak and arena, and
 * its schedule is not so large that undo_drops gets only GR_UNDO_MIN builds
 * (there its builds went to undo_drops).  *frag: frag_of. */
static bool room_back(struct pl_state *S, uint64_t *frag)
{
	if (GR_UNDO_WORK / (S->sched.n + 1) < GR_UNDO_MIN || pl_overflow(S, S->req->budget_bytes) > 0)
		return false;
	*frag = frag_of(S);
	return true;
}

/*
 * A plan whose arena packs but whose peak the rounds took below the budget
 * (to leave room for fragmentation, or because a round overshot) gives some
 * of the room back: undo_drops up to the budget less the fragmentation the
 * plan has now (its arena over its peak), or, when that is not kept, less
 * twice the fragmentation; kept when its arena still packs and its
 * final_ms is lower (with the
 * re-keeping of undo_drops, ResNet-50 at 33%: +24.4% -> +22.6%).  Two arena
 * packings at most: one costs some hundred builds.  Not on schedules so
 * large that undo_drops gets GR_UNDO_MIN builds (a 10^4-layer chain: 16
 * more builds, 1 s, for 0.1 points).
 */
static int polish(struct pl_state *S, struct mp_plan *p, struct gr_ctx *g, struct mp_error *err)
{
	uint64_t budget = S->req->budget_bytes, frag;
	double was;

	if (!room_back(S, &frag))
		return 0;
	if (final_ms(S, &was, NULL, err) < 0)
		return -1;
	for (int k = 0; k < 2 && S->sim.peak_bytes < budget && (frag << k) < budget - S->sim.peak_bytes; k++) {
		double ms = S->sim.time_ms, now = ms;
		bool faster;

		snapshot(S, &g->before, false);
		if (undo_drops(S, p, budget - (frag << k), GR_UNDO_BUILDS, err) < 0)
			return -1;
		faster = S->sim.time_ms < ms;
		if (faster && final_ms(S, &now, NULL, err) < 0)
			return -1;
		if (faster && now < was && S->sim.peak_bytes <= budget && pl_overflow(S, budget) == 0)
			return 0;
		if (put_back(S, p, &g->before, err) < 0)
			return -1;
		if (!faster)
			break; /* nothing undone: a lower target undoes no more */
	}
	return 0;
}

/*
 * Rounds to the budget; then, while the schedule's arena overflows it
 * (fragmentation), more rounds from the same state to a peak lower by the
 * overflow, up to GR_ARENA_STEPS times: the state only ever gets smaller
 * (greedy_pass also starts afresh lower: the two find different plans).  Then
 * the drops the lowered peak does not need are undone.
 */
#define GR_ARENA_STEPS 4

static int greedy_run(struct pl_state *S, struct mp_plan *p, struct gr_ctx *g, uint64_t start, uint64_t *first_over,
		      struct mp_error *err)
{
	uint64_t budget = S->req->budget_bytes, target = start, aim = start;

	if (pl_build(S, err) < 0)
		return -1;
	for (int k = 0;; k++) {
		uint64_t arena, peak = S->sim.peak_bytes;

		aim = target;
		if (rounds(S, p, g, target, err) < 0)
			return -1;
		if (S->sim.peak_bytes > budget || (k && S->sim.peak_bytes >= peak))
			break; /* over, or no lower than the last arena's peak */
		arena = pl_arena_bytes(S, budget);
		target = S->sim.peak_bytes;
		if (k == 0)
			*first_over = arena > budget ? arena - budget : 0;
		if (arena <= budget || k == GR_ARENA_STEPS || S->sim.peak_bytes <= arena - budget)
			break;
		target -= arena - budget;
	}
	if (S->sim.peak_bytes > target)
		return 0;
	/* the rounds may have gone below what they aimed at: undo up to the aim,
	 * unless the arena then overflows (then up to the peak they reached) */
	if (aim > target && pl_overflow(S, S->req->budget_bytes) == 0) {
		snapshot(S, &g->before, false);
		if (undo_drops(S, p, aim, GR_UNDO_BUILDS, err) < 0)
			return -1;
		if (pl_overflow(S, S->req->budget_bytes) == 0)
			return 0;
		if (put_back(S, p, &g->before, err) < 0)
			return -1;
	}
	return undo_drops(S, p, target, GR_UNDO_BUILDS, err);
}

/*
 * Exchanges: a drop undone, or a tensor dropped again after each reader
 * kept once rebuilt, that would save time but raise the peak past what
 * undo_drops allowed, taken anyway, and the peak brought back down by more
 * rounds, which may not take that tensor again (they would first: its
 * cost per byte was estimated lowest), to the budget less the plan's
 * fragmentation; the result stays when it is faster (final_ms) and its
 * arena still packs.  The GR_EXCHANGE_RANK moves whose rebuilds cost most
 * now are built alone to measure what each saves, and the GR_EXCHANGES
 * that save most are tried, the best first (VGG-16 at 50% of liveness:
 * +43.0% -> +37.6%, U-Net at 50% +53.2% -> +47.9%).  A try costs its
 * rounds, GR_UNDO_MIN undo builds and an arena packing.  tmp: room for a
 * snapshot.
 */
#define GR_EXCHANGES 4
#define GR_EXCHANGE_RANK 16

static int exchange(struct pl_state *S, struct mp_plan *p, struct gr_ctx *g, struct gr_saved *tmp,
		    struct mp_error *err)
{
	uint64_t budget = S->req->budget_bytes, frag;
	double link_out = g->link_out, link_in = g->link_in;
	uint32_t nd = 0;
	struct undo *d;
	double ms0 = S->sim.time_ms, was;
	int rc = 0;

	if (!room_back(S, &frag))
		return 0;
	d = mp_xmalloc((2 * S->nt + 1) * sizeof(*d));
	for (uint32_t t = 0; t < S->nt; t++) {
		if (!S->drop[t])
			continue;
		d[nd++] = (struct undo){ (int32_t)t, 0, S->keep[t], 0, 0, 0, S->keep_from[t] };
		if (!S->keep[t])
			d[nd++] = (struct undo){ (int32_t)t, 0, 0, 1, 0, 0, S->keep_from[t] };
	}
	/* rank: by what their writers' re-runs cost now (a rekeep saves all
	 * but one), then the GR_EXCHANGE_RANK first by the time each saves
	 * alone, built */
	{
		double *re = mp_xcalloc(S->nt + 1, sizeof(*re));
		uint32_t *runs = mp_xcalloc(S->nt + 1, sizeof(*runs));

		for (uint32_t i = 0; i < S->n_entries; i++) {
			const struct mp_op *op = &S->net->ops[S->entries[i].op];

			for (uint32_t k = 0; S->entries[i].recompute && k < op->n_out; k++) {
				re[op->out[k]] += sched_op_ms(S->net, S->entries[i].op, S->algo[S->entries[i].op]);
				runs[op->out[k]]++;
			}
		}
		for (uint32_t k = 0; k < nd; k++)
			d[k].ms = d[k].rekeep ? re[d[k].t] * (runs[d[k].t] - 1) / (runs[d[k].t] + !runs[d[k].t]) : re[d[k].t];
		free(re);
		free(runs);
	}
	qsort(d, nd, sizeof(*d), by_ms_desc);
	nd = nd < GR_EXCHANGE_RANK ? nd : GR_EXCHANGE_RANK;
	/* each built alone on the timeline the plan was built on */
	snapshot(S, tmp, false);
	for (uint32_t k = 0; k < nd; k++) {
		snapshot(S, tmp, true);
		undo_set(S, d + k, 1, true);
		p->iterations++;
		if ((rc = pl_build(S, err)) < 0)
			break;
		d[k].ms = rc == 0 ? ms0 - S->sim.time_ms : 0;
	}
	qsort(d, nd, sizeof(*d), by_ms_desc);
	if (rc >= 0)
		rc = put_back(S, p, tmp, err);
	if (rc >= 0)
		rc = final_ms(S, &was, NULL, err);
	for (uint32_t k = 0, tried = 0; rc >= 0 && k < nd && tried < GR_EXCHANGES && d[k].ms > 1e-6; k++) {
		/* rounds to the budget less the fragmentation the plan has now */
		uint64_t target = frag < budget ? budget - frag : 0;
		double ms = S->sim.time_ms, now = ms;

		if (d[k].rekeep ? S->keep[d[k].t] || !S->drop[d[k].t] : !S->drop[d[k].t])
			continue; /* an earlier exchange made it */
		tried++;
		snapshot(S, tmp, false);
		undo_set(S, d + k, 1, true);
		memset(g->tabu, 0, S->nt + 1);
		g->tabu[d[k].t] = 1; /* the rounds would take it first again */
		p->iterations++;
		if ((rc = pl_build(S, err)) < 0)
			break;
		if (rc == 0 && (rounds(S, p, g, target, err) < 0 ||
				(S->sim.peak_bytes <= target && undo_drops(S, p, target, GR_UNDO_MIN, err) < 0))) {
			rc = -1;
			break;
		}
		if (rc == 0 && S->sim.peak_bytes <= target && S->sim.time_ms < ms &&
		    (rc = final_ms(S, &now, NULL, err)) < 0)
			break;
		if (rc == 0 && S->sim.peak_bytes <= target && S->sim.time_ms < ms && now < was &&
		    pl_overflow(S, budget) == 0) {
			was = now;
			link_out = g->link_out;
			link_in = g->link_in;
			frag = frag_of(S);
			continue;
		}
		g->link_out = link_out;
		g->link_in = link_in;
		rc = put_back(S, p, tmp, err);
	}
	free(d);
	return rc < 0 ? -1 : 0;
}

/*
 * Swaps for drops: a dropped tensor is swapped instead, out after its last
 * forward use and back before its first backward one, where the copies
 * hide and its rebuild is saved.  The rounds cannot find these: at a peak
 * they take every swap that hides alone, and many such swaps queue on the
 * copy engine and come late (GPT-2 at 50% of liveness: greedy's pass with
 * swaps misses by 2 GiB at +149%); swapped one drop at a time, each tried
 * in the simulator, the early layers' outputs go to the host while the
 * forward runs and only those whose copies still hide stay.  Tried in
 * undo_runs, the rebuilds dearest per byte copied first, while the peak
 * stays under the budget less the plan's fragmentation and the plan gets
 * no slower; kept when its arena still packs and its final_ms, packed, is
 * lower: swaps hold memory until their copies end, and a plan that leaves
 * the faster convolutions no room in the arena is weighed without them
 * (auto on VGG-16 at 50% of PyTorch's peak: +39.7% -> +16.2%; weighing all
 * of greedy's end of pass so loses VGG-16 at 70%, +9.5% -> +14.3%).  Where
 * the weighing without the packing decides otherwise, p->weigh_split says
 * so, and plan_run plans again weighing that way (req->swaps_unpacked):
 * neither foresees plan_run planning lower, and each wins somewhere.
 * Within undo_drops' builds.
 */
static int to_swaps(struct pl_state *S, struct mp_plan *p, struct mp_error *err)
{
	const struct mp_net *net = S->net;
	const struct mp_route *r = S->r;
	uint64_t budget = S->req->budget_bytes, frag;
	uint32_t nd = 0, builds = 0, *after;
	struct gr_saved was_state;
	struct undo *d;
	double best, was, now = 0, was_p, now_p = 0;
	int rc;

	if (!room_back(S, &frag) || frag >= budget)
		return 0;
	/* the route step after each tensor's last forward use */
	after = mp_xcalloc(S->nt + 1, sizeof(*after));
	for (uint32_t i = 0; i < r->n && net->ops[r->op[i]].phase == MP_PHASE_FWD; i++) {
		const struct mp_op *op = &net->ops[r->op[i]];

		for (uint32_t k = 0; k < op->n_in + op->n_out; k++)
			after[k < op->n_in ? op->in[k] : op->out[k - op->n_in]] = i + 1;
	}
	/* (a gap that holds step after[t]: the op there does not touch t) */
	for (uint32_t i = 0; i < r->n; i++) {
		const struct mp_op *op = &net->ops[r->op[i]];

		for (uint32_t k = 0; k < op->n_in + op->n_out; k++) {
			int32_t t = k < op->n_in ? op->in[k] : op->out[k - op->n_in];

			if (after[t] == i)
				after[t] = 0;
		}
	}
	d = mp_xmalloc((S->nt + 1) * sizeof(*d));
	for (uint32_t t = 0; t < S->nt; t++)
		if (S->drop[t] && after[t] && after[t] < r->n && !pl_swapped(S, (int32_t)t))
			d[nd++] = (struct undo){ (int32_t)t, pl_rebuild_ms(S, (int32_t)t) / (double)(net->tensors[t].bytes + 1),
						 S->keep[t], 0, after[t], 0, S->keep_from[t] };
	free(after);
	if (!nd || (rc = final_ms(S, &was, &was_p, err)) < 0) {
		free(d);
		return nd ? -1 : 0;
	}
	qsort(d, nd, sizeof(*d), by_ms_desc);
	if (pl_settled_ms(S, &best, err) < 0) {
		free(d);
		return -1;
	}
	saved_init(&was_state, S->nt + 1, r->n);
	snapshot(S, &was_state, false);
	rc = undo_runs(S, p, d, nd, budget - frag, &best, &builds, undo_builds(S, GR_UNDO_BUILDS), true, err);
	if (rc == 0)
		rc = pl_build(S, err) < 0 ? -1 : 1;
	if (rc > 0)
		rc = final_ms(S, &now, &now_p, err);
	if (rc == 0 && (now < was) != (now_p < was_p))
		p->weigh_split = true;
	if (rc == 0 && !((S->req->swaps_unpacked ? now < was : now_p < was_p) && pl_overflow(S, budget) == 0))
		rc = put_back(S, p, &was_state, err);
	saved_release(&was_state);
	free(d);
	return rc < 0 ? -1 : 0;
}

/*
 * A pass that misses (greedy's last start, S->many_gaps): its drops swapped
 * instead in every gap between their uses, the largest first, each kept
 * where the overflow comes down; then rounds again to the budget.  The rounds drop a tensor at the first peak it
 * helps and never take that back where the plan misses: a skip
 * connection's output dropped at a backward peak is rebuilt there from the
 * start of the net, with the large activations that rebuild reads (U-Net
 * at 36% of liveness: enc1's two 79 MiB outputs at dec1's backward), where
 * swapped it would cost no memory in either of its gaps (on to the
 * decoder's forward, and on to its own backward).  A tensor with more than
 * PL_GAPS gaps is swapped in its first PL_GAPS.  GR_GAP_BUILDS drops are
 * tried, a build each and one more to put a try back.  0, or -1 with *err.
 */
#define GR_GAP_BUILDS 64

static int drops_to_gaps(struct pl_state *S, struct mp_plan *p, struct gr_ctx *g, struct mp_error *err)
{
	const struct mp_net *net = S->net;
	const struct mp_route *r = S->r;
	uint64_t budget = S->req->budget_bytes, over = pl_overflow(S, budget);
	uint32_t *last = mp_xmalloc((S->nt + 1) * sizeof(*last)), *cand = mp_xmalloc((S->nt + 1) * sizeof(*cand));
	uint32_t (*gap)[PL_GAPS] = mp_xmalloc((S->nt + 1) * sizeof(*gap)), nc = 0, kept = 0;
	int rc = 0;

	/* each tensor's gaps, a route step in each: between two uses with a
	 * step in between */
	memset(last, 0xff, (S->nt + 1) * sizeof(*last));
	memset(gap, 0xff, (S->nt + 1) * sizeof(*gap));
	for (uint32_t i = 0; i < r->n; i++) {
		const struct mp_op *op = &net->ops[r->op[i]];

		for (uint32_t k = 0; k < op->n_in + op->n_out; k++) {
			int32_t t = k < op->n_in ? op->in[k] : op->out[k - op->n_in];

			if (last[t] != UINT32_MAX && i > last[t] + 1) {
				uint32_t q = 0;

				while (q < PL_GAPS && gap[t][q] != UINT32_MAX)
					q++;
				if (q < PL_GAPS)
					gap[t][q] = last[t] + 1;
			}
			last[t] = i;
		}
	}
	for (uint32_t t = 0; t < S->nt; t++)
		if (S->drop[t] && !pl_swapped(S, (int32_t)t) && gap[t][0] != UINT32_MAX)
			cand[nc++] = t;
	qsort_r(cand, nc, sizeof(*cand), pl_by_bytes_desc, (void *)net);
	for (uint32_t k = 0; k < nc && k < GR_GAP_BUILDS && over && rc >= 0; k++) {
		int32_t t = (int32_t)cand[k];
		uint64_t o;

		snapshot(S, &g->before, false);
		S->drop[t] = S->keep[t] = 0;
		S->keep_from[t] = 0;
		for (uint32_t q = 0; q < PL_GAPS && gap[t][q] != UINT32_MAX; q++)
			pl_gap_add(S, t, gap[t][q]);
		p->iterations++;
		if ((rc = pl_build(S, err)) < 0)
			break;
		o = rc == 0 ? pl_overflow(S, budget) : UINT64_MAX;
		if (o < over) {
			over = o;
			kept++;
		} else {
			rc = put_back(S, p, &g->before, err);
		}
	}
	if (rc >= 0 && kept && over)
		rc = rounds(S, p, g, budget, err);
	free(last);
	free(cand);
	free(gap);
	return rc < 0 ? -1 : 0;
}

/* Back to no edits. */
static void reset(struct pl_state *S)
{
	memset(S->drop, 0, S->nt);
	memset(S->keep, 0, S->nt);
	memset(S->keep_from, 0, S->nt * sizeof(*S->keep_from));
	if (S->host_base)
		memcpy(S->host, S->host_base, S->nt);
	else
		memset(S->host, 0, S->nt);
	memset(S->host_early, 0, S->nt);
	memset(S->in_floor, 0, S->nt * sizeof(*S->in_floor));
	memset(S->out_wait, 0, S->nt * sizeof(*S->out_wait));
	memset(S->swap_step, 0xff, (size_t)S->nt * PL_GAPS * sizeof(*S->swap_step));
}

/*
 * A pass: greedy_run to the budget.  When the arena overflowed there, again
 * from no edits (or from g->from's) for a budget lower by the overflow, up
 * to GR_RESTARTS times while it still misses: going on from the same state
 * (greedy_run) and starting afresh lower find different plans (ResNet-50 at
 * 33% fits at +24% only afresh, MobileNet-V2 at 50% is faster afresh).  The
 * best is kept: it fits (peak and arena) and is the fastest, or misses by
 * the least.
 */
#define GR_RESTARTS 2

static int greedy_pass(struct pl_state *S, struct mp_plan *p, struct gr_ctx *g, struct mp_error *err)
{
	size_t n = S->nt + 1;
	uint64_t start = S->req->budget_bytes, best_over = UINT64_MAX;
	double best_ms = 0;
	struct gr_saved best;
	int rc = 0;

	g->at_peak = mp_xcalloc(n, 1);
	g->tabu = mp_xcalloc(n, 1);
	saved_init(&g->before, n, S->r->n);
	saved_init(&best, n, S->r->n);
	for (int k = 0; k <= GR_RESTARTS; k++) {
		uint64_t over, first = 0;

		if (k) {
			if (g->from)
				snapshot(S, g->from, true);
			else
				reset(S);
			memset(g->tabu, 0, n);
			g->link_out = g->link_in = 0;
		}
		if ((rc = greedy_run(S, p, g, start, &first, err)) < 0)
			break;
		over = pl_overflow(S, S->req->budget_bytes);
		if (over < best_over || (!over && S->sim.time_ms < best_ms)) {
			snapshot(S, &best, false);
			best_over = over;
			best_ms = S->sim.time_ms;
		}
		/* afresh below the first arena's overflow, or below this one's */
		if (k == 0 && first && start > first)
			start -= first;
		else if (over && S->sim.peak_bytes <= S->req->budget_bytes && S->sim.peak_bytes > over)
			start = (S->sim.peak_bytes < start ? S->sim.peak_bytes : start) - over;
		else
			break;
	}
	if (rc == 0 && (pl_overflow(S, S->req->budget_bytes) != best_over || S->sim.time_ms != best_ms))
		rc = put_back(S, p, &best, err);
	if (rc == 0 && g->gaps && pl_overflow(S, S->req->budget_bytes))
		rc = drops_to_gaps(S, p, g, err);
	if (rc == 0)
		rc = polish(S, p, g, err);
	if (rc == 0)
		rc = exchange(S, p, g, &best, err);
	if (rc == 0 && g->swaps)
		rc = to_swaps(S, p, err);
	saved_release(&best);
	free(g->at_peak);
	free(g->tabu);
	saved_release(&g->before);
	return rc;
}

/*
 * Greedy's plans are made twice where a round unkept a rebuilt tensor and
 * the plan fits: dropped again after each reader, and (late) kept from the
 * reader after the peak, rebuilt once more.  Each wins somewhere (VGG-16 at
 * 70% of liveness: +13.5% unkept, +6.2% late; at 50%: +37.5% unkept, +45.8%
 * late; the choice shapes every later round, so whole plans are compared);
 * the late plan stays when it fits, peak and arena, and is faster by
 * final_ms, weighed as to_swaps weighs.  Planned late, only the passes
 * that can differ run again (those that unkept, and those starting from
 * the first pass's drops where it unkept; not DTR's online pass; the first
 * pass's drops, where it did not unkeep, are put back from zero), and their
 * rounds stop after GR_LATE_WORK times the iterations the first plan took
 * (and, as every round, at PL_MAX_ROUNDS iterations in all):
 * where copies dominate, the late rounds chase more peaks on longer
 * schedules (memplan capacity on InceptionV4, greedy: 5.4 s before this,
 * 22.8 s with the late plan made in full, 11.2 s so, the same batches).
 * fn plans from no edits, redo 0, or late, redo the passes that unkept,
 * and says which of its passes unkept (GR_P*); zero holds the first pass's
 * drops.  A tensor unkept late (kept from a later reader) is not offered
 * a re-keep from its first rebuild by undo_drops or exchange, which offer
 * that only to tensors dropped again after each reader: offered, it moved
 * plans both ways (U-Net at 65% of liveness +20.1% -> +15.5%, at 45% with
 * dynamic workspace +48.5% -> +63.8%).
 */
#define GR_LATE_WORK 1

/* The note of a plan of S's edits: drops, rebuilds and swaps, counted from
 * the state the plan is built from (rounds also drop the inputs a rebuild
 * passes through, and the undo pass puts drops back), then tail (not inside
 * p->note). */
static void note_edits(const struct pl_state *S, struct mp_plan *p, const char *tail)
{
	uint32_t n_drop = 0, n_again = 0, n_swap = 0;
	uint8_t *seen = mp_xcalloc(S->nt + 1, 1);

	for (uint32_t t = 0; t < S->nt; t++) {
		n_drop += S->drop[t];
		n_again += S->drop[t] && (!S->keep[t] || S->keep_from[t]);
	}
	for (uint32_t i = 0; i < S->sched.n; i++)
		if (S->sched.a[i].kind == MP_ACT_SWAP_OUT && !seen[S->sched.a[i].tensor]) {
			seen[S->sched.a[i].tensor] = 1;
			n_swap++;
		}
	free(seen);
	snprintf(p->note, sizeof(p->note), "%u tensor%s dropped and rebuilt (%u of them more than once), %u swapped, "
		 "in %u round%s%s", n_drop, n_drop == 1 ? "" : "s", n_again, n_swap, p->iterations,
		 p->iterations == 1 ? "" : "s", tail);
}

/* The passes of greedy_once (plan_greedy), as bits: where a round unkept */
enum { GR_P0 = 1, GR_P1 = 2, GR_P2 = 4, GR_P3 = 8 };

typedef int (*gr_plan_fn)(struct pl_state *S, struct mp_plan *p, uint32_t redo, uint32_t limit, uint32_t *unkept,
			  struct gr_saved *zero, struct mp_error *err);

/* A plan set aside while greedy plans another way: its edits, its online
 * sequence (S->seq, moved) and its note. */
struct gr_aside {
	struct gr_saved v;
	struct mp_entry *seq;
	uint32_t n_seq;
	char note[sizeof(((struct mp_plan *)0)->note)];
};

static void aside_take(struct pl_state *S, const struct mp_plan *p, struct gr_aside *A)
{
	saved_init(&A->v, S->nt + 1, S->r->n);
	snapshot(S, &A->v, false);
	A->seq = S->seq;
	A->n_seq = S->n_seq;
	S->seq = NULL;
	memcpy(A->note, p->note, sizeof(A->note));
}

/* The plan set aside replaces S's, built again (put_back's answer). */
static int aside_put_back(struct pl_state *S, struct mp_plan *p, struct gr_aside *A, struct mp_error *err)
{
	free(S->seq);
	S->seq = A->seq;
	S->n_seq = A->n_seq;
	A->seq = NULL;
	memcpy(p->note, A->note, sizeof(A->note));
	return put_back(S, p, &A->v, err);
}

static void aside_release(struct gr_aside *A)
{
	free(A->seq);
	saved_release(&A->v);
}

static int both_ways(struct pl_state *S, struct mp_plan *p, gr_plan_fn fn, uint32_t limit0, struct mp_error *err)
{
	struct gr_saved zero;
	struct gr_aside one;
	uint32_t it0 = p->iterations, limit, unkept = 0;
	double ms, ms_p, now, now_p;
	int rc;

	saved_init(&zero, S->nt + 1, S->r->n);
	if ((rc = fn(S, p, 0, limit0, &unkept, &zero, err)) < 0 || !unkept || pl_overflow(S, S->req->budget_bytes) > 0 ||
	    (rc = final_ms(S, &ms, &ms_p, err)) < 0) {
		saved_release(&zero);
		return rc;
	}
	limit = p->iterations + GR_LATE_WORK * (p->iterations - it0);
	aside_take(S, p, &one);
	/* (p->weigh_split stays set where either plan's weighings split:
	 * plan_run then plans again weighing the other way, which may find
	 * the better plan, VGG-16 at 70% of liveness, auto: +4.1%, and +6.2%
	 * counting the kept plan's alone) */
	reset(S);
	if ((rc = fn(S, p, unkept, limit < PL_MAX_ROUNDS ? limit : 0, &unkept, &zero, err)) == 0 &&
	    (rc = final_ms(S, &now, &now_p, err)) == 0 &&
	    (pl_overflow(S, S->req->budget_bytes) > 0 || (S->req->swaps_unpacked ? ms <= now : ms_p <= now_p)))
		rc = aside_put_back(S, p, &one, err);
	aside_release(&one);
	saved_release(&zero);
	return rc;
}

static int recompute_once(struct pl_state *S, struct mp_plan *p, uint32_t redo, uint32_t limit, uint32_t *unkept,
			  struct gr_saved *zero, struct mp_error *err)
{
	struct gr_ctx g0 = { .late = redo != 0, .limit = limit };
	int rc;

	(void)zero; /* one pass: nothing to put back */
	S->prefetch = PL_PREFETCH_JIT;
	S->max_entries = GR_MAX_ENTRIES * S->r->n + 1024;
	rc = greedy_pass(S, p, &g0, err);
	S->max_entries = 0;
	*unkept = g0.unkept ? GR_P0 : 0;
	return rc;
}

/* The first pass alone: recomputation, no swaps (optimal's starts). */
int plan_greedy_recompute(struct pl_state *S, struct mp_plan *p, struct mp_error *err)
{
	return both_ways(S, p, recompute_once, 0, err);
}

int plan_greedy_swaps(struct pl_state *S, struct mp_plan *p, struct mp_error *err)
{
	int rc = plan_greedy_recompute(S, p, err);

	S->max_entries = GR_MAX_ENTRIES * S->r->n + 1024;
	if (rc == 0)
		rc = to_swaps(S, p, err);
	S->max_entries = 0;
	return rc;
}

/* Five passes, recomputation alone, with swaps too, the first pass's drops
 * swapped instead where that is faster when it fits (to_swaps: GPT-2 at
 * 50% of liveness +23.0% -> +14.5%, BERT at 70% +6.8% -> +1.1%), swaps on
 * top of them when it missed (strict, then not: undoing the rounds
 * that stall beyond their estimate finds cheaper swaps where some plan
 * hides them, VGG-16 at 70% +19.5% -> +14.3%, BERT at 33% +78.2% ->
 * +67.0%, and misses where every plan must stall, VGG-16 at 50%), and DTR's
 * online evictions (plan/dtr.c): where the copies cannot keep up, swaps
 * taken early block cheaper drops; where recomputation reaches its floor
 * (VGG-16 below 72%: conv1_2's backward) a few swaps after it cost less
 * than swaps from the start; where a peak's only remedies raise another,
 * the online pass, which sees every step, gets further.  The best wins. */
static int greedy_once(struct pl_state *S, struct mp_plan *p, uint32_t redo, uint32_t limit, uint32_t *unkept,
		       struct gr_saved *zero, struct mp_error *err)
{
	bool late = redo != 0;
	struct gr_saved first; /* zero (the caller's): the first pass's drops, where passes 2 and 3 start */
	bool gaps = S->many_gaps;
	struct gr_ctx g0 = { .late = late, .limit = limit }, g1 = { .swaps = true, .gaps = gaps, .late = late, .limit = limit };
	struct gr_ctx g2[2] = {
		{ .swaps = true, .gaps = gaps, .waits = true, .strict = true, .from = zero, .late = late, .limit = limit },
		{ .swaps = true, .gaps = gaps, .waits = true, .from = zero, .late = late, .limit = limit },
	};
	uint64_t over0, over;
	double ms0, ms1, free_ms;
	bool online = false, missed;

	S->prefetch = PL_PREFETCH_JIT;
	/* rebuild chains may not make the sequence quadratic */
	S->max_entries = GR_MAX_ENTRIES * S->r->n + 1024;
	if (pl_build(S, err) < 0)
		return -1;
	free_ms = S->sim.time_ms; /* no edits: no pass can be faster */
	/* planned again late where the first pass did not unkeep: its drops
	 * as the first plan left them */
	if (late && !(redo & GR_P0) ? put_back(S, p, zero, err) < 0 : greedy_pass(S, p, &g0, err) < 0)
		return -1;
	saved_init(&first, S->nt + 1, S->r->n);
	snapshot(S, zero, false);
	missed = pl_overflow(S, S->req->budget_bytes) > 0;
	for (int pass = 1; pass <= 4; pass++) {
		int rc;

		over0 = pl_overflow(S, S->req->budget_bytes);
		if (!over0 && S->sim.time_ms <= free_ms)
			break; /* it fits at no cost */
		if (pl_settled_ms(S, &ms0, err) < 0) {
			saved_release(&first);
			return -1;
		}
		if (pass == 3 && !missed)
			continue;
		/* planned again late: only the passes that can differ */
		if (late && (pass == 4 || !(redo & (pass == 1 ? GR_P1 : GR_P0 | (pass == 2 ? GR_P2 : GR_P3)))))
			continue;
		snapshot(S, &first, false);
		if (pass == 2 && !missed) {
			/* the first pass fits: its drops, swapped where that is cheaper */
			if ((rc = put_back(S, p, zero, err)) == 0)
				rc = to_swaps(S, p, err);
		} else if (pass == 2 || pass == 3) {
			snapshot(S, zero, true);
			rc = greedy_pass(S, p, &g2[pass - 2], err);
		} else {
			reset(S);
			rc = pass == 1 ? greedy_pass(S, p, &g1, err) : plan_greedy_dtr(S, p, err);
		}
		if (rc < 0) {
			saved_release(&first);
			return -1;
		}
		online = pass == 4 && S->seq;
		over = pl_overflow(S, S->req->budget_bytes);
		if (pl_settled_ms(S, &ms1, err) < 0) {
			saved_release(&first);
			return -1;
		}
		/* the best fits (peak and arena) and is faster, or misses by less */
		if (over0 != over ? over0 < over : ms0 <= ms1) {
			free(S->seq);
			S->seq = NULL;
			online = false;
			if (put_back(S, p, &first, err) < 0) {
				saved_release(&first);
				return -1;
			}
		}
	}
	saved_release(&first);
	S->max_entries = 0;
	*unkept = (g0.unkept ? GR_P0 : 0) | (g1.unkept ? GR_P1 : 0) | (g2[0].unkept ? GR_P2 : 0) |
		  (g2[1].unkept ? GR_P3 : 0);
	if (online) {
		uint32_t n = 0;

		for (uint32_t i = 0; i < S->n_seq; i++)
			n += S->seq[i].recompute;
		snprintf(p->note, sizeof(p->note), "DTR's evictions, online: %u forward ops re-run (%.3f ms), in %u rounds",
			 n, S->sim.recompute_ms, p->iterations);
		return 0;
	}
	note_edits(S, p, "");
	return 0;
}

/* Optimizer state: persistent tensors only optimizer ops touch (momentum,
 * Adam's moments).  Marks them in seed[nt]; returns how many. */
static uint32_t opt_state(const struct pl_state *S, uint8_t *seed)
{
	const struct mp_net *net = S->net;
	uint8_t *other = mp_xcalloc(S->nt + 1, 1);
	uint32_t n = 0;

	for (uint32_t o = 0; o < net->n_ops; o++) {
		const struct mp_op *op = &net->ops[o];

		for (uint32_t k = 0; k < op->n_in + op->n_out; k++) {
			int32_t t = k < op->n_in ? op->in[k] : op->out[k - op->n_in];

			if (op->phase == MP_PHASE_OPT)
				seed[t] = 1;
			else
				other[t] = 1;
		}
	}
	for (uint32_t t = 0; t < S->nt; t++) {
		seed[t] = seed[t] && !other[t] && sched_persistent(&net->tensors[t]);
		n += seed[t];
	}
	free(other);
	return n;
}

/* greedy_once both ways, then the host tensors copied out early. */
static int greedy_start(struct pl_state *S, struct mp_plan *p, uint32_t limit, struct mp_error *err)
{
	if (both_ways(S, p, greedy_once, limit, err) < 0)
		return -1;
	return pl_host_early(S, err) < 0 ? -1 : 0;
}

/* Greedy started again from no edits, with host_base kept on the host
 * between iterations and many_gaps as given, its rounds up to limit (0:
 * PL_MAX_ROUNDS); it replaces S's plan where it misses by less, or where
 * both fit and it is faster, and then says so in the note (how).  0, or
 * -1 with *err. */
static int restart(struct pl_state *S, struct mp_plan *p, const uint8_t *host_base, bool many_gaps,
		   uint32_t limit, const char *how, struct mp_error *err)
{
	uint64_t budget = S->req->budget_bytes, over = pl_overflow(S, budget);
	double ms = S->sim.time_ms;
	struct gr_aside one;
	int rc;

	aside_take(S, p, &one);
	S->host_base = host_base;
	S->many_gaps = many_gaps;
	reset(S);
	rc = greedy_start(S, p, limit, err);
	S->host_base = NULL;
	S->many_gaps = false;
	if (rc == 0 && (over ? pl_overflow(S, budget) >= over : pl_overflow(S, budget) > 0 || S->sim.time_ms >= ms)) {
		rc = aside_put_back(S, p, &one, err);
	} else if (rc == 0) {
		plan_note_add(p, "; %s", how);
	}
	aside_release(&one);
	return rc;
}

/* A plan made for less than budget so that its arena packs
 * (plan_within_arena) may miss what it was made for and still fit budget,
 * peak and arena, and polish, which judges against what the plan was made
 * for, then gave nothing back: polish again, against budget.  U-Net at 33%
 * of liveness, planned for 270.8 MiB of 308.9, its peak 276.5: before this
 * its rebuilds ran enc1's convolutions 15 times over while the backward
 * held 80 to 210 MiB.  The note says so where it changed the plan. */
int plan_greedy_give_back(struct pl_state *S, struct mp_plan *p, uint64_t budget, struct mp_error *err)
{
	const struct mp_plan_req *was = S->req;
	struct mp_plan_req at = *was;
	struct gr_ctx g = { 0 };
	double ms = S->sim.time_ms;
	const char *tail = strchr(p->note, ';');
	char more[sizeof(p->note)];
	int rc;

	if (S->seq) /* DTR's evictions: no drops to undo */
		return 0;
	at.budget_bytes = budget;
	S->req = &at;
	saved_init(&g.before, S->nt + 1, S->r->n);
	rc = polish(S, p, &g, err);
	saved_release(&g.before);
	S->req = was;
	if (rc == 0 && S->sim.time_ms < ms) {
		snprintf(more, sizeof(more), "%s; drops undone up to the budget", tail ? tail : "");
		note_edits(S, p, more);
	}
	return rc;
}

/* Greedy also starts again with the optimizer state on the host between
 * iterations (copied in before the optimizer step, out after it or as the
 * next iteration starts) where the first start misses (peak or arena), or,
 * without dynamic workspace, where it fits and costs more than copying
 * that state both ways would, unhidden: the rounds find those swaps
 * one peak at a time, after drops that can no longer be taken back
 * (ResNet-50 at 25% of liveness: 730 MiB, 30 over the budget, from the
 * first start; it fits at +42.9% from the second).  Where the plan still
 * misses (both starts, or the first where there is no optimizer state to
 * start with), and no plan that fits is in hand (req->have_fit), a last
 * start lets a tensor leave the device in several gaps between its uses,
 * a weight kept on the host in one of its own too, and swaps drops instead
 * where the plan misses (drops_to_gaps; U-Net at 36% of liveness: no plan
 * without it, +71.1% with it, before the swap-ins go on the copy engine's
 * queue).  The start that misses by less, or fits and is faster, stays. */
int plan_greedy(struct pl_state *S, struct mp_plan *p, struct mp_error *err)
{
	uint64_t budget = S->req->budget_bytes, over;
	double free_ms, copy_ms = 0, ms;
	uint8_t *seed;
	uint32_t it0, limit;
	int rc = 0;

	if (pl_build(S, err) < 0)
		return -1;
	free_ms = S->sim.time_ms;
	it0 = p->iterations;
	if (greedy_start(S, p, 0, err) < 0)
		return -1;
	over = pl_overflow(S, budget);
	ms = S->sim.time_ms;
	/* (with dynamic workspace, a plan that fits is also planned lower
	 * for the faster algorithms, plan_run's reserve tries, which there
	 * get room a second start fitting at the budget would not leave
	 * them: pt-unet at 50% of liveness, auto, +17.8% from one start,
	 * +34.3% from two) */
	if (!over && S->req->ws_mode == MP_WS_DYNAMIC)
		return 0;
	seed = mp_xcalloc(S->nt + 1, 1);
	if (opt_state(S, seed))
		for (uint32_t t = 0; t < S->nt; t++)
			if (seed[t])
				copy_ms += device_copy_ms(&S->req->device, S->net->tensors[t].bytes, true) +
					   device_copy_ms(&S->req->device, S->net->tensors[t].bytes, false);
	/* (where the first start fits, the second's rounds as many as its, as
	 * both_ways' second plan; where it misses, as many as it takes) */
	limit = over ? 0 : p->iterations + GR_LATE_WORK * (p->iterations - it0);
	if (copy_ms && (over || ms - free_ms > copy_ms))
		rc = restart(S, p, seed, false, limit < PL_MAX_ROUNDS ? limit : 0,
			     "optimizer state on the host from the start", err);
	if (rc == 0 && pl_overflow(S, budget) && !S->req->have_fit) {
		/* (its rounds counted afresh: the two starts before may have
		 * spent PL_MAX_ROUNDS) */
		uint32_t spent = p->iterations;

		p->iterations = 0;
		rc = restart(S, p, copy_ms ? seed : NULL, true, 0,
			     copy_ms ? "optimizer state on the host from the start, swapped in several gaps" :
				       "swapped in several gaps", err);
		p->iterations += spent;
	}
	free(seed);
	return rc;
}
