/*
 * The planners' shared state and its translation into a schedule: recompute
 * entries from the dropped set (policy_recompute_seq), swaps placed in each gap
 * that holds a chosen step with the planner's trigger rule, algorithms and
 * micro-batches per op, then the shared emitter and the one simulator.
 * O(entries + tensor uses) per build, and O(swaps log swaps) to order the
 * swaps of a tensor and (queue_in) the swap-ins on the copy engine.
 */
#include "engine.h"

#include <stdlib.h>
#include <string.h>

#include "arena.h"

/* Forward writers per tensor (CSR) and which tensors may be dropped: an
 * activation written in forward only by ops that may re-run.  O(ops + uses). */
static void droppable_build(struct pl_state *S)
{
	const struct mp_net *net = S->net;
	uint32_t nt = S->nt;
	struct mp_writers w;

	policy_writers_build(net, S->r, &w);
	S->fw_start = w.start;
	S->fw_list = w.list;
	S->droppable = mp_xcalloc(nt + 1, 1);
	for (uint32_t t = 0; t < nt; t++) {
		const struct mp_tensor *x = &net->tensors[t];
		bool ok = x->kind == MP_TK_ACTIVATION && !sched_persistent(x) && x->bytes &&
			  S->fw_start[t] < S->fw_start[t + 1] && (int32_t)S->fw_list[S->fw_start[t]] == x->producer;

		for (uint32_t j = S->fw_start[t]; ok && j < S->fw_start[t + 1]; j++)
			ok = net->ops[S->fw_list[j]].recomputable;
		S->droppable[t] = ok;
	}
}

static uint32_t uf_find(uint32_t *up, uint32_t x)
{
	while (up[x] != x)
		x = up[x] = up[up[x]];
	return x;
}

void pl_blocks_build(const struct pl_state *S, const double *op_ms, struct pl_blocks *B)
{
	const struct mp_net *net = S->net;
	const struct mp_route *r = S->r;
	uint32_t nf = r->n_fwd, *up = mp_xmalloc((net->n_ops + 1) * sizeof(*up)), *fill;

	memset(B, 0, sizeof(*B));
	B->of_op = mp_xmalloc((net->n_ops + 1) * sizeof(*B->of_op));
	for (uint32_t o = 0; o < net->n_ops; o++) {
		up[o] = o;
		B->of_op[o] = UINT32_MAX;
	}
	for (uint32_t t = 0; t < S->nt; t++)
		for (uint32_t j = S->fw_start[t] + 1; j < S->fw_start[t + 1]; j++)
			up[uf_find(up, S->fw_list[j])] = uf_find(up, S->fw_list[S->fw_start[t]]);
	/* numbered by the route step of their first op; a root keeps its number */
	for (uint32_t i = 0; i < nf; i++) {
		uint32_t o = (uint32_t)r->op[i], root = uf_find(up, o);

		if (B->of_op[root] == UINT32_MAX)
			B->of_op[root] = B->n++;
		B->of_op[o] = B->of_op[root];
	}
	free(up);
	B->last = mp_xcalloc(B->n + 1, sizeof(*B->last));
	B->ms = mp_xcalloc(B->n + 1, sizeof(*B->ms));
	B->start = mp_xcalloc(B->n + 2, sizeof(*B->start));
	B->ops = mp_xmalloc((nf + 1) * sizeof(*B->ops));
	for (uint32_t i = 0; i < nf; i++) {
		uint32_t o = (uint32_t)r->op[i], b = B->of_op[o];

		B->start[b + 1]++;
		B->last[b] = i;
		B->ms[b] += op_ms[o];
	}
	for (uint32_t b = 0; b < B->n; b++)
		B->start[b + 1] += B->start[b];
	fill = mp_xcalloc(B->n + 1, sizeof(*fill));
	for (uint32_t i = 0; i < nf; i++) {
		uint32_t b = B->of_op[r->op[i]];

		B->ops[B->start[b] + fill[b]++] = (uint32_t)r->op[i];
	}
	free(fill);
}

void pl_blocks_release(struct pl_blocks *B)
{
	free(B->of_op);
	free(B->start);
	free(B->ops);
	free(B->last);
	free(B->ms);
	memset(B, 0, sizeof(*B));
}

double pl_rebuild_ms(const struct pl_state *S, int32_t t)
{
	double ms = 0;

	for (uint32_t j = S->fw_start[t]; j < S->fw_start[t + 1]; j++)
		ms += sched_op_ms(S->net, (int32_t)S->fw_list[j], S->algo[S->fw_list[j]]);
	return ms;
}

