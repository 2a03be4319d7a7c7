/*
 * bound: a lower bound on the iteration time of every schedule that fits the
 * budget, swaps and recomputation together: an LP relaxation of the
 * simulator (analysis/sim.c), solved by Clp (lp.h).  Where Checkmate's
 * program (optimal) bounds plans that only recompute, this one also admits
 * every swap, across iterations too (POET, Patil et al. 2022, adds paging to
 * Checkmate's program the same way), so it is a bound no planner can beat.
 *
 * Moments: m = 0 is the iteration's start, m = 2t + 1 the start of route op
 * t and 2t + 2 its end, m = 2T + 1 the end of the iteration (the last copy),
 * which for persistent tensors is moment 0 again: a steady state starts as
 * it ends.  Window w runs from moment w to w + 1: odd ones are route ops
 * (their ms), even ones the gaps between them, which hold the re-runs
 * before the next op and any stall (window 0: the copies before the first
 * op; window 2T: those after the last).  Per tensor x (over the moments it
 * may matter, its window: from its first write to its last reader, or to
 * the last reader of anything a re-run rebuilds from it) and moment or
 * window, all in [0, 1]:
 *   E[m][x]  the part of x held on the device at moment m;
 *   H[m][x]  the part of it on the host only (swapped out, not yet back);
 *   I[w][x]  the part of a swap-in's copy time spent in window w;
 *   O[w][x]  the same of a swap-out;
 *   R[w][b]  block b (the forward ops that write the same tensors, engine.h)
 *            re-runs in gap w;
 *   W[w]     gap w's length in ms.
 * min sum W[w] + the route ops' ms subject to
 *   what route op t touches is held at its start and end: E = 1 there;
 *   memory at the start and the end of each route op: sum E[m][x] b(x) +
 *     what op t touches + its workspace <= budget;
 *   E[w+1][x] <= E[w][x] + I[w][x] + R[w][block(x)] - O[w][x];
 *   H[w+1][x] <= H[w][x] + O[w][x] - I[w][x];
 *   E[m][x] + H[m][x] <= 1        (a swap-out moves x, it does not copy it:
 *                                  the simulator frees its memory at the
 *                                  copy's end, and a swap-in needs one);
 *   I[w][x], O[w][x] <= E[w][x] + H[w][x] + R[w][block(x)]  (a copy moves
 *                                  what was somewhere when the window
 *                                  began, or was rebuilt in it);
 *   R[w][b] <= E[w][z] + I[w][z] + R[w][block(z)] for what b reads;
 *   in each window, sum I[w][x] copy_in(x) and sum O[w][x] copy_out(x)
 *     are at most its length; a gap is at least its re-runs' ms.
 * Every schedule the simulator accepts (and verify's steady state, for the
 * persistent tensors) gives a solution: E the part of each tensor still on
 * the device (a swap-out's part not yet copied, a swap-in's part arrived),
 * H the rest, I and O the share of each copy's time in each window, R its
 * re-runs, W its gaps (whatever runs between two route ops, stalls
 * included), whose sum with the route ops' is its iteration time.  So the
 * optimum is at most the time of any plan; it may be far below it where
 * re-runs or copies split (the relaxation's fractions: half a tensor's
 * copy frees half of it), and what it leaves out (memory inside a gap, a
 * copy's memory beyond its part, a re-run's temporaries, the copy engines'
 * order) only lowers it.  Each op runs as the state runs it (--workspace
 * none: its default); under dynamic, route ops choose a share of each
 * algorithm (A, summing to 1: its time, and its workspace at both moments),
 * re-runs their fastest; under wr and wd every op runs at its least time
 * per sample with no workspace.
 *
 * Size: O(tensors x their windows) columns and rows; refused past
 * BOUND_MAX_COLS.
 */
#include "planners.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lp.h"

#define NONE UINT32_MAX
#define KIB 1024.0

/* Per tensor: its moments [lo, hi] (cyclic: 0 .. 2T, moment 2T + 1 being
 * 0), and the first column of each kind over them (E and H per moment, I
 * and O per window lo .. hi - 1, cyclic 0 .. 2T; 0: none). */
