/*
 * chain: optimal checkpointing of a chain of blocks by dynamic programming
 * (Beaumont et al. 2019, "Optimal checkpointing for heterogeneous chains",
 * rotor; Griewank's revolve is the homogeneous case).  The forward step
 * boundaries that one tensor crosses (cuts), or one or two (finer, inside
 * residual blocks), split the net into stages (route_bounds); both are
 * planned and the better plan wins.  Per stage: its forward and backward
 * time, the bytes of its input (x), and what it keeps for its backward in
 * each mode: everything its backward reads (abar), that but the outputs of
 * memory-bound ops, rebuilt before their first backward reader (apart, +
 * upart ms), or only its output, with what each backward op reads rebuilt
 * from the input (amin, + umin ms).  For stages s..t with memory m beyond
 * the input of s:
 *   keep       run s in one of the three modes, solve s+1..t in what is
 *              left, backward s
 *   ckpt(s')   run s..s'-1 keeping nothing, keep x_s', solve s'..t in
 *              m - x_s', then solve s..s'-1 again in m (a recompute)
 * The choice table, for every m at once, becomes a compute sequence
 * (recomputes included) that the shared emitter turns into allocations; the
 * largest m whose simulated schedule fits the budget wins (binary search).
 * Stages are merged to at most CH_MAX_STAGES; memory is counted in CH_UNITS
 * steps of the stored bytes: O(L^3 U) for the table, O(log U) builds.
 */
#include "planners.h"

#include <stdlib.h>
#include <string.h>

#define CH_MAX_STAGES 96
#define CH_UNITS 192
#define CH_ALL 0
#define CH_PART UINT16_MAX
#define CH_MIN (UINT16_MAX - 1)

struct chain {
	uint32_t L;            /* stages */
	uint32_t *fwd_start;   /* [L + 1] forward route steps of each stage (CSR over r->op) */
	uint32_t *bwd_lo, *bwd_hi; /* [L] stage s's backward ops: bwd_ops[bwd_lo[s] .. bwd_hi[s]) */
	uint32_t *bwd_ops;     /* [n_bwd] in route order (the stages in reverse) */
	double *uf, *ub;       /* [L] milliseconds */
	uint32_t *x, *abar;    /* [L] in units */
	uint32_t *apart;       /* [L] units a stage keeps in the partial mode */
	double *upart;         /* [L] milliseconds its rebuilds add */
	uint8_t *cheap;        /* [nt] dropped in the partial mode and rebuilt
				* before its stage's backward reads it */
	uint32_t *amin;        /* [L] units a stage holds in the minimal mode
			        * (UINT32_MAX: the mode is not possible) */
	double *umin;          /* [L] milliseconds its rebuilds add */
	uint32_t *stage_w;     /* [nt] stage whose forward writes t first, or UINT32_MAX */
	uint8_t *is_in;        /* [nt] a stage's input */
	/* tables over (s, t, m), s <= t: cost and choice (CH_ALL, CH_PART, or
	 * s' > s: ckpt) */
	float *cost;
	uint16_t *choice;
	uint32_t U;
};

static size_t ch_at(const struct chain *c, uint32_t s, uint32_t t, uint32_t m)
{
	return ((size_t)s * c->L + t) * (c->U + 1) + m;
}

/* Stages from the boundaries at most k tensors cross, merged to at most
 * CH_MAX_STAGES of about equal step counts; in_set[2 s], in_set[2 s + 1]: the
 * tensors stage s starts from (-1: none; both -1 for the first).  Returns 0,
 * or -1 when the net is no chain of such stages (a backward op with no
 * forward op, or a backward order that does not visit the stages in
 * reverse). */