void pl_init(struct pl_state *S, const struct mp_net *net, const struct mp_route *r,
	     const struct mp_plan_req *req)
{
	memset(S, 0, sizeof(*S));
	S->net = net;
	S->r = r;
	S->req = req;
	S->nt = net->n_tensors;
	S->swap_step = mp_xmalloc(((size_t)S->nt * PL_GAPS + 1) * sizeof(*S->swap_step));
	memset(S->swap_step, 0xff, (size_t)S->nt * PL_GAPS * sizeof(*S->swap_step));
	S->host = mp_xcalloc(S->nt + 1, 1);
	S->host_early = mp_xcalloc(S->nt + 1, 1);
	S->in_floor = mp_xcalloc(S->nt + 1, sizeof(*S->in_floor));
	S->out_wait = mp_xcalloc(S->nt + 1, sizeof(*S->out_wait));
	S->drop = mp_xcalloc(S->nt + 1, 1);
	S->keep = mp_xcalloc(S->nt + 1, 1);
	S->keep_from = mp_xcalloc(S->nt + 1, sizeof(*S->keep_from));
	S->algo = mp_xmalloc((net->n_ops + 1) * sizeof(*S->algo));
	for (uint32_t o = 0; o < net->n_ops; o++)
		S->algo[o] = -1;
	S->micro_n = mp_xcalloc(net->n_ops + 1, sizeof(*S->micro_n));
	S->micro = mp_xcalloc(net->n_ops + 1, sizeof(*S->micro));
	S->step_start = mp_xcalloc(r->n + 1, sizeof(*S->step_start));
	S->placed_on = mp_xcalloc(r->n + 1, sizeof(*S->placed_on));
	sched_init(&S->sched);
	droppable_build(S);
}

void pl_release(struct pl_state *S)
{
	free(S->swap_step);
	free(S->host);
	free(S->host_early);
	free(S->in_floor);
	free(S->out_wait);
	free(S->drop);
	free(S->keep);
	free(S->keep_from);
	free(S->algo);
	free(S->micro_n);
	for (uint32_t o = 0; S->micro && o < S->net->n_ops; o++)
		free(S->micro[o]);
	free(S->micro);
	free(S->step_start);
	free(S->placed_on);
	free(S->droppable);
	free(S->seq);
	free(S->fw_start);
	free(S->fw_list);
	free(S->entry_step);
	free(S->step_entry);
	free(S->entries);
	free(S->touch_start);
	free(S->touch_list);
	sched_release(&S->sched);
	sim_release(&S->sim);
	memset(S, 0, sizeof(*S));
}

/* Touches of every tensor over the entries, in entry order (CSR). */
struct touches {
	uint32_t *start, *list;
};

static void touches_build(const struct mp_net *net, const struct mp_entry *e, uint32_t n_e,
			  struct touches *T)
{
	uint32_t nt = net->n_tensors, *fill = mp_xcalloc(nt + 1, sizeof(*fill));

	T->start = mp_xcalloc(nt + 2, sizeof(*T->start));
	for (uint32_t i = 0; i < n_e; i++) {
		const struct mp_op *op = &net->ops[e[i].op];

		for (uint32_t k = 0; k < op->n_in; k++)
			T->start[op->in[k] + 1]++;
		for (uint32_t k = 0; k < op->n_out; k++)
			T->start[op->out[k] + 1]++;
	}
	for (uint32_t t = 0; t < nt; t++)
		T->start[t + 1] += T->start[t];
	T->list = mp_xmalloc((T->start[nt] + 1) * sizeof(*T->list));
	for (uint32_t i = 0; i < n_e; i++) {
		const struct mp_op *op = &net->ops[e[i].op];

		for (uint32_t k = 0; k < op->n_in + op->n_out; k++) {
			int32_t t = k < op->n_in ? op->in[k] : op->out[k - op->n_in];
			uint32_t at = T->start[t] + fill[t];

			/* an op that reads and writes t touches it once */
			if (fill[t] && T->list[at - 1] == i)
				continue;
			T->list[at] = i;
			fill[t]++;
		}
	}
	/* compact: duplicates left holes at the end of each tensor's range */
	{
		uint32_t w = 0;

		for (uint32_t t = 0; t < nt; t++) {
			uint32_t s0 = T->start[t];

			T->start[t] = w;
			for (uint32_t k = 0; k < fill[t]; k++)
				T->list[w++] = T->list[s0 + k];
		}
		T->start[nt] = w;
	}
	free(fill);
}

/* The touches of t just before and after entry at (UINT32_MAX: none). */
static void around(const struct touches *T, int32_t t, uint32_t at, uint32_t *before, uint32_t *after,
		   bool *touched)
{
	uint32_t lo = T->start[t], hi = T->start[t + 1];

	*before = *after = UINT32_MAX;
	*touched = false;
	for (uint32_t k = lo; k < hi; k++) { /* short lists: a linear scan is fine */
		uint32_t i = T->list[k];

		if (i < at)
			*before = i;
		else if (i == at)
			*touched = true;
		else {
			*after = i;
			break;
		}
	}
}

static double est_start(const struct pl_state *S, uint32_t entry)
{
	return S->step_start[S->entry_step[entry]];
}