struct btensor {
	uint32_t lo, hi;
	bool cyclic, in;   /* in: the model holds it */
	uint32_t blk;      /* block a re-run of which rebuilds it; NONE */
	int e, h, i, o;
};

struct bmodel {
	const struct pl_state *S;
	uint32_t T, M;         /* route steps; moments 0 .. M - 1 (M = 2T + 2) */
	struct btensor *x;          /* [nt] */
	uint32_t *ts, *tl;     /* route steps touching each tensor, in order (CSR) */
	struct pl_blocks bl;
	uint8_t *brc;          /* [bl.n] the block may re-run */
	uint32_t *bhi;         /* [bl.n] last moment a re-run of it may serve */
	int *rcol;             /* [bl.n] its first R column: gaps 2 last + 2, + 2, .. < bhi */
	double *op_ms;         /* [n_ops] as the state runs it, or the least of its choices */
	uint64_t *op_ws;       /* [n_ops] the same */
	int *acol;             /* [T] --workspace dynamic: the first of route op t's
				* choice columns (its default, then each algorithm:
				* a share each, summing to 1); 0: no choice */
	int *wcol;             /* [T + 1] W of gap 2k */
};

/* Does route op t touch x? */
static bool touched(const struct bmodel *F, uint32_t t, uint32_t x)
{
	uint32_t lo = F->ts[x], hi = F->ts[x + 1];

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (F->tl[mid] == t)
			return true;
		if (F->tl[mid] < t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

/* Is moment m the start or end of a route op that touches x? */
static bool forced(const struct bmodel *F, uint32_t x, uint32_t m)
{
	return m >= 1 && m <= 2 * F->T && touched(F, (m - 1) / 2, x);
}

/* E of x at moment m: a column (*c = 0), or a constant in *c. */
static int e_ref(const struct bmodel *F, uint32_t x, uint32_t m, double *c)
{
	const struct btensor *X = &F->x[x];

	*c = 0;
	if (X->cyclic && m == F->M - 1)
		m = 0;
	if (!X->in || m < X->lo || m > X->hi)
		return 0;
	if (forced(F, x, m)) {
		*c = 1;
		return 0;
	}
	return X->e + (int)(m - X->lo);
}

/* H of x at moment m (0: none). */
static int h_ref(const struct bmodel *F, uint32_t x, uint32_t m)
{
	const struct btensor *X = &F->x[x];

	if (X->cyclic && m == F->M - 1)
		m = 0;
	if (!X->in || m < X->lo || m > X->hi)
		return 0;
	return X->h + (int)(m - X->lo);
}

/* I or O of x in window w (0: none). */
static int w_ref(const struct bmodel *F, uint32_t x, uint32_t w, bool out)
{
	const struct btensor *X = &F->x[x];

	if (!X->in || w < X->lo || (X->cyclic ? w > F->M - 2 : w >= X->hi))
		return 0;
	return (out ? X->o : X->i) + (int)(w - X->lo);
}

/* R of block b in gap w (0: none). */
static int r_ref(const struct bmodel *F, uint32_t b, uint32_t w)
{
	uint32_t w0;

	if (b == NONE || !F->rcol[b] || w % 2)
		return 0;
	w0 = 2 * F->bl.last[b] + 2;
	if (w < w0 || w + 1 > F->bhi[b])
		return 0;
	return F->rcol[b] + (int)((w - w0) / 2);
}

/* Each tensor's touches (CSR) and its first and last route step. */
static void bm_touches(struct bmodel *F, uint32_t *first, uint32_t *last)
{
	const struct mp_net *net = F->S->net;
	const struct mp_route *r = F->S->r;
	uint32_t nt = net->n_tensors;

	F->ts = mp_xcalloc(nt + 2, sizeof(*F->ts));
	/* twice: count each tensor's touches, then list them (a tensor an op
	 * reads and writes is one touch) */
	for (int pass = 0; pass < 2; pass++) {
		for (uint32_t x = 0; x < nt; x++)
			first[x] = NONE;
		for (uint32_t t = 0; t < F->T; t++) {
			const struct mp_op *op = &net->ops[r->op[t]];

			for (uint32_t k = 0; k < op->n_in + op->n_out; k++) {
				uint32_t x = (uint32_t)(k < op->n_in ? op->in[k] : op->out[k - op->n_in]);

				if (net->tensors[x].kind == MP_TK_WORKSPACE || (first[x] != NONE && last[x] == t))
					continue;
				if (pass)
					F->tl[F->ts[x + 1]++] = t;
				else
					F->ts[x + 1]++;
				if (first[x] == NONE)
					first[x] = t;
				last[x] = t;
			}
		}
		if (pass)
			break;
		for (uint32_t x = 0; x < nt; x++)
			F->ts[x + 1] += F->ts[x];
		F->tl = mp_xmalloc((F->ts[nt] + 1) * sizeof(*F->tl));
		memmove(F->ts + 1, F->ts, nt * sizeof(*F->ts));
	}
}

/* An op's time and workspace: as the state runs it under --workspace none
 * and dynamic (whose choices bm_choices adds: op_ms and op_ws are then the
 * least of them, each on its own, what a re-run counts); under wr and wd
 * (micro-batches) the least time per sample of any entry and no workspace,
 * a bound on every division. */
static void bm_op_cost(const struct pl_state *S, uint32_t o, double *ms, uint64_t *ws)
{
	const struct mp_net *net = S->net;
	const struct mp_op *op = &net->ops[o];
	enum mp_ws_mode mode = S->req->ws_mode;

	sched_op_cost(net, (int32_t)o, S->algo[o], S->micro[o], S->micro_n[o], ms, ws);
	if (mode != MP_WS_NONE) {
		for (uint32_t k = 0; k < op->n_algos; k++) {
			const struct mp_algo *a = &op->algos[k];
			uint32_t B = op->batch ? op->batch : 1, at = a->batch ? a->batch : B;
			double t = mode == MP_WS_DYNAMIC ? a->ms : a->ms * B / at;

			if ((mode != MP_WS_DYNAMIC || at == B) && t < *ms)
				*ms = t;
			if ((mode != MP_WS_DYNAMIC || at == B) && a->workspace_bytes < *ws)
				*ws = a->workspace_bytes;
		}
		if (mode != MP_WS_DYNAMIC && op->n_algos)
			*ws = 0;
	}
	if (op->ws < 0)
		*ws = 0;
}

/* A choice of route op t under --workspace dynamic: k = 0 its default, k >
 * 0 algorithm k - 1 (-1: not one at the whole batch). */
static int bm_choice(const struct bmodel *F, uint32_t t, uint32_t k, double *ms, uint64_t *ws)
{
	const struct mp_net *net = F->S->net;
	int32_t o = F->S->r->op[t];
	const struct mp_op *op = &net->ops[o];

	if (k && op->algos[k - 1].batch && op->algos[k - 1].batch != (op->batch ? op->batch : 1))
		return -1;
	sched_op_cost(net, o, (int32_t)k - 1, NULL, 0, ms, ws);
	if (op->ws < 0)
		*ws = 0;
	return 0;
}

/* --workspace dynamic: each route op with algorithms chooses among them, a
 * share of each (the relaxation of one choice), summing to 1. */
static void bm_choices(struct bmodel *F, struct lp *L, struct lp_row *R)
{
	const struct mp_net *net = F->S->net;

	F->acol = mp_xcalloc(F->T + 1, sizeof(*F->acol));
	if (F->S->req->ws_mode != MP_WS_DYNAMIC)
		return;
	for (uint32_t t = 0; t < F->T; t++) {
		int32_t o = F->S->r->op[t];
		uint32_t n = net->ops[o].n_algos + 1;

		if (n == 1)
			continue;
		for (uint32_t k = 0; k < n; k++) {
			double ms;
			uint64_t ws;
			int c = lp_col(L, 'c', 1, 0);

			if (!k)
				F->acol[t] = c;
			if (bm_choice(F, t, k, &ms, &ws) < 0)
				L->col_ub[c - 1] = 0;
			else
				L->obj[c - 1] = ms - F->op_ms[o];
			lp_row_add(R, c, 1.0);
		}
		lp_row_emit(L, R, LP_EQ, 1.0);
	}
}

/* Route op t's choices, each's extra time (ms) or workspace (KiB) over the
 * least, into the row. */
static void bm_choice_terms(const struct bmodel *F, struct lp_row *R, uint32_t t, bool ws_kib, double sign)
{
	int32_t o = F->S->r->op[t];

	if (!F->acol[t])
		return;
	for (uint32_t k = 0; k <= F->S->net->ops[o].n_algos; k++) {
		double ms;
		uint64_t ws;

		if (bm_choice(F, t, k, &ms, &ws) < 0)
			continue;
		lp_row_add(R, F->acol[t] + (int)k,
			   sign * (ws_kib ? (double)(ws - F->op_ws[o]) / KIB : ms - F->op_ms[o]));
	}
}

/* Touches, blocks and windows. */
static void bm_build(struct bmodel *F, const struct pl_state *S)
{
	const struct mp_net *net = S->net;
	uint32_t nt = net->n_tensors;
	uint32_t *first = mp_xmalloc((nt + 1) * sizeof(*first)), *last = mp_xcalloc(nt + 1, sizeof(*last));

	memset(F, 0, sizeof(*F));
	F->S = S;
	F->T = S->r->n;
	F->M = 2 * F->T + 2;
	F->x = mp_xcalloc(nt + 1, sizeof(*F->x));
	F->op_ms = mp_xmalloc((net->n_ops + 1) * sizeof(*F->op_ms));
	F->op_ws = mp_xmalloc((net->n_ops + 1) * sizeof(*F->op_ws));
	for (uint32_t o = 0; o < net->n_ops; o++)
		bm_op_cost(S, o, &F->op_ms[o], &F->op_ws[o]);
	bm_touches(F, first, last);
	pl_blocks_build(S, F->op_ms, &F->bl);
	F->brc = mp_xmalloc(F->bl.n + 1);
	memset(F->brc, 1, F->bl.n + 1);
	F->bhi = mp_xcalloc(F->bl.n + 1, sizeof(*F->bhi));
	F->rcol = mp_xcalloc(F->bl.n + 1, sizeof(*F->rcol));
	for (uint32_t j = 0; j < F->bl.start[F->bl.n]; j++)
		if (!net->ops[F->bl.ops[j]].recomputable)
			F->brc[F->bl.of_op[F->bl.ops[j]]] = 0;
	for (uint32_t x = 0; x < nt; x++) {
		struct btensor *X = &F->x[x];
		const struct mp_tensor *tx = &net->tensors[x];

		X->blk = NONE;
		if (first[x] == NONE || tx->kind == MP_TK_WORKSPACE || !tx->bytes)
			continue;
		X->in = true;
		X->cyclic = sched_persistent(tx);
		X->lo = X->cyclic ? 0 : 2 * first[x] + 1;
		X->hi = X->cyclic ? F->M - 2 : 2 * last[x] + 2;
		if (!X->cyclic && tx->producer >= 0 && F->bl.of_op[tx->producer] != NONE &&
		    F->brc[F->bl.of_op[tx->producer]])
			X->blk = F->bl.of_op[tx->producer];
	}
	/* a re-run serves up to the last moment of what it rebuilds, and what
	 * it reads must be there as late: blocks in reverse route order */
	for (uint32_t b = F->bl.n; b-- > 0;) {
		uint32_t hi = 0;

		if (!F->brc[b])
			continue;
		for (uint32_t j = F->bl.start[b]; j < F->bl.start[b + 1]; j++) {
			const struct mp_op *op = &net->ops[F->bl.ops[j]];

			for (uint32_t k = 0; k < op->n_out; k++)
				if (F->x[op->out[k]].blk == b && F->x[op->out[k]].hi > hi)
					hi = F->x[op->out[k]].hi;
		}
		F->bhi[b] = hi;
		for (uint32_t j = F->bl.start[b]; j < F->bl.start[b + 1]; j++) {
			const struct mp_op *op = &net->ops[F->bl.ops[j]];

			for (uint32_t k = 0; k < op->n_in; k++) {
				struct btensor *Z = &F->x[op->in[k]];

				if (Z->in && !Z->cyclic && Z->blk != b && Z->hi < hi)
					Z->hi = hi;
			}
		}
	}
	free(first);
	free(last);
}

static void bm_free(struct bmodel *F)
{
	free(F->x);
	free(F->ts);
	free(F->tl);
	pl_blocks_release(&F->bl);
	free(F->brc);
	free(F->bhi);
	free(F->rcol);
	free(F->op_ms);
	free(F->op_ws);
	free(F->acol);
	free(F->wcol);
}

/* n continuous columns in [0, ub]; the first's number. */
static int cols(struct lp *L, uint32_t n, double ub, double obj)
{
	int c = lp_col(L, 'c', ub, obj);

	for (uint32_t k = 1; k < n; k++)
		lp_col(L, 'c', ub, obj);
	return c;
}

/* The columns, in the order e_ref and the others expect them; returns their
 * count (without making them when L is NULL). */
static uint64_t bm_columns(struct bmodel *F, struct lp *L)
{
	const struct mp_net *net = F->S->net;
	uint64_t n = 0;

	for (uint32_t x = 0; x < net->n_tensors; x++) {
		struct btensor *X = &F->x[x];
		uint32_t nm, nw;

		if (!X->in)
			continue;
		nm = X->hi - X->lo + 1;
		nw = X->cyclic ? nm : nm - 1;
		n += 2ull * nm + 2ull * nw;
		if (!L)
			continue;
		X->e = cols(L, nm, 1, 0);
		/* (nothing is on the host before its first write) */
		X->h = lp_col(L, 'c', X->cyclic ? 1 : 0, 0);
		if (nm > 1)
			cols(L, nm - 1, 1, 0);
		X->i = nw ? cols(L, nw, 1, 0) : 0;
		X->o = nw ? cols(L, nw, 1, 0) : 0;
	}
	for (uint32_t b = 0; b < F->bl.n; b++) {
		uint32_t w0 = 2 * F->bl.last[b] + 2, nw;

		if (!F->brc[b] || F->bhi[b] < w0 + 1)
			continue;
		nw = (F->bhi[b] - 1 - w0) / 2 + 1;
		n += nw;
		if (L)
			F->rcol[b] = cols(L, nw, 1, 0);
	}
	n += F->T + 1;
	if (L) {
		F->wcol = mp_xmalloc((F->T + 1) * sizeof(*F->wcol));
		for (uint32_t k = 0; k <= F->T; k++)
			F->wcol[k] = lp_col(L, 'c', 1e9, 1);
	}
	return n;
}

/* Per tensor and window: what is held moves to the host and back, or
 * comes back by a re-run, or goes; a part is in one place. */
static void bm_tensor_rows(struct bmodel *F, struct lp *L, struct lp_row *R, uint32_t x)
{
	const struct btensor *X = &F->x[x];
	uint32_t last = X->cyclic ? F->M - 2 : X->hi - 1;

	for (uint32_t w = X->lo; w <= last && (X->cyclic || X->hi > X->lo); w++) {
		double c0, c1;
		int e0 = e_ref(F, x, w, &c0), e1 = e_ref(F, x, w + 1, &c1);
		int in = w_ref(F, x, w, false), out = w_ref(F, x, w, true), rb = r_ref(F, X->blk, w);
		int h0 = h_ref(F, x, w), h1 = h_ref(F, x, w + 1);

		/* E[w+1] <= E[w] + I[w] + R[w] - O[w] */
		lp_row_add(R, e1, 1.0);
		lp_row_add(R, e0, -1.0);
		lp_row_add(R, in, -1.0);
		lp_row_add(R, rb, -1.0);
		lp_row_add(R, out, 1.0);
		lp_row_emit(L, R, LP_LE, c0 - c1);
		/* H[w+1] <= H[w] + O[w] - I[w] */
		lp_row_add(R, h1, 1.0);
		lp_row_add(R, h0, -1.0);
		lp_row_add(R, out, -1.0);
		lp_row_add(R, in, 1.0);
		lp_row_emit(L, R, LP_LE, 0.0);
		/* E[w+1] + H[w+1] <= 1 */
		lp_row_add(R, h1, 1.0);
		lp_row_add(R, e1, 1.0);
		lp_row_emit(L, R, LP_LE, 1.0 - c1);
		/* a copy moves what was somewhere when the window began, or
		 * was rebuilt in it: I[w], O[w] <= E[w] + H[w] + R[w] */
		for (int k = 0; k < 2; k++) {
			int c = k ? out : in;

			if (!c)
				continue;
			lp_row_add(R, c, 1.0);
			lp_row_add(R, e0, -1.0);
			lp_row_add(R, h0, -1.0);
			lp_row_add(R, rb, -1.0);
			lp_row_emit(L, R, LP_LE, c0);
		}
	}
}

/* What each re-run reads. */
static void bm_rerun_rows(struct bmodel *F, struct lp *L, struct lp_row *R)
{
	const struct mp_net *net = F->S->net;

	for (uint32_t b = 0; b < F->bl.n; b++)
		for (uint32_t w = 2 * F->bl.last[b] + 2; r_ref(F, b, w); w += 2)
			for (uint32_t j = F->bl.start[b]; j < F->bl.start[b + 1]; j++) {
				const struct mp_op *op = &net->ops[F->bl.ops[j]];

				for (uint32_t k = 0; k < op->n_in; k++) {
					uint32_t z = (uint32_t)op->in[k];
					double c;
					int e;

					if (!F->x[z].in || F->x[z].blk == b)
						continue;
					e = e_ref(F, z, w, &c);
					if (c > 0)
						continue;
					lp_row_add(R, r_ref(F, b, w), 1.0);
					lp_row_add(R, e, -1.0);
					lp_row_add(R, w_ref(F, z, w, false), -1.0);
					lp_row_add(R, r_ref(F, F->x[z].blk, w), -1.0);
					lp_row_emit(L, R, LP_LE, 0.0);
				}
			}
}

/* Each window's length: a route op's own, a gap at least its re-runs; each
 * copy engine busy at most that long. */
static void bm_window_rows(struct bmodel *F, struct lp *L, struct lp_row *R)
{
	const struct mp_net *net = F->S->net;
	const struct mp_route *r = F->S->r;
	const struct mp_device *dev = &F->S->req->device;

	for (uint32_t w = 0; w < F->M - 1; w++) {
		bool gap = w % 2 == 0;
		double len = gap ? 0 : F->op_ms[r->op[(w - 1) / 2]];

		if (gap) {
			lp_row_add(R, F->wcol[w / 2], 1.0);
			for (uint32_t b = 0; b < F->bl.n; b++)
				lp_row_add(R, r_ref(F, b, w), -F->bl.ms[b]);
			if (R->n > 1)
				lp_row_emit(L, R, LP_GE, 0.0);
			R->n = 0;
		}
		for (int out = 0; out < 2; out++) {
			for (uint32_t x = 0; x < net->n_tensors; x++)
				lp_row_add(R, w_ref(F, x, w, out), device_copy_ms(dev, net->tensors[x].bytes, !out));
			if (!R->n)
				continue;
			if (gap)
				lp_row_add(R, F->wcol[w / 2], -1.0);
			else
				bm_choice_terms(F, R, (w - 1) / 2, false, -1.0);
			lp_row_emit(L, R, LP_LE, len);
		}
	}
}

/* Memory at the start and the end of each route op.  Returns -1, or the
 * first route step whose op alone needs more than the budget. */
static int bm_memory_rows(struct bmodel *F, struct lp *L, struct lp_row *R)
{
	const struct mp_net *net = F->S->net;
	const struct mp_route *r = F->S->r;
	double budget = (double)F->S->req->budget_bytes / KIB;

	for (uint32_t m = 1; m <= 2 * F->T; m++) {
		double fixed = (double)F->op_ws[r->op[(m - 1) / 2]] / KIB;

		for (uint32_t x = 0; x < net->n_tensors; x++) {
			double c;
			int e;

			if (!F->x[x].in)
				continue;
			e = e_ref(F, x, m, &c);
			fixed += c * (double)net->tensors[x].bytes / KIB;
			lp_row_add(R, e, (double)net->tensors[x].bytes / KIB);
		}
		bm_choice_terms(F, R, (m - 1) / 2, true, 1.0);
		if (fixed > budget) {
			R->n = 0;
			return (int)((m - 1) / 2);
		}
		lp_row_emit(L, R, LP_LE, budget - fixed);
	}
	return -1;
}

uint64_t plan_bound_size(const struct pl_state *S)
{
	struct bmodel F;
	uint64_t n;

	bm_build(&F, S);
	n = bm_columns(&F, NULL);
	bm_free(&F);
	return n;
}

int plan_bound(const struct pl_state *S, double limit_s, struct pl_bound *out, struct mp_error *err)
{
	struct bmodel F;
	struct lp L = { 0 };
	struct lp_row R = { 0 };
	struct lp_solve_out so = { LP_SOLVE_NONE, 0, 0, 0 };
	uint64_t n;
	double t0, route_ms = 0;
	int stuck;

	memset(out, 0, sizeof(*out));
	out->stuck = -1;
	if (S->net->n_jobs > 1) {
		mp_error_set(err, "a plan of several jobs has none (each job's compute is its own)");
		return -1;
	}
	bm_build(&F, S);
	if ((n = bm_columns(&F, NULL)) > BOUND_MAX_COLS) {
		mp_error_set(err, "the net is too large for its program (%u ops: %llu variables, "
			     "the limit is %u)", S->net->n_ops, (unsigned long long)n, BOUND_MAX_COLS);
		bm_free(&F);
		return -1;
	}
	bm_columns(&F, &L);
	bm_choices(&F, &L, &R);
	if ((stuck = bm_memory_rows(&F, &L, &R)) >= 0) {
		out->status = LP_SOLVE_INFEASIBLE;
		out->stuck = stuck;
		goto done;
	}
	for (uint32_t x = 0; x < S->net->n_tensors; x++)
		if (F.x[x].in)
			bm_tensor_rows(&F, &L, &R, x);
	bm_rerun_rows(&F, &L, &R);
	bm_window_rows(&F, &L, &R);
	for (uint32_t t = 0; t < F.T; t++)
		route_ms += F.op_ms[S->r->op[t]];
	t0 = plan_now_s();
	lp_solve_isolated(&L, NULL, limit_s, NULL, 0, true, &so, NULL);
	out->secs = plan_now_s() - t0;
	out->status = so.status;
	out->ms = so.bound + route_ms;
	out->clp_status = so.nodes;
done:
	out->cols = L.n_col;
	out->rows = L.n_row;
	lp_row_release(&R);
	lp_free(&L);
	bm_free(&F);
	return 0;
}

void plan_lower_bound(const struct mp_net *net, const struct mp_route *r, const struct mp_plan_req *req,
		   struct mp_bound *out)
{
	struct pl_state S;
	struct pl_bound fl;
	struct mp_error err;

	memset(out, 0, sizeof(*out));
	out->stuck_op = -1;
	out->status = MP_BOUND_UNKNOWN;
	pl_init(&S, net, r, req);
	if (plan_bound(&S, plan_time_limit(req), &fl, &err) < 0) {
		snprintf(out->why, sizeof(out->why), "%s", err.msg);
		pl_release(&S);
		return;
	}
	pl_release(&S);
	out->cols = fl.cols;
	out->rows = fl.rows;
	out->secs = fl.secs;
	if (fl.status == LP_SOLVE_OPTIMAL) {
		out->status = MP_BOUND_FOUND;
		out->ms = fl.ms;
	} else if (fl.status == LP_SOLVE_INFEASIBLE) {
		out->status = MP_BOUND_NONE_FITS;
		out->stuck_op = fl.stuck >= 0 ? r->op[fl.stuck] : -1;
	} else if (fl.status == LP_SOLVE_TIME) {
		snprintf(out->why, sizeof(out->why), "its program did not solve in the %g s limit (--time-limit)",
			 plan_time_limit(req));
	} else if (fl.status == LP_SOLVE_LOST) {
		snprintf(out->why, sizeof(out->why), "the solver %s", LP_SOLVE_LOST_WHY);
	} else {
		snprintf(out->why, sizeof(out->why), "Clp stopped without an answer (status %d)", fl.clp_status);
	}
}