static int chain_stages(const struct pl_state *S, struct chain *c, uint32_t k, int32_t **in_set)
{
	const struct mp_net *net = S->net;
	const struct mp_route *r = S->r;
	uint32_t nf = r->n_fwd, nb, L;
	uint32_t *bound = mp_xmalloc((nf + 1) * sizeof(*bound));
	int32_t *first_in = mp_xmalloc((2 * nf + 2) * sizeof(*first_in));
	uint32_t *stage_of = mp_xmalloc((net->n_ops + 1) * sizeof(*stage_of));
	int rc = -1;

	nb = route_bounds(S->net, S->r, k, bound, first_in);
	for (uint32_t i = 0; i < nb; i++)
		bound[i]++; /* the stage after begins here */
	/* merge to at most CH_MAX_STAGES stages of about equal step counts:
	 * keep a boundary where step * want / nf moves to a new value */
	if (nb + 1 > CH_MAX_STAGES) {
		uint32_t want = CH_MAX_STAGES - 1, kept = 0;
		uint64_t prev = 0;

		for (uint32_t i = 0; i < nb && kept < want; i++) {
			uint64_t q = (uint64_t)bound[i] * want / nf;

			if (q > prev) {
				bound[kept] = bound[i];
				first_in[2 * kept] = first_in[2 * i];
				first_in[2 * kept + 1] = first_in[2 * i + 1];
				kept++;
				prev = q;
			}
		}
		nb = kept;
	}
	L = nb + 1;
	c->L = L;
	c->fwd_start = mp_xmalloc((L + 1) * sizeof(*c->fwd_start));
	c->fwd_start[0] = 0;
	for (uint32_t i = 0; i < nb; i++)
		c->fwd_start[i + 1] = bound[i];
	c->fwd_start[L] = nf;
	*in_set = mp_xmalloc((2 * L + 2) * sizeof(**in_set));
	(*in_set)[0] = (*in_set)[1] = -1;
	memcpy(*in_set + 2, first_in, 2 * nb * sizeof(*first_in));
	for (uint32_t s = 0; s < L; s++)
		for (uint32_t i = c->fwd_start[s]; i < c->fwd_start[s + 1]; i++)
			stage_of[r->op[i]] = s;
	/* backward ops: each in its forward op's stage; the route must visit
	 * the stages in reverse */
	c->bwd_lo = mp_xcalloc(L + 1, sizeof(*c->bwd_lo));
	c->bwd_hi = mp_xcalloc(L + 1, sizeof(*c->bwd_hi));
	c->bwd_ops = mp_xmalloc((r->n_bwd + 1) * sizeof(*c->bwd_ops));
	{
		uint32_t prev = L, n = 0;

		for (uint32_t i = r->n_fwd; i < r->n_fwd + r->n_bwd; i++) {
			const struct mp_op *op = &net->ops[r->op[i]];
			uint32_t s;

			if (op->fwd < 0)
				goto out;
			s = stage_of[op->fwd];
			if (s > prev)
				goto out;
			if (s != prev)
				c->bwd_lo[s] = n;
			prev = s;
			c->bwd_ops[n++] = (uint32_t)r->op[i];
			c->bwd_hi[s] = n;
		}
	}
	rc = 0;
out:
	free(bound);
	free(first_in);
	free(stage_of);
	return rc;
}

/* Bytes of the tensors stage s starts from. */
static uint64_t set_bytes(const struct mp_net *net, const int32_t *in_set, uint32_t s)
{
	uint64_t b = 0;

	for (int q = 0; q < 2; q++)
		if (in_set[2 * s + q] >= 0)
			b += net->tensors[in_set[2 * s + q]].bytes;
	return b;
}

/* Per stage: times, and in bytes its input and what its backward reads of
 * what its forward writes (the stage's output included). */
/* Per stage the tensors its forward writes first (stage_w) and the stages'
 * inputs (is_in), both [nt] in c. */