double pl_entry_start(const struct pl_state *S, uint32_t i)
{
	return est_start(S, i);
}

static uint32_t trigger_rule(const struct pl_state *S, const struct mp_entry *e, int32_t t,
			     uint32_t a, uint32_t u);

/* Entry at which to issue the swap-in of t for its use at entry u, after a:
 * the planner's rule, no earlier than t's floor (floor: whether it applies
 * to this gap), no later than u. */
static uint32_t trigger(const struct pl_state *S, const struct mp_entry *e, const uint32_t *ce,
			int32_t t, uint32_t a, uint32_t u, bool floor)
{
	uint32_t j = trigger_rule(S, e, t, a, u);

	if (floor && S->in_floor[t] && S->in_floor[t] < S->r->n && ce[S->in_floor[t]] > j)
		j = ce[S->in_floor[t]];
	return j < u ? j : u;
}

static uint32_t trigger_rule(const struct pl_state *S, const struct mp_entry *e, int32_t t,
			     uint32_t a, uint32_t u)
{
	const struct mp_net *net = S->net;
	uint32_t lo = a == UINT32_MAX ? 0 : a + 1;

	if (S->prefetch == PL_PREFETCH_CKPT_AHEAD) {
		for (uint32_t j = u; j-- > lo;)
			if (!e[j].recompute && net->ops[e[j].op].phase == MP_PHASE_BWD &&
			    policy_is_checkpoint(net, &S->req->popts, net->ops[e[j].op].fwd))
				return j;
		/* no checkpoint before the use: at the start of backward */
		for (uint32_t j = lo; j < u; j++)
			if (net->ops[e[j].op].phase != MP_PHASE_FWD)
				return j;
		return u;
	}
	/* just in time: the latest entry from which the copy (plus a 10% margin
	 * for copies queued ahead of it) still ends before the use */
	{
		double need = 1.1 * device_copy_ms(&S->req->device, net->tensors[t].bytes, true);
		double deadline = est_start(S, u) - need;

		for (uint32_t j = u; j > lo; j--)
			if (est_start(S, j) <= deadline)
				return j;
		return lo;
	}
}

/* A gap a swap of t spans: out after entry a (UINT32_MAX: it starts the
 * iteration on the host), in for the use at entry u. */
struct gap {
	uint32_t a, u;
	bool host;  /* kept on the host between iterations: this is its way in */
};

static int by_gap_start(const void *x, const void *y)
{
	uint32_t a = ((const struct gap *)x)->a + 1, b = ((const struct gap *)y)->a + 1; /* UINT32_MAX first */

	return a < b ? -1 : a > b;
}

/* Append t's swaps to sw (and to fl, the same length, the entry of each
 * swap-in's floor, or 0): across iterations where it is kept on the host,
 * and in each gap its steps lie in.  Its swap-in floor delays the swap-in
 * of the last gap that starts before it; its swap-out wait, the gap that
 * holds it. */
static void tensor_swaps(const struct pl_state *S, const struct touches *T, const struct mp_entry *e,
			 const uint32_t *ce, int32_t t, struct mp_swap **sw, uint32_t *n_sw, uint32_t *cap_sw,
			 uint32_t **fl)
{
	const uint32_t *gs = S->swap_step + (size_t)t * PL_GAPS;
	uint32_t n = 0, last = UINT32_MAX, f = UINT32_MAX, w = 0;
	struct gap g[PL_GAPS + 1];
	bool touched;

	if (S->host[t]) {
		uint32_t first = T->start[t] < T->start[t + 1] ? T->list[T->start[t]] : UINT32_MAX;

		if (first == UINT32_MAX)
			return;
		last = T->list[T->start[t + 1] - 1];
		/* host_early: resident as the iteration starts, out after the
		 * iteration's first entry, in again before its first use */
		g[n++] = (struct gap){ S->host_early[t] && first > 0 ? 0 : UINT32_MAX, first, true };
		if (g[0].a == 0)
			last = UINT32_MAX;
	}
	for (uint32_t k = 0; k < PL_GAPS && gs[k] != UINT32_MAX; k++) {
		uint32_t a, u, q = 0;

		around(T, t, ce[gs[k]], &a, &u, &touched);
		if (touched || a == UINT32_MAX || u == UINT32_MAX)
			continue; /* the gap no longer holds that step: nothing to swap */
		while (q < n && g[q].a != a)
			q++;
		if (q == n) /* (two steps now in one gap: one swap) */
			g[n++] = (struct gap){ a, u, false };
	}
	if (!n)
		return;
	qsort(g, n, sizeof(*g), by_gap_start);
	if (S->in_floor[t] && S->in_floor[t] < S->r->n)
		f = ce[S->in_floor[t]];
	/* a wait for the swap-out, where the planner asked, between the last
	 * use and the next */
	if (S->out_wait[t] && S->out_wait[t] < S->r->n)
		w = ce[S->out_wait[t]];
	{
		uint32_t c = *cap_sw;

		mp_grow((void **)sw, cap_sw, *n_sw + n + 1, sizeof(**sw));
		if (c != *cap_sw)
			*fl = mp_xrealloc(*fl, *cap_sw * sizeof(**fl));
	}
	for (uint32_t k = 0; k < n; k++) {
		bool floor = f != UINT32_MAX && (k + 1 == n || g[k + 1].a >= f);
		uint32_t a = g[k].a == UINT32_MAX ? MP_SWAP_NONE : g[k].a, u = g[k].u;

		(*fl)[*n_sw] = floor && f > (a == MP_SWAP_NONE ? 0 : a) ? f : 0;
		(*sw)[(*n_sw)++] = (struct mp_swap){ t, a, trigger(S, e, ce, t, g[k].a, u, floor), u,
						     !g[k].host && w > a && w <= u ? w : 0 };
	}
	if (last != UINT32_MAX) { /* back to the host after its last use */
		(*fl)[*n_sw] = 0;
		(*sw)[(*n_sw)++] = (struct mp_swap){ t, last, MP_SWAP_NONE, MP_SWAP_NONE, 0 };
	}
}

