/*
 * greedy's online pass: Dynamic Tensor Rematerialization (Kirisame et al.
 * 2021) run over the route as DTR runs over a training step, its decisions
 * recorded as a static compute sequence.  Ops run in route order; before an
 * op, the inputs it reads that were evicted are rematerialized (their forward
 * writers re-run, evicted inputs of those first, recursively); when the
 * op's new outputs and workspace do not fit the budget, resident activations
 * are evicted, the one with the smallest
 *
 *     h(t) = cost(t) / (bytes(t) * staleness(t))
 *
 * first, where cost(t) re-runs t's writers plus the rebuild of their inputs
 * that are evicted too (DTR's evicted neighbourhood, one level deep) and
 * staleness is the time since t was last touched.  Every tensor is freed
 * after its last use in the route.  The sequence then goes through the shared
 * emitter and the one simulator, which have the last word: the emitter frees
 * a generation at its last touch, never later than the eviction here.
 *
 * Where the static greedy looks at one peak at a time and can stop on a peak
 * whose only remedies raise another, this pass sees memory at every step:
 * U-Net at 70% of liveness (--workspace none), +9.2% where the static passes
 * reach +38%, and only with swaps.
 *
 * A re-run runs a whole block (forward ops joined by the tensors they write,
 * as optimal's blocks are), so everything it writes comes back at its final
 * forward version.  Only activations of blocks that may re-run are evicted:
 * every op of the block may, and what it reads from outside the block is
 * final when it reads it; nothing outside forward writes them.  O(route +
 * rematerializations) steps; an eviction scans the resident candidates, at
 * most DTR_SAMPLE of them (sampled beyond, as DTR does).
 */
#include "planners.h"

#include <stdlib.h>
#include <string.h>

/* Candidates examined per eviction at most. */
#define DTR_SAMPLE 512
/* Rematerialization depth at most (a deeper chain fails the pass). */
#define DTR_MAX_DEPTH 256
/* Runs at most, for lower budgets while over, then bisecting. */
#define DTR_RUNS 8

struct dtr {
	struct pl_state *S;
	const struct mp_net *net;
	uint64_t cap;         /* bytes for what is not persistent */
	uint64_t used;
	uint32_t i;           /* route step being prepared */
	double now;           /* modelled clock, ms */
	uint64_t rng;
	uint32_t stamp;       /* pins: pin[t] == stamp */
	uint32_t depth;
	bool failed;
	/* per tensor */
	uint8_t *res;         /* resident */
	uint8_t *ok;          /* may be evicted and rematerialized */
	uint32_t *last;       /* last route step touching it */
	uint32_t *done;       /* route step of its last forward writer
			       * (UINT32_MAX: none) */
	uint32_t *pin;
	double *seen;         /* clock at its last touch */
	uint32_t *blk;        /* block of its forward writers (UINT32_MAX: none) */
	uint32_t *cpos;       /* position in cand, UINT32_MAX: not there */
	int32_t *cand;        /* resident tensors that ok allows to evict */
	uint32_t n_cand;
	int32_t *swept;       /* rematerialized for this step: freed if dead */
	uint32_t n_swept, cap_swept;
	struct pl_blocks bl;  /* what a re-run runs */
	/* the sequence */
	struct mp_entry *e;
	uint32_t n_e, cap_e;
};

static bool counted(const struct dtr *D, int32_t t)
{
	const struct mp_tensor *x = &D->net->tensors[t];

	return x->bytes && !sched_persistent(x) && x->kind != MP_TK_WORKSPACE;
}

static void make_resident(struct dtr *D, int32_t t)
{
	if (D->res[t])
		return;
	D->res[t] = 1;
	D->used += D->net->tensors[t].bytes;
	if (D->ok[t]) {
		D->cpos[t] = D->n_cand;
		D->cand[D->n_cand++] = t;
	}
}

static void release(struct dtr *D, int32_t t)
{
	if (!D->res[t])
		return;
	D->res[t] = 0;
	D->used -= D->net->tensors[t].bytes;
	if (D->cpos[t] != UINT32_MAX) {
		int32_t last = D->cand[--D->n_cand];

		D->cand[D->cpos[t]] = last;
		D->cpos[last] = D->cpos[t];
		D->cpos[t] = UINT32_MAX;
	}
}