static void chain_index(const struct pl_state *S, struct chain *c, const int32_t *in_set)
{
	const struct mp_net *net = S->net;
	const struct mp_route *r = S->r;

	c->stage_w = mp_xmalloc((S->nt + 1) * sizeof(*c->stage_w));
	c->is_in = mp_xcalloc(S->nt + 1, 1);
	for (uint32_t t = 0; t < S->nt; t++)
		c->stage_w[t] = UINT32_MAX;
	for (uint32_t s = 0; s < c->L; s++) {
		for (int q = 0; q < 2; q++)
			if (in_set[2 * s + q] >= 0)
				c->is_in[in_set[2 * s + q]] = 1;
		for (uint32_t i = c->fwd_start[s]; i < c->fwd_start[s + 1]; i++) {
			const struct mp_op *op = &net->ops[r->op[i]];

			for (uint32_t k = 0; k < op->n_out; k++)
				if (c->stage_w[op->out[k]] == UINT32_MAX)
					c->stage_w[op->out[k]] = s;
		}
	}
}

/* Per stage: times, and in bytes its input and what its backward reads of
 * what its forward writes (the stage's output included). */
static void chain_costs(const struct pl_state *S, struct chain *c, const int32_t *in_set,
			uint64_t *xb, uint64_t *ab)
{
	const struct mp_net *net = S->net;
	const struct mp_route *r = S->r;
	uint8_t *counted = mp_xcalloc(S->nt + 1, 1);

	c->uf = mp_xcalloc(c->L, sizeof(*c->uf));
	c->ub = mp_xcalloc(c->L, sizeof(*c->ub));
	for (uint32_t s = 0; s < c->L; s++) {
		xb[s] = set_bytes(net, in_set, s);
		ab[s] = 0;
		for (uint32_t i = c->fwd_start[s]; i < c->fwd_start[s + 1]; i++)
			c->uf[s] += sched_op_ms(net, r->op[i], S->algo[r->op[i]]);
		for (uint32_t j = c->bwd_lo[s]; j < c->bwd_hi[s]; j++) {
			const struct mp_op *op = &net->ops[c->bwd_ops[j]];

			c->ub[s] += sched_op_ms(net, (int32_t)c->bwd_ops[j], S->algo[c->bwd_ops[j]]);
			for (uint32_t k = 0; k < op->n_in; k++) {
				int32_t t = op->in[k];

				/* forward tensors of this stage, counted once */
				if (c->stage_w[t] == s && !counted[t] && !sched_persistent(&net->tensors[t])) {
					ab[s] += net->tensors[t].bytes;
					counted[t] = 1;
				}
			}
		}
	}
	/* the stage's output is kept with it */
	for (uint32_t s = 0; s + 1 < c->L; s++)
		for (int q = 0; q < 2; q++) {
			int32_t y = in_set[2 * (s + 1) + q];

			if (y >= 0 && c->stage_w[y] == s && !counted[y]) {
				ab[s] += net->tensors[y].bytes;
				counted[y] = 1;
			}
		}
	free(counted);
}

/* Is op memory-bound, cheap to re-run for the bytes it writes (everything
 * but conv, fc, attention, embedding and custom or explicit ops)? */
static bool cheap_op(const struct mp_op *op)
{
	switch (op->type) {
	case MP_L_CONV: case MP_L_FC: case MP_L_ATTENTION: case MP_L_EMBEDDING:
	case MP_L_CUSTOM: case MP_L_OP: case MP_L_DATA:
		return false;
	default:
		return op->recomputable;
	}
}

/*
 * The minimal mode of each stage: only its input and its output stay from its
 * forward; each backward op is preceded by the rebuild, from the input, of
 * the stage tensors it reads.  Possible when every stage tensor its backward
 * reads may be dropped.  amb[s]: the output and twice the stage's largest
 * tensor (UINT64_MAX: not possible); umin[s]: per backward op, the stage's
 * forward up to the last writer of what it reads (an upper bound).
 */