/* A swap-in on the queue: its index in the swaps, and the entry of its use. */
struct qin {
	uint32_t k, use;
};

static int by_use_desc(const void *x, const void *y)
{
	const struct qin *a = x, *b = y;

	if (a->use != b->use)
		return a->use > b->use ? -1 : 1;
	return a->k > b->k ? -1 : a->k < b->k;
}

/* Just in time on one copy engine (S->queue_in): the swap-ins scheduled
 * backwards from their uses on the last build's timeline, each to end (with
 * a 5% margin) before its use and before the next one in use order starts,
 * so that copies queued back to back still land in time; a swap-in only
 * ever moves earlier than trigger() put it, and never before its floor
 * (fl[n_sw], the entry, or 0).  O(swaps log swaps), and the scan back
 * from each use that trigger_rule makes too. */
static void queue_swapins(const struct pl_state *S, struct mp_swap *sw, const uint32_t *fl, uint32_t n_sw)
{
	struct qin *q = mp_xmalloc((n_sw + 1) * sizeof(*q));
	uint32_t n = 0;
	double free_by = 1e300;

	for (uint32_t k = 0; k < n_sw; k++)
		if (sw[k].in_at != MP_SWAP_NONE && sw[k].use_at != MP_SWAP_NONE)
			q[n++] = (struct qin){ k, sw[k].use_at };
	qsort(q, n, sizeof(*q), by_use_desc);
	for (uint32_t i = 0; i < n; i++) {
		struct mp_swap *x = &sw[q[i].k];
		double dur = device_copy_ms(&S->req->device, S->net->tensors[x->tensor].bytes, true);
		double end_by = est_start(S, x->use_at), L;
		uint32_t lo = x->out_after == MP_SWAP_NONE ? 0 : x->out_after + 1, j;

		if (free_by < end_by)
			end_by = free_by;
		L = end_by - 1.05 * dur;
		for (j = x->use_at; j > lo && est_start(S, j) > L; j--)
			;
		if (fl[q[i].k] > j)
			j = fl[q[i].k];
		if (j < x->in_at)
			x->in_at = j;
		free_by = L;
	}
	free(q);
}