/* Re-running t's block, and the blocks of its evicted inputs. */
static double h_cost(const struct dtr *D, int32_t t)
{
	uint32_t b = D->blk[t];
	double ms = D->bl.ms[b];

	for (uint32_t j = D->bl.start[b]; j < D->bl.start[b + 1]; j++) {
		const struct mp_op *w = &D->net->ops[D->bl.ops[j]];

		for (uint32_t k = 0; k < w->n_in; k++) {
			int32_t y = w->in[k];

			if (D->blk[y] != b && D->blk[y] != UINT32_MAX && counted(D, y) && !D->res[y])
				ms += D->bl.ms[D->blk[y]];
		}
	}
	return ms;
}

static uint64_t xs(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

/* Evict until need more bytes fit; false when nothing may go (the step then
 * runs over the budget, and the simulator will say so). */
static bool make_room(struct dtr *D, uint64_t need)
{
	while (D->used + need > D->cap) {
		uint32_t n = D->n_cand, look = n < DTR_SAMPLE ? n : DTR_SAMPLE;
		int32_t best = -1;
		double best_h = 0;

		for (uint32_t q = 0; q < look; q++) {
			int32_t t = D->cand[n <= DTR_SAMPLE ? q : xs(&D->rng) % n];
			double stale, h;

			if (D->pin[t] == D->stamp || D->done[t] >= D->i)
				continue;
			stale = D->now - D->seen[t] + 1e-3;
			h = h_cost(D, t) / ((double)D->net->tensors[t].bytes * stale);
			if (best < 0 || h < best_h) {
				best = t;
				best_h = h;
			}
		}
		if (best < 0)
			return false;
		release(D, best);
	}
	return true;
}

static void push(struct dtr *D, int32_t op, bool recompute)
{
	if (D->S->max_entries && D->n_e >= D->S->max_entries) {
		D->failed = true;
		return;
	}
	mp_grow((void **)&D->e, &D->cap_e, D->n_e + 1, sizeof(*D->e));
	D->e[D->n_e++] = (struct mp_entry){ op, recompute, -1 };
}

/* Run op (a route step, or a re-run): room for its new outputs and its
 * workspace, then the clock and the touches. */
static void run_op(struct dtr *D, int32_t op, bool recompute)
{
	const struct mp_op *o = &D->net->ops[op];
	uint64_t need = sched_ws_bytes(D->net, op, D->S->algo[op]);

	for (uint32_t k = 0; k < o->n_out; k++) {
		int32_t t = o->out[k];

		if (!counted(D, t))
			continue;
		D->pin[t] = D->stamp;
		if (!D->res[t])
			need += D->net->tensors[t].bytes;
	}
	make_room(D, need);
	for (uint32_t k = 0; k < o->n_out; k++)
		if (counted(D, o->out[k]))
			make_resident(D, o->out[k]);
	push(D, op, recompute);
	D->now += sched_op_ms(D->net, op, D->S->algo[op]);
	for (uint32_t k = 0; k < o->n_in + o->n_out; k++) {
		int32_t t = k < o->n_in ? o->in[k] : o->out[k - o->n_in];

		D->seen[t] = D->now;
	}
}

static void remat(struct dtr *D, int32_t t);

/* Make t resident (rematerializing it if it was evicted) and pin it. */
static void need_input(struct dtr *D, int32_t t)
{
	if (!counted(D, t))
		return;
	if (!D->res[t])
		remat(D, t);
	D->pin[t] = D->stamp;
}

static void sweep(struct dtr *D, int32_t t)
{
	mp_grow((void **)&D->swept, &D->cap_swept, D->n_swept + 1, sizeof(*D->swept));
	D->swept[D->n_swept++] = t;
}

/* Re-run t's block: its ops in route order, each after the inputs from
 * outside the block it reads. */
static void remat(struct dtr *D, int32_t t)
{
	uint32_t b = D->blk[t];

	if (!D->ok[t] || D->depth >= DTR_MAX_DEPTH) {
		D->failed = true; /* evicted only when ok: a chain too deep */
		return;
	}
	D->depth++;
	for (uint32_t j = D->bl.start[b]; j < D->bl.start[b + 1] && !D->failed; j++) {
		const struct mp_op *w = &D->net->ops[D->bl.ops[j]];

		for (uint32_t k = 0; k < w->n_in && !D->failed; k++)
			if (D->blk[w->in[k]] != b)
				need_input(D, w->in[k]);
		run_op(D, (int32_t)D->bl.ops[j], true);
		for (uint32_t k = 0; k < w->n_in; k++)
			sweep(D, w->in[k]);
		for (uint32_t k = 0; k < w->n_out; k++)
			sweep(D, w->out[k]);
	}
	D->depth--;
}

/*
 * Which activations may be evicted.  A block may re-run when all its ops may
 * and what they read is final when they read it (not rewritten later in
 * forward, nor in a later phase, optimal's rule); its activations that
 * nothing outside forward writes may go.  O(ops + uses).
 */
static void evictable(struct dtr *D)
{
	const struct pl_state *S = D->S;
	const struct mp_net *net = D->net;
	const struct mp_route *r = S->r;
	double *op_ms = mp_xmalloc((net->n_ops + 1) * sizeof(*op_ms));
	uint8_t *rerun, *again;

	for (uint32_t o = 0; o < net->n_ops; o++)
		op_ms[o] = sched_op_ms(net, (int32_t)o, S->algo[o]);
	pl_blocks_build(S, op_ms, &D->bl);
	free(op_ms);
	for (uint32_t t = 0; t < S->nt; t++)
		if (S->fw_start[t] < S->fw_start[t + 1])
			D->blk[t] = D->bl.of_op[S->fw_list[S->fw_start[t]]];
	/* what a later phase writes again: never evicted, and a block that
	 * reads it may not re-run (it would read the rewritten version) */
	again = mp_xcalloc(S->nt + 1, 1);
	for (uint32_t i = r->n_fwd; i < r->n; i++) {
		const struct mp_op *o = &net->ops[r->op[i]];

		for (uint32_t k = 0; k < o->n_out; k++)
			again[o->out[k]] = 1;
	}
	rerun = mp_xmalloc(D->bl.n + 1);
	memset(rerun, 1, D->bl.n + 1);
	for (uint32_t i = 0; i < r->n_fwd; i++) {
		const struct mp_op *o = &net->ops[r->op[i]];
		uint32_t b = D->bl.of_op[r->op[i]];

		if (!o->recomputable)
			rerun[b] = 0;
		for (uint32_t k = 0; k < o->n_in; k++) {
			int32_t x = o->in[k];

			if (counted(D, x) && (again[x] || (D->blk[x] != b && D->done[x] != UINT32_MAX && D->done[x] > i)))
				rerun[b] = 0;
		}
	}
	for (uint32_t t = 0; t < S->nt; t++)
		D->ok[t] = D->blk[t] != UINT32_MAX && rerun[D->blk[t]] && S->droppable[t] && !again[t] &&
			   counted(D, (int32_t)t);
	free(again);
	free(rerun);
}

static void dtr_init(struct dtr *D, struct pl_state *S)
{
	const struct mp_net *net = S->net;
	const struct mp_route *r = S->r;
	size_t n = S->nt + 1;

	memset(D, 0, sizeof(*D));
	D->S = S;
	D->net = net;
	D->res = mp_xcalloc(n, 1);
	D->ok = mp_xcalloc(n, 1);
	D->last = mp_xcalloc(n, sizeof(*D->last));
	D->done = mp_xmalloc(n * sizeof(*D->done));
	D->pin = mp_xcalloc(n, sizeof(*D->pin));
	D->seen = mp_xcalloc(n, sizeof(*D->seen));
	D->cpos = mp_xmalloc(n * sizeof(*D->cpos));
	D->blk = mp_xmalloc(n * sizeof(*D->blk));
	D->cand = mp_xmalloc(n * sizeof(*D->cand));
	for (uint32_t t = 0; t < S->nt; t++) {
		D->done[t] = UINT32_MAX;
		D->cpos[t] = UINT32_MAX;
		D->blk[t] = UINT32_MAX;
	}
	for (uint32_t i = 0; i < r->n; i++) {
		const struct mp_op *o = &net->ops[r->op[i]];

		for (uint32_t k = 0; k < o->n_in; k++)
			D->last[o->in[k]] = i;
		for (uint32_t k = 0; k < o->n_out; k++) {
			D->last[o->out[k]] = i;
			if (i < r->n_fwd)
				D->done[o->out[k]] = i;
		}
	}
	evictable(D);
}

static void dtr_release(struct dtr *D)
{
	free(D->res);
	free(D->ok);
	free(D->last);
	free(D->done);
	free(D->pin);
	free(D->seen);
	free(D->cpos);
	free(D->blk);
	pl_blocks_release(&D->bl);
	free(D->cand);
	free(D->swept);
	free(D->e);
}

/* One run under cap bytes beyond the persistent ones: the sequence, or
 * false when a rematerialization chain failed. */
static bool dtr_run(struct dtr *D, uint64_t cap)
{
	const struct mp_net *net = D->net;
	const struct mp_route *r = D->S->r;

	memset(D->res, 0, D->S->nt);
	for (uint32_t t = 0; t < D->S->nt; t++)
		D->cpos[t] = UINT32_MAX;
	D->n_cand = 0;
	D->used = 0;
	D->cap = cap;
	D->now = 0;
	D->n_e = 0;
	D->failed = false;
	D->rng = 0x2545f4914f6cdd1dull;
	for (D->i = 0; D->i < r->n && !D->failed; D->i++) {
		int32_t op = r->op[D->i];
		const struct mp_op *o = &net->ops[op];

		D->stamp++;
		D->n_swept = 0;
		for (uint32_t k = 0; k < o->n_in; k++)
			if (D->res[o->in[k]])
				D->pin[o->in[k]] = D->stamp;
		for (uint32_t k = 0; k < o->n_in && !D->failed; k++)
			need_input(D, o->in[k]);
		/* what was rebuilt only on the way, and nothing reads again */
		for (uint32_t q = 0; q < D->n_swept; q++)
			if (D->last[D->swept[q]] < D->i)
				release(D, D->swept[q]);
		run_op(D, op, false);
		for (uint32_t k = 0; k < o->n_in + o->n_out; k++) {
			int32_t t = k < o->n_in ? o->in[k] : o->out[k - o->n_in];

			if (D->last[t] <= D->i)
				release(D, t);
		}
	}
	return !D->failed;
}

int plan_greedy_dtr(struct pl_state *S, struct mp_plan *p, struct mp_error *err)
{
	uint64_t budget = S->req->budget_bytes, fixed = 0, target = budget, best_over = UINT64_MAX;
	uint64_t ok = 0, failed = budget + 1; /* the highest target that fit, the lowest that did not */
	struct mp_entry *best = NULL;
	uint32_t n_best = 0;
	double best_ms = 0;
	struct dtr D;
	int rc = 0;

	for (uint32_t t = 0; t < S->nt; t++)
		if (sched_persistent(&S->net->tensors[t]) && S->net->tensors[t].kind != MP_TK_WORKSPACE)
			fixed += S->net->tensors[t].bytes;
	dtr_init(&D, S);
	/* the simulator's peak or the arena over the budget: run again for a
	 * budget lower by the overflow; once one fits, bisect between it and
	 * the lowest that did not (a higher budget evicts less: faster).  The
	 * fastest that fits wins, else the one over by least. */
	for (int k = 0; k < DTR_RUNS && target > fixed; k++) {
		uint64_t over;

		if (!dtr_run(&D, target - fixed))
			break;
		free(S->seq);
		S->seq = mp_xmalloc((D.n_e + 1) * sizeof(*S->seq));
		memcpy(S->seq, D.e, D.n_e * sizeof(*D.e));
		S->n_seq = D.n_e;
		p->iterations++;
		if ((rc = pl_build(S, err)) != 0)
			break;
		over = pl_overflow(S, S->req->budget_bytes);
		if (over < best_over || (over == 0 && S->sim.time_ms < best_ms)) {
			free(best);
			best = S->seq;
			n_best = S->n_seq;
			S->seq = NULL;
			best_over = over;
			best_ms = S->sim.time_ms;
		}
		if (over) {
			failed = target;
			if (ok)
				target = ok + (failed - ok) / 2;
			else if (target > over)
				target -= over;
			else
				break;
		} else {
			ok = target;
			if (failed - ok <= budget / 128)
				break;
			target = ok + (failed - ok) / 2;
		}
	}
	dtr_release(&D);
	free(S->seq);
	S->seq = best;
	S->n_seq = n_best;
	if (rc < 0)
		return -1;
	p->iterations++;
	return pl_build(S, err) < 0 ? -1 : 0;
}