static void chain_minimal(const struct pl_state *S, struct chain *c, const int32_t *in_set, uint64_t *amb)
{
	const uint32_t *stage_w = c->stage_w;
	const uint8_t *is_in = c->is_in;
	const struct mp_net *net = S->net;
	const struct mp_route *r = S->r;
	double *prefix = mp_xmalloc((r->n_fwd + 1) * sizeof(*prefix));

	c->umin = mp_xcalloc(c->L, sizeof(*c->umin));
	prefix[0] = 0;
	for (uint32_t i = 0; i < r->n_fwd; i++)
		prefix[i + 1] = prefix[i] + sched_op_ms(net, r->op[i], S->algo[r->op[i]]);
	for (uint32_t s = 0; s < c->L; s++) {
		uint64_t big = 0;
		bool ok = true;

		for (uint32_t i = c->fwd_start[s]; i < c->fwd_start[s + 1]; i++) {
			const struct mp_op *op = &net->ops[r->op[i]];

			for (uint32_t k = 0; k < op->n_out; k++)
				if (net->tensors[op->out[k]].bytes > big && !sched_persistent(&net->tensors[op->out[k]]))
					big = net->tensors[op->out[k]].bytes;
		}
		for (uint32_t j = c->bwd_lo[s]; ok && j < c->bwd_hi[s]; j++) {
			const struct mp_op *op = &net->ops[c->bwd_ops[j]];
			uint32_t upto = c->fwd_start[s];

			for (uint32_t k = 0; ok && k < op->n_in; k++) {
				int32_t x = op->in[k];

				if (stage_w[x] != s || is_in[x])
					continue;
				ok = S->droppable[x];
				if (ok && r->pos[S->fw_list[S->fw_start[x + 1] - 1]] + 1 > upto)
					upto = r->pos[S->fw_list[S->fw_start[x + 1] - 1]] + 1;
			}
			c->umin[s] += prefix[upto] - prefix[c->fwd_start[s]];
		}
		amb[s] = ok ? 2 * big + (s + 1 < c->L ? set_bytes(net, in_set, s + 1) : 0)
			    : UINT64_MAX;
	}
	free(prefix);
}

/*
 * The partial mode of each stage (after MONeT and Checkmate's typical
 * solutions): the stage's forward keeps what its backward reads except the
 * outputs of memory-bound ops, which are rebuilt from what it keeps right
 * before their first backward reader.  cheap[t]: written in the stage by
 * memory-bound ops only, read in backward by no other stage, not a stage
 * input, and rebuilt from the stage's input, kept tensors or other cheap
 * ones.  apart[s] (bytes) and upart[s] (ms) are what the mode keeps and
 * adds.  O(ops + uses).
 */
static void chain_partial(const struct pl_state *S, struct chain *c, const int32_t *in_set,
			  const uint64_t *ab, uint64_t *apb, uint64_t *amb)
{
	const struct mp_net *net = S->net;
	const struct mp_route *r = S->r;
	uint32_t nt = S->nt;
	const uint32_t *stage_w = c->stage_w;
	const uint8_t *is_in = c->is_in;
	uint32_t *read_by = mp_xmalloc((nt + 1) * sizeof(*read_by)); /* backward stage reading t; UINT32_MAX - 1: several */
	uint64_t *dropped = mp_xcalloc(c->L, sizeof(*dropped)), *largest = mp_xcalloc(c->L, sizeof(*largest));

	c->cheap = mp_xcalloc(nt + 1, 1);
	c->upart = mp_xcalloc(c->L, sizeof(*c->upart));
	for (uint32_t t = 0; t < nt; t++)
		read_by[t] = UINT32_MAX;
	for (uint32_t s = 0; s < c->L; s++) {
		for (uint32_t j = c->bwd_lo[s]; j < c->bwd_hi[s]; j++) {
			const struct mp_op *op = &net->ops[c->bwd_ops[j]];

			for (uint32_t k = 0; k < op->n_in; k++) {
				uint32_t *rb = &read_by[op->in[k]];

				*rb = *rb == UINT32_MAX || *rb == s ? s : UINT32_MAX - 1;
			}
		}
	}
	/* forward route order: a writer's inputs are decided before its outputs */
	for (uint32_t i = 0; i < r->n_fwd; i++) {
		const struct mp_op *op = &net->ops[r->op[i]];

		for (uint32_t k = 0; k < op->n_out; k++) {
			int32_t t = op->out[k];
			uint32_t s = stage_w[t];
			bool ok = S->droppable[t] && !is_in[t] && !c->cheap[t] &&
				  (read_by[t] == s || read_by[t] == UINT32_MAX) &&
				  (int32_t)S->fw_list[S->fw_start[t + 1] - 1] == r->op[i];

			/* decided at its last forward writer */
			for (uint32_t j = S->fw_start[t]; ok && j < S->fw_start[t + 1]; j++) {
				const struct mp_op *w = &net->ops[S->fw_list[j]];

				ok = cheap_op(w);
				for (uint32_t q = 0; ok && q < w->n_in; q++) {
					int32_t x = w->in[q];

					ok = x == t || sched_persistent(&net->tensors[x]) || x == in_set[2 * s] || x == in_set[2 * s + 1] ||
					     (stage_w[x] == s && (c->cheap[x] || read_by[x] == s));
				}
			}
			if (!ok)
				continue;
			c->cheap[t] = 1;
			c->upart[s] += pl_rebuild_ms(S, t);
			if (read_by[t] == s) {
				dropped[s] += net->tensors[t].bytes;
				if (net->tensors[t].bytes > largest[s])
					largest[s] = net->tensors[t].bytes;
			}
		}
	}
	for (uint32_t s = 0; s < c->L; s++)
		apb[s] = ab[s] - dropped[s] + largest[s];
	chain_minimal(S, c, in_set, amb);
	free(read_by);
	free(dropped);
	free(largest);
}