int pl_build(struct pl_state *S, struct mp_error *err)
{
	const struct mp_net *net = S->net;
	const struct mp_route *r = S->r;
	struct mp_entry *e;
	uint32_t n_e, n_sw = 0, cap_sw = 0, *ce, *fl = NULL;
	struct mp_swap *sw = NULL;
	struct touches T;
	bool any_drop = false;

	for (uint32_t t = 0; t < S->nt && !any_drop; t++)
		any_drop = S->drop[t];
	if (S->seq) {
		n_e = S->n_seq;
		e = mp_xmalloc((n_e + 1) * sizeof(*e));
		memcpy(e, S->seq, n_e * sizeof(*e));
	} else if (any_drop) {
		n_e = policy_recompute_seq(net, r, S->drop, S->keep, S->keep_from, S->max_entries, &e);
		if (n_e == UINT32_MAX)
			return 1;
	} else {
		n_e = r->n;
		e = mp_xmalloc((n_e + 1) * sizeof(*e));
		for (uint32_t i = 0; i < n_e; i++)
			e[i] = (struct mp_entry){ r->op[i], false, -1 };
	}
	for (uint32_t i = 0; i < n_e; i++)
		e[i].algo = S->algo[e[i].op];
	free(S->entry_step);
	S->entry_step = mp_xmalloc((n_e + 1) * sizeof(*S->entry_step));
	free(S->step_entry);
	ce = S->step_entry = mp_xmalloc((r->n + 1) * sizeof(*ce));
	for (uint32_t i = n_e, next = r->n ? r->n - 1 : 0; i-- > 0;) {
		if (!e[i].recompute) {
			next = r->pos[e[i].op];
			ce[next] = i;
		}
		S->entry_step[i] = next;
	}
	S->n_entries = n_e;
	memcpy(S->placed_on, S->step_start, r->n * sizeof(*S->placed_on));
	touches_build(net, e, n_e, &T);
	for (uint32_t t = 0; t < S->nt; t++)
		tensor_swaps(S, &T, e, ce, (int32_t)t, &sw, &n_sw, &cap_sw, &fl);
	if (S->prefetch == PL_PREFETCH_JIT && S->queue_in)
		queue_swapins(S, sw, fl, n_sw);
	free(fl);
	sched_release(&S->sched);
	sched_init(&S->sched);
	sched_emit(net, e, n_e, sw, n_sw, &S->sched);
	/* micro-batches, and workspace sized to the chosen configuration */
	for (uint32_t i = 0; i < S->sched.n; i++) {
		struct mp_action *a = &S->sched.a[i];
		const struct mp_op *op;
		double ms;
		uint64_t ws;

		if (a->kind != MP_ACT_COMPUTE && a->kind != MP_ACT_RECOMPUTE)
			continue;
		op = &net->ops[a->op];
		if (S->micro_n[a->op] > 1)
			sched_set_micro(&S->sched, i, S->micro[a->op], S->micro_n[a->op]);
		a = &S->sched.a[i];
		if (op->ws >= 0 && i > 0 && S->sched.a[i - 1].kind == MP_ACT_ALLOC &&
		    S->sched.a[i - 1].tensor == op->ws) {
			sched_action_cost(net, &S->sched, a, &ms, &ws);
			S->sched.a[i - 1].bytes = ws;
		}
	}
	/* kept for pl_peak_candidates: the entries and touches of this build */
	free(S->entries);
	free(S->touch_start);
	free(S->touch_list);
	S->entries = e;
	S->touch_start = T.start;
	S->touch_list = T.list;
	free(sw);
	sim_release(&S->sim);
	if (sim_run(net, &S->req->device, &S->sched, &S->sim, err) < 0) {
		mp_error_prefix(err, "internal error: planned schedule: ");
		return -1;
	}
	for (uint32_t i = 0, k = 0; i < S->sched.n; i++)
		if (S->sched.a[i].kind == MP_ACT_COMPUTE)
			S->step_start[k++] = S->sched.a[i].start_ms;
	S->peak_entry = ce[S->sim.peak_step];
	return 0;
}

/* Is t swapped in the gap whose last use before it is entry a (resident
 * there all the same: its copies in flight)? */
static bool gap_taken(const struct pl_state *S, const struct touches *T, int32_t t, uint32_t a)
{
	const uint32_t *gs = S->swap_step + (size_t)t * PL_GAPS;

	for (uint32_t k = 0; k < PL_GAPS && gs[k] != UINT32_MAX; k++) {
		uint32_t a2, u2;
		bool touched;

		around(T, t, S->step_entry[gs[k]], &a2, &u2, &touched);
		if (!touched && a2 == a)
			return true;
	}
	return false;
}

void pl_gap_remove(struct pl_state *S, int32_t t, uint32_t step)
{
	uint32_t *g = S->swap_step + (size_t)t * PL_GAPS, n = 0;
	bool gone = false;

	for (uint32_t k = 0; k < PL_GAPS; k++) {
		if (g[k] == UINT32_MAX || step == UINT32_MAX)
			continue;
		if (g[k] == step && !gone) {
			gone = true;
			continue;
		}
		g[n++] = g[k];
	}
	while (n < PL_GAPS)
		g[n++] = UINT32_MAX;
}

uint32_t pl_peak_candidates(const struct pl_state *S, unsigned flags, struct pl_cand **out)
{
	bool with_rebuilt = flags & PL_CAND_REBUILT, gaps = flags & PL_CAND_GAPS;
	const struct mp_net *net = S->net;
	const struct mp_entry *e = S->entries;
	const struct touches T = { S->touch_start, S->touch_list };
	uint32_t n = 0, P = S->peak_entry;

	uint8_t *fed = mp_xcalloc(S->nt + 1, 1);

	/* what the recomputes right before the peak's op touch */
	for (uint32_t j = P; j-- > 0 && e[j].recompute;) {
		const struct mp_op *op = &net->ops[e[j].op];

		for (uint32_t k = 0; k < op->n_in; k++)
			fed[op->in[k]] = 1;
		for (uint32_t k = 0; k < op->n_out; k++)
			fed[op->out[k]] = 1;
	}
	*out = mp_xmalloc((S->sim.n_peak_tensors + 1) * sizeof(**out));
	for (uint32_t k = 0; k < S->sim.n_peak_tensors; k++) {
		int32_t t = S->sim.peak_tensors[k];
		const struct mp_tensor *x = &net->tensors[t];
		uint32_t a, u;
		bool touched;

		bool rebuilt = S->drop[t] && S->keep[t] && with_rebuilt && net->ops[e[P].op].phase != MP_PHASE_FWD;

		bool swapped = pl_swapped(S, t) || S->host[t];

		if (x->kind == MP_TK_WORKSPACE || (swapped && (!gaps || rebuilt)) || (S->drop[t] && !rebuilt) ||
		    x->bytes == 0)
			continue;
		around(&T, t, P, &a, &u, &touched);
		/* also not touched by recomputes feeding the peak's op (a
		 * rebuilt tensor that only they read is: dropped again after
		 * them, it would not be held there) */
		if (touched || (fed[t] && !rebuilt))
			continue;
		/* swapped elsewhere: only in another gap between two uses,
		 * while a slot is free */
		if (swapped && (a == UINT32_MAX || u == UINT32_MAX ||
				S->swap_step[(size_t)t * PL_GAPS + PL_GAPS - 1] != UINT32_MAX || gap_taken(S, &T, t, a)))
			continue;
		if (a != UINT32_MAX && u != UINT32_MAX) {
			double end_a = S->step_start[S->entry_step[a]] + net->ops[e[a].op].ms;

			(*out)[n++] = (struct pl_cand){ t, x->bytes, est_start(S, u) - end_a, a, u, false, rebuilt };
		} else if (sched_persistent(x) && (a != UINT32_MAX || u != UINT32_MAX)) {
			uint32_t first = T.list[T.start[t]], last = T.list[T.start[t + 1] - 1];
			double busy = est_start(S, last) - est_start(S, first);

			(*out)[n++] = (struct pl_cand){ t, x->bytes, S->sim.time_ms - busy, last, UINT32_MAX, true, false };
		}
	}
	free(fed);
	return n;
}

uint32_t pl_delay_swapins(struct pl_state *S)
{
	uint32_t n = 0, P = S->sim.peak_step;
	uint8_t *in = mp_xcalloc(S->nt + 1, 1);

	/* swap-ins issued before the peak's step whose tensor the step does not
	 * read: issue them after it instead */
	for (uint32_t i = 0, k = 0; i < S->sched.n && k <= P; i++) {
		const struct mp_action *a = &S->sched.a[i];

		if (a->kind == MP_ACT_COMPUTE)
			k++;
		else if (a->kind == MP_ACT_SWAP_IN)
			in[a->tensor] = 1;
		else if (a->kind == MP_ACT_WAIT && k <= P)
			in[a->tensor] = 0; /* used at or before the peak: not movable */
	}
	{
		const struct mp_op *op = &S->net->ops[S->sim.steps[P].op];

		for (uint32_t k = 0; k < op->n_in; k++)
			in[op->in[k]] = 0;
	}
	for (uint32_t k = 0; k < S->sim.n_peak_tensors; k++) {
		int32_t t = S->sim.peak_tensors[k];

		if (in[t] && S->in_floor[t] < P + 1 && P + 1 < S->r->n) {
			S->in_floor[t] = P + 1;
			n++;
		}
	}
	free(in);
	return n;
}

uint32_t pl_wait_swapouts(struct pl_state *S)
{
	uint32_t n = 0, P = S->sim.peak_step, k = 0, i;
	double *out_end = mp_xcalloc(S->nt + 1, sizeof(*out_end)), t_peak;

	/* each tensor's swap-out copy issued before the peak's compute, and
	 * when it ends (a later swap-in cancels it) */
	for (i = 0; i < S->sched.n; i++) {
		const struct mp_action *a = &S->sched.a[i];

		if (a->kind == MP_ACT_COMPUTE && k++ == P)
			break;
		if (a->kind == MP_ACT_SWAP_OUT)
			out_end[a->tensor] = a->end_ms;
		else if (a->kind == MP_ACT_SWAP_IN)
			out_end[a->tensor] = 0;
	}
	t_peak = i < S->sched.n ? S->sched.a[i].start_ms : S->sim.time_ms;
	for (uint32_t q = 0; q < S->sim.n_peak_tensors && P > 0; q++) {
		int32_t t = S->sim.peak_tensors[q];

		if (out_end[t] > t_peak && pl_swapped(S, t) && S->out_wait[t] != P) {
			S->out_wait[t] = P;
			n++;
		}
	}
	free(out_end);
	return n;
}

/* Builds pl_host_early may spend: one per tensor would be a build of the
 * whole schedule per weight (ResNet-152's 467 host tensors: 2.8 s). */
#define PL_EARLY_BUILDS 64

struct early {
	uint64_t budget;
	double ms;         /* the state's time */
	double *start;     /* the timeline its swap-ins were placed on */
	uint32_t builds;
	int moved;
};

/* Try list[0 .. n) early together: kept where that fits and is faster.
 * 1: kept, 0: put back, -1 with *err. */