static void chain_solve(struct chain *c)
{
	uint32_t L = c->L, U = c->U;
	size_t n = (size_t)L * L * (U + 1);

	c->cost = mp_xmalloc(n * sizeof(*c->cost));
	c->choice = mp_xmalloc(n * sizeof(*c->choice));
	for (size_t i = 0; i < n; i++)
		c->cost[i] = 1e30f;
	for (uint32_t len = 0; len < L; len++)
		for (uint32_t s = 0; s + len < L; s++) {
			uint32_t t = s + len;
			double fsum = 0;

			for (uint32_t m = 0; m <= U; m++) {
				size_t at = ch_at(c, s, t, m);
				float best = 1e30f;
				uint16_t ch = 0;

				/* run s keeping abar, apart or amin, solve s + 1..t */
				for (int k = 0; k < 3; k++) {
					static const uint16_t mode[3] = { CH_ALL, CH_PART, CH_MIN };
					uint32_t keep = k == 0 ? c->abar[s] : k == 1 ? c->apart[s] : c->amin[s];
					double extra = k == 0 ? 0 : k == 1 ? c->upart[s] : c->umin[s];
					float v;

					if (keep > m)
						continue;
					v = (float)(c->uf[s] + c->ub[s] + extra);
					if (t > s)
						v += c->cost[ch_at(c, s + 1, t, m - keep)];
					if (v < best) {
						best = v;
						ch = mode[k];
					}
				}
				fsum = 0;
				for (uint32_t s2 = s + 1; s2 <= t; s2++) {
					fsum += c->uf[s2 - 1];
					if (c->x[s2] > m)
						continue;
					{
						float v = (float)fsum + c->cost[ch_at(c, s2, t, m - c->x[s2])] +
							  c->cost[ch_at(c, s, s2 - 1, m)];

						if (v < best) {
							best = v;
							ch = (uint16_t)s2;
						}
					}
				}
				c->cost[at] = best;
				c->choice[at] = ch;
			}
		}
}

struct emit {
	struct mp_entry *e;
	uint32_t n, cap;
	uint8_t *ran;          /* [n_ops] forward op computed once already */
	uint8_t *avail;        /* [nt] a cheap tensor rebuilt for this backward */
};

static void push(struct emit *E, int32_t op)
{
	mp_grow((void **)&E->e, &E->cap, E->n + 1, sizeof(*E->e));
	E->e[E->n++] = (struct mp_entry){ op, E->ran[op] != 0, -1 };
	E->ran[op] = 1;
}