static int early_try(struct pl_state *S, struct early *E, const uint32_t *list, uint32_t n,
		     struct mp_error *err)
{
	uint64_t o;
	int rc;

	/* (its swap-ins placed on the timeline the state's were, so only
	 * where the tensors go out differs) */
	memcpy(E->start, S->placed_on, S->r->n * sizeof(*E->start));
	memcpy(S->step_start, E->start, S->r->n * sizeof(*E->start));
	for (uint32_t k = 0; k < n; k++)
		S->host_early[list[k]] = 1;
	E->builds++;
	rc = pl_build(S, err);
	o = rc == 0 ? pl_overflow(S, E->budget) : 0;
	if (rc == 0 && !o && S->sim.time_ms < E->ms - 1e-9) {
		E->ms = S->sim.time_ms;
		E->moved += (int)n;
		return 1;
	}
	/* (put back, on the timeline it was built on: the same schedule) */
	for (uint32_t k = 0; k < n; k++)
		S->host_early[list[k]] = 0;
	memcpy(S->step_start, E->start, S->r->n * sizeof(*E->start));
	return rc < 0 || pl_build(S, err) < 0 ? -1 : 0;
}

int pl_by_bytes_desc(const void *a, const void *b, void *net)
{
	uint64_t x = ((const struct mp_net *)net)->tensors[*(const uint32_t *)a].bytes;
	uint64_t y = ((const struct mp_net *)net)->tensors[*(const uint32_t *)b].bytes;

	if (x != y)
		return x > y ? -1 : 1;
	return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1;
}

int pl_host_early(struct pl_state *S, struct mp_error *err)
{
	struct early E = { S->req->budget_bytes, S->sim.time_ms, NULL, 0, 0 };
	uint32_t *list, n = 0;
	int rc;

	/* (a plan that does not fit is the planners' to mend, planned lower
	 * as its arena asks: not made to fit by this, which would stop that) */
	if (pl_overflow(S, E.budget))
		return 0;
	list = mp_xmalloc((S->nt + 1) * sizeof(*list));
	for (uint32_t t = 0; t < S->nt; t++)
		if (S->host[t] && !S->host_early[t])
			list[n++] = t;
	E.start = mp_xmalloc((S->r->n + 1) * sizeof(*E.start));
	/* all of them, else one at a time (the largest first where there
	 * are more than the builds allow) */
	rc = n ? early_try(S, &E, list, n, err) : 1;
	if (rc == 0 && n > 1) {
		if (n > PL_EARLY_BUILDS)
			qsort_r(list, n, sizeof(*list), pl_by_bytes_desc, (void *)S->net);
		for (uint32_t k = 0; k < n && rc >= 0 && E.builds < PL_EARLY_BUILDS; k++)
			rc = early_try(S, &E, list + k, 1, err);
	}
	free(E.start);
	free(list);
	return rc < 0 ? -1 : E.moved;
}

void pl_swap(struct pl_state *S, const struct pl_cand *c)
{
	if (c->cross)
		S->host[c->t] = 1;
	else
		pl_gap_add(S, c->t, S->sim.peak_step);
}

int pl_queue_in(struct pl_state *S, struct mp_error *err)
{
	size_t steps = S->r->n * sizeof(*S->step_start);
	double ms = S->sim.time_ms, *start;
	int rc;

	if (S->queue_in || S->prefetch != PL_PREFETCH_JIT || !S->sim.n_swap_in || pl_overflow(S, S->req->budget_bytes))
		return 0;
	/* (placed on the timeline the plan's swap-ins were placed on) */
	start = mp_xmalloc(steps + sizeof(*start));
	memcpy(start, S->placed_on, steps);
	memcpy(S->step_start, start, steps);
	S->queue_in = true;
	if ((rc = pl_build(S, err)) == 0 && !pl_overflow(S, S->req->budget_bytes) && S->sim.time_ms < ms) {
		free(start);
		return 1;
	}
	S->queue_in = false;
	memcpy(S->step_start, start, steps);
	free(start);
	return rc < 0 || pl_build(S, err) < 0 ? -1 : 0;
}

int pl_fits_as_is(struct pl_state *S, struct mp_plan *p, struct mp_error *err)
{
	S->prefetch = PL_PREFETCH_JIT;
	if (pl_build(S, err) < 0)
		return -1;
	if (S->sim.peak_bytes > S->req->budget_bytes)
		return 0;
	snprintf(p->note, sizeof(p->note), "liveness fits: nothing to checkpoint");
	return 1;
}

/* FNV-1a over what the arena places: each action's kind, op, tensor,
 * algorithm and bytes, in order.  Schedules of one length, peak and time
 * may differ in thousands of actions. */