/* Forward ops of stages s..t; on a re-run, ops that cannot re-run (the
 * data layer) are skipped: their outputs stay from the first run. */
static void fwd_stages(const struct pl_state *S, const struct chain *c, struct emit *E, uint32_t s, uint32_t t)
{
	for (uint32_t i = c->fwd_start[s]; i < c->fwd_start[t + 1]; i++)
		if (!E->ran[S->r->op[i]] || S->net->ops[S->r->op[i]].recomputable)
			push(E, S->r->op[i]);
}

/* Rebuild cheap tensor t (its dropped cheap inputs first): re-run its
 * forward writers in order. */
static void rebuild(const struct pl_state *S, const struct chain *c, struct emit *E, int32_t t)
{
	const struct mp_net *net = S->net;

	for (uint32_t j = S->fw_start[t]; j < S->fw_start[t + 1]; j++) {
		const struct mp_op *w = &net->ops[S->fw_list[j]];

		for (uint32_t k = 0; k < w->n_in; k++)
			if (w->in[k] != t && c->cheap[w->in[k]] && !E->avail[w->in[k]])
				rebuild(S, c, E, w->in[k]);
		push(E, (int32_t)S->fw_list[j]);
	}
	E->avail[t] = 1;
}

/* Stage s's backward ops; partial: each preceded by the rebuild of the cheap
 * tensors it reads, kept until their last reader. */
static void bwd_stage(const struct pl_state *S, const struct chain *c, struct emit *E, uint32_t s, bool partial)
{
	for (uint32_t j = c->bwd_lo[s]; j < c->bwd_hi[s]; j++) {
		const struct mp_op *op = &S->net->ops[c->bwd_ops[j]];

		for (uint32_t k = 0; partial && k < op->n_in; k++)
			if (c->cheap[op->in[k]] && !E->avail[op->in[k]])
				rebuild(S, c, E, op->in[k]);
		mp_grow((void **)&E->e, &E->cap, E->n + 1, sizeof(*E->e));
		E->e[E->n++] = (struct mp_entry){ (int32_t)c->bwd_ops[j], false, -1 };
	}
	/* a later pass over the stage's forward drops them again */
	for (uint32_t j = c->bwd_lo[s]; partial && j < c->bwd_hi[s]; j++) {
		const struct mp_op *op = &S->net->ops[c->bwd_ops[j]];

		for (uint32_t k = 0; k < op->n_in; k++)
			E->avail[op->in[k]] = 0;
	}
}

/* Rebuild stage s's tensor t for one backward op from the stage's input:
 * its writers, after the stage tensors they read (recorded in *tmp). */
static void rebuild_min(const struct pl_state *S, const struct chain *c, struct emit *E, uint32_t s,
			int32_t t, int32_t *tmp, uint32_t *n_tmp)
{
	const struct mp_net *net = S->net;

	for (uint32_t j = S->fw_start[t]; j < S->fw_start[t + 1]; j++) {
		const struct mp_op *w = &net->ops[S->fw_list[j]];

		for (uint32_t k = 0; k < w->n_in; k++) {
			int32_t x = w->in[k];

			if (x != t && c->stage_w[x] == s && !c->is_in[x] && !E->avail[x])
				rebuild_min(S, c, E, s, x, tmp, n_tmp);
		}
		push(E, (int32_t)S->fw_list[j]);
	}
	E->avail[t] = 1;
	tmp[(*n_tmp)++] = t;
}

/* Stage s's backward keeping only its input and output: before each
 * backward op, what it reads of the stage is rebuilt from the input, and
 * dropped again after it. */
static void bwd_stage_min(const struct pl_state *S, const struct chain *c, struct emit *E, uint32_t s)
{
	int32_t *tmp = mp_xmalloc((S->nt + 1) * sizeof(*tmp));

	for (uint32_t j = c->bwd_lo[s]; j < c->bwd_hi[s]; j++) {
		const struct mp_op *op = &S->net->ops[c->bwd_ops[j]];
		uint32_t n_tmp = 0;

		for (uint32_t k = 0; k < op->n_in; k++) {
			int32_t x = op->in[k];

			if (c->stage_w[x] == s && !c->is_in[x] && !E->avail[x])
				rebuild_min(S, c, E, s, x, tmp, &n_tmp);
		}
		mp_grow((void **)&E->e, &E->cap, E->n + 1, sizeof(*E->e));
		E->e[E->n++] = (struct mp_entry){ (int32_t)c->bwd_ops[j], false, -1 };
		while (n_tmp)
			E->avail[tmp[--n_tmp]] = 0;
	}
	free(tmp);
}

/* The sequence of the table's choice for s..t in m (iterative over s: the
 * all branch recurses on s + 1, the ckpt branch on two halves). */
static void chain_emit(const struct pl_state *S, const struct chain *c, struct emit *E,
		       uint32_t s, uint32_t t, uint32_t m)
{
	uint16_t ch = c->choice[ch_at(c, s, t, m)];

	if (ch == CH_ALL || ch == CH_PART || ch == CH_MIN) {
		fwd_stages(S, c, E, s, s);
		if (t > s)
			chain_emit(S, c, E, s + 1, t, m - (ch == CH_ALL ? c->abar[s] : ch == CH_PART ? c->apart[s] : c->amin[s]));
		if (ch == CH_MIN)
			bwd_stage_min(S, c, E, s);
		else
			bwd_stage(S, c, E, s, ch == CH_PART);
	} else {
		fwd_stages(S, c, E, s, ch - 1u);
		chain_emit(S, c, E, ch, t, m - c->x[ch]);
		chain_emit(S, c, E, s, ch - 1u, m);
	}
}

static void chain_free(struct chain *c)
{
	free(c->fwd_start);
	free(c->bwd_lo);
	free(c->bwd_hi);
	free(c->bwd_ops);
	free(c->uf);
	free(c->ub);
	free(c->x);
	free(c->abar);
	free(c->apart);
	free(c->upart);
	free(c->cheap);
	free(c->amin);
	free(c->umin);
	free(c->stage_w);
	free(c->is_in);
	free(c->cost);
	free(c->choice);
}

/* Build the state with the table's sequence for m units. */
static int build_for(struct pl_state *S, const struct chain *c, uint32_t m, struct mp_error *err)
{
	const struct mp_route *r = S->r;
	struct emit E = { NULL, 0, 0, mp_xcalloc(S->net->n_ops + 1, 1), mp_xcalloc(S->nt + 1, 1) };

	chain_emit(S, c, &E, 0, c->L - 1, m);
	for (uint32_t i = r->n_fwd + r->n_bwd; i < r->n; i++) {
		mp_grow((void **)&E.e, &E.cap, E.n + 1, sizeof(*E.e));
		E.e[E.n++] = (struct mp_entry){ r->op[i], false, -1 };
	}
	free(E.ran);
	free(E.avail);
	free(S->seq);
	S->seq = E.e;
	S->n_seq = E.n;
	return pl_build(S, err);
}

/*
 * Plan on the stages between boundaries that at most k tensors cross: the
 * table, then the largest memory whose schedule fits (binary search; without
 * one, the least memory the table reaches).  Returns 1 with S built on the
 * result, 0 when the net is no such chain, -1 with *err.
 */