static uint64_t sched_fingerprint(const struct mp_schedule *s)
{
	uint64_t h = MP_FNV_OFFSET;

	for (uint32_t i = 0; i < s->n; i++) {
		const struct mp_action *a = &s->a[i];
		uint64_t v[4] = { (uint64_t)a->kind << 32 | (uint32_t)a->op, (uint64_t)(uint32_t)a->tensor << 32 | (uint32_t)a->algo,
				  (uint64_t)a->micro << 32 | a->micro_at, a->bytes };

		h = mp_fnv_words(h, v, 4);
	}
	return h;
}

uint64_t pl_arena_bytes(struct pl_state *S, uint64_t enough)
{
	struct mp_plan q;
	uint64_t bytes, key;

	if (S->peak_only)
		return 0;
	/* the same schedule again (a state put back and rebuilt): the answer
	 * given, recognised by its actions */
	key = sched_fingerprint(&S->sched);
	for (uint32_t k = 0; k < PL_ARENA_MEMO; k++) {
		const struct pl_arena_memo *m = &S->arena_memo[k];

		if (m->n == S->sched.n && m->key == key && m->peak == S->sim.peak_bytes && m->ms == S->sim.time_ms &&
		    m->enough == enough && m->n)
			return m->bytes;
	}
	/* a shallow view of the last build: the arena only reads them */
	plan_init(&q);
	q.sched = S->sched;
	q.sim = S->sim;
	plan_assign_arena_within(S->net, &q, enough);
	bytes = q.arena_bytes;
	free(q.offset);
	S->arena_memo[S->arena_next] = (struct pl_arena_memo){ S->sched.n, key, S->sim.peak_bytes, enough, bytes,
								S->sim.time_ms };
	S->arena_next = (S->arena_next + 1) % PL_ARENA_MEMO;
	return bytes;
}

uint64_t pl_overflow(struct pl_state *S, uint64_t B)
{
	uint64_t arena;

	if (S->sim.peak_bytes > B)
		return S->sim.peak_bytes - B;
	arena = pl_arena_bytes(S, B);
	return arena > B ? arena - B : 0;
}

bool pl_better(const struct pl_state *S, uint64_t peak_a, double ms_a, uint64_t peak_b, double ms_b)
{
	uint64_t B = S->req->budget_bytes;

	if ((peak_a <= B) != (peak_b <= B))
		return peak_a <= B;
	return peak_a <= B ? ms_a < ms_b : peak_a < peak_b;
}

void pl_take(struct pl_state *S, struct mp_plan *p)
{
	sched_release(&p->sched);
	sim_release(&p->sim);
	p->sched = S->sched;
	p->sim = S->sim;
	sched_init(&S->sched);
	memset(&S->sim, 0, sizeof(S->sim));
}

int pl_dynamic_workspace(struct pl_state *S, struct mp_error *err)
{
	const struct mp_net *net = S->net;
	uint64_t budget = S->req->budget_bytes;
	uint8_t *pinned = mp_xcalloc(net->n_ops + 1, 1);
	int rc = 0;

	for (int round = 0; round < 32; round++) {
		bool changed = false;

		/* choose per step under what the schedule leaves free there */
		for (uint32_t i = 1; i < S->sched.n; i++) {
			const struct mp_action *a = &S->sched.a[i], *wa = &S->sched.a[i - 1];
			const struct mp_op *op;
			uint64_t in_use, free_b;
			int32_t best;
			double best_ms;

			if (a->kind != MP_ACT_COMPUTE || pinned[a->op])
				continue;
			op = &net->ops[a->op];
			if (!op->n_algos || op->ws < 0 || wa->kind != MP_ACT_ALLOC || wa->tensor != op->ws)
				continue;
			in_use = wa->resident_bytes - wa->bytes;
			free_b = budget > in_use ? budget - in_use : 0;
			best = -1;
			best_ms = op->ms;
			if (sched_ws_bytes(net, a->op, -1) > free_b)
				best_ms = 1e300;
			for (uint32_t k = 0; k < op->n_algos; k++)
				if (!op->algos[k].batch && op->algos[k].workspace_bytes <= free_b &&
				    op->algos[k].ms < best_ms) {
					best = (int32_t)k;
					best_ms = op->algos[k].ms;
				}
			if (best_ms < 1e300 && best != S->algo[a->op]) {
				S->algo[a->op] = best;
				changed = true;
			}
		}
		if (!changed && S->sim.peak_bytes <= budget)
			break;
		if ((rc = pl_build(S, err)) < 0)
			break;
		if (S->sim.peak_bytes <= budget)
			continue;
		/* over: the op at the peak falls back to its default and stays there */
		{
			int32_t op = S->sim.steps[S->sim.peak_step].op;

			if (pinned[op]) {
				for (uint32_t o = 0; o < net->n_ops; o++)
					S->algo[o] = -1;
				memset(pinned, 1, net->n_ops);
				rc = pl_build(S, err);
				break;
			}
			pinned[op] = 1;
			S->algo[op] = -1;
			if ((rc = pl_build(S, err)) < 0)
				break;
		}
	}
	free(pinned);
	return rc;
}