static int chain_try(struct pl_state *S, struct mp_plan *p, uint32_t k, struct mp_error *err)
{
	struct chain c;
	int32_t *in_set = NULL;
	uint64_t *xb, *ab, *apb, *amb, total = 0, unit;
	uint32_t lo, hi, best = UINT32_MAX;
	int rc = -1;

	memset(&c, 0, sizeof(c));
	if (chain_stages(S, &c, k, &in_set) < 0 || c.L < 2) {
		free(in_set);
		chain_free(&c);
		return 0;
	}
	xb = mp_xmalloc(c.L * sizeof(*xb));
	ab = mp_xmalloc(c.L * sizeof(*ab));
	apb = mp_xmalloc(c.L * sizeof(*apb));
	amb = mp_xmalloc(c.L * sizeof(*amb));
	chain_index(S, &c, in_set);
	chain_costs(S, &c, in_set, xb, ab);
	chain_partial(S, &c, in_set, ab, apb, amb);
	for (uint32_t s = 0; s < c.L; s++)
		total += ab[s] + xb[s];
	c.U = CH_UNITS;
	unit = total / c.U + 1;
	c.x = mp_xmalloc(c.L * sizeof(*c.x));
	c.abar = mp_xmalloc(c.L * sizeof(*c.abar));
	c.apart = mp_xmalloc(c.L * sizeof(*c.apart));
	c.amin = mp_xmalloc(c.L * sizeof(*c.amin));
	for (uint32_t s = 0; s < c.L; s++) {
		c.x[s] = (uint32_t)((xb[s] + unit - 1) / unit);
		c.abar[s] = (uint32_t)((ab[s] + unit - 1) / unit);
		c.apart[s] = (uint32_t)((apb[s] + unit - 1) / unit);
		c.amin[s] = amb[s] == UINT64_MAX ? UINT32_MAX : (uint32_t)((amb[s] + unit - 1) / unit);
	}
	free(xb);
	free(ab);
	free(apb);
	free(amb);
	chain_solve(&c);
	lo = 0;
	hi = c.U;
	while (lo <= hi) {
		uint32_t m = lo + (hi - lo) / 2;

		if (c.cost[ch_at(&c, 0, c.L - 1, m)] >= 1e29f) {
			lo = m + 1;
			continue;
		}
		p->iterations++;
		if (build_for(S, &c, m, err) < 0)
			goto out;
		if (S->sim.peak_bytes <= S->req->budget_bytes) {
			best = m;
			lo = m + 1;
		} else {
			if (!m)
				break;
			hi = m - 1;
		}
	}
	if (best == UINT32_MAX)
		for (best = 0; best < c.U && c.cost[ch_at(&c, 0, c.L - 1, best)] >= 1e29f; best++)
			;
	p->iterations++;
	if (build_for(S, &c, best, err) < 0)
		goto out;
	rc = 1;
out:
	free(in_set);
	chain_free(&c);
	return rc;
}

/* Stages between cuts, and between boundaries one or two tensors cross (finer
 * where the second tensor is small, coarser where it is counted twice): the
 * better plan wins (it fits where the other does not, else it is faster, else
 * lower). */
int plan_chain(struct pl_state *S, struct mp_plan *p, struct mp_error *err)
{
	struct mp_entry *won = NULL;
	uint32_t n_won = 0, k_won = 0;
	uint64_t peak = UINT64_MAX;
	double ms = 0;
	int rc;

	if ((rc = pl_fits_as_is(S, p, err)) != 0)
		return rc < 0 ? -1 : 0;
	for (uint32_t k = 1; k <= 2; k++) {
		rc = chain_try(S, p, k, err);

		if (rc < 0) {
			free(won);
			return -1;
		}
		if (rc == 0)
			continue;
		if (!won || pl_better(S, S->sim.peak_bytes, S->sim.time_ms, peak, ms)) {
			free(won);
			won = S->seq;
			n_won = S->n_seq;
			S->seq = NULL;
			peak = S->sim.peak_bytes;
			ms = S->sim.time_ms;
			k_won = k;
		}
	}
	if (!won) {
		free(S->seq);
		S->seq = NULL;
		if (pl_build(S, err) < 0)
			return -1;
		snprintf(p->note, sizeof(p->note), "no chain of blocks: the backward does not visit the forward's stages in reverse");
		return 0;
	}
	free(S->seq);
	S->seq = won;
	S->n_seq = n_won;
	p->iterations++;
	if (pl_build(S, err) < 0)
		return -1;
	snprintf(p->note, sizeof(p->note), "stages between %s, %.3f ms recomputed",
		 k_won == 1 ? "cuts" : "boundaries one or two tensors cross", S->sim.recompute_ms);
	return 0;
}
