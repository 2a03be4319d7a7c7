/*
 * Execution route (SuperNeurons 3.1, Alg. 1): per phase, a depth-first walk
 * from the phase's roots in which an op is placed only once all its
 * predecessors are (the join counter), children visited in a fixed key order.
 * Iterative, so 10^5-deep chains do not overflow the stack.
 * O(ops + tensor uses * writers + E log E) for the child sort.
 */
#include "route.h"

#include <stdlib.h>
#include <string.h>

struct child {
	int64_t key;
	int32_t op;
};

static int cmp_child(const void *a, const void *b)
{
	const struct child *x = a, *y = b;

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return x->op < y->op ? -1 : x->op > y->op;
}

static int persistent(const struct mp_tensor *t)
{
	return t->kind == MP_TK_PARAM || t->kind == MP_TK_OPT_STATE || t->producer < 0;
}

static int op_writes(const struct mp_op *op, int32_t t)
{
	for (uint32_t k = 0; k < op->n_out; k++)
		if (op->out[k] == t)
			return 1;
	return 0;
}

static int op_reads(const struct mp_op *op, int32_t t)
{
	for (uint32_t k = 0; k < op->n_in; k++)
		if (op->in[k] == t)
			return 1;
	return 0;
}

int route_build(const struct mp_net *net, struct mp_route *r, struct mp_error *err)
{
	uint32_t n = net->n_ops, nt = net->n_tensors;
	uint32_t *wstart = mp_xcalloc(nt + 1, sizeof(*wstart)), *wlist, *fill;
	uint32_t *npred = mp_xcalloc(n, sizeof(*npred)), *cnt = mp_xcalloc(n, sizeof(*cnt));
	int32_t *mark = mp_xmalloc(n * sizeof(*mark));
	struct child *edges = NULL;
	uint32_t n_edges = 0, cap_edges = 0, *cstart;
	int64_t *key = mp_xmalloc(n * sizeof(*key));
	struct { int32_t op; uint32_t next; } *stack = mp_xmalloc(n * sizeof(*stack));
	int rc = -1;

	memset(r, 0, sizeof(*r));
	r->op = mp_xmalloc(n * sizeof(*r->op));
	r->pos = mp_xmalloc(n * sizeof(*r->pos));
	for (uint32_t i = 0; i < n; i++) {
		mark[i] = -1;
		r->pos[i] = UINT32_MAX;
	}
	/* writers of each tensor (CSR) */
	for (uint32_t o = 0; o < n; o++)
		for (uint32_t k = 0; k < net->ops[o].n_out; k++)
			wstart[net->ops[o].out[k] + 1]++;
	for (uint32_t t = 0; t < nt; t++)
		wstart[t + 1] += wstart[t];
	wlist = mp_xmalloc((wstart[nt] + 1) * sizeof(*wlist));
	fill = mp_xcalloc(nt + 1, sizeof(*fill));
	for (uint32_t o = 0; o < n; o++)
		for (uint32_t k = 0; k < net->ops[o].n_out; k++) {
			int32_t t = net->ops[o].out[k];

			wlist[wstart[t] + fill[t]++] = o;
		}
	free(fill);
	/* edges pred -> op within a phase; cross-phase reads must look backward */
	for (uint32_t o = 0; o < n; o++) {
		const struct mp_op *op = &net->ops[o];

		for (uint32_t k = 0; k < op->n_in; k++) {
			int32_t t = op->in[k];
			int inplace = op_writes(op, t), earlier = persistent(&net->tensors[t]);

			for (uint32_t w = wstart[t]; w < wstart[t + 1]; w++) {
				uint32_t p = wlist[w];
				const struct mp_op *pop = &net->ops[p];

				if (pop->phase < op->phase)
					earlier = 1;
				if (p == o || pop->phase != op->phase)
					continue;
				/* an in-place updater waits only for the pure producers */
				if (inplace && op_reads(pop, t))
					continue;
				earlier = 1;
				if (mark[p] == (int32_t)o)
					continue;
				mark[p] = (int32_t)o;
				npred[o]++;
				mp_grow((void **)&edges, &cap_edges, n_edges + 1, sizeof(*edges));
				edges[n_edges].key = p;   /* temporarily: source */
				edges[n_edges++].op = (int32_t)o;
			}
			if (!earlier) {
				mp_error_set(err, "%s op '%s' reads '%s', which only a later phase writes",
					     mp_phase_name(op->phase), op->name, net->tensors[t].name);
				goto out;
			}
		}
	}
	/* forward keys first: file order */
	for (uint32_t o = 0; o < n; o++)
		key[o] = net->ops[o].index;
	/* children lists by source, sorted by the child's key */
	cstart = mp_xcalloc(n + 1, sizeof(*cstart));
	{
		struct child *sorted = mp_xmalloc((n_edges + 1) * sizeof(*sorted));
		uint32_t *f = mp_xcalloc(n + 1, sizeof(*f));

		for (uint32_t e = 0; e < n_edges; e++)
			cstart[edges[e].key + 1]++;
		for (uint32_t o = 0; o < n; o++)
			cstart[o + 1] += cstart[o];
		for (uint32_t e = 0; e < n_edges; e++) {
			uint32_t s = (uint32_t)edges[e].key;

			sorted[cstart[s] + f[s]++].op = edges[e].op;
		}
		free(f);
		free(edges);
		edges = sorted;
	}
	for (int ph = MP_PHASE_FWD; ph <= MP_PHASE_OPT; ph++) {
		struct child *roots = mp_xmalloc((n + 1) * sizeof(*roots));
		uint32_t n_roots = 0, start = r->n;

		/* keys: forward by file order; backward by reverse forward step of
		 * the layer's forward op; optimizer by forward step */
		for (uint32_t o = 0; o < n; o++) {
			const struct mp_op *op = &net->ops[o];

			if ((int)op->phase != ph)
				continue;
			if (ph == MP_PHASE_BWD && op->fwd >= 0)
				key[o] = -(int64_t)r->pos[op->fwd];
			else if (ph == MP_PHASE_OPT && op->layer >= 0 && net->layers[op->layer].fwd_op >= 0)
				key[o] = r->pos[net->layers[op->layer].fwd_op];
			else if (ph != MP_PHASE_FWD)
				key[o] = (int64_t)n + op->index;
			if (npred[o] == 0)
				roots[n_roots++] = (struct child){ key[o], (int32_t)o };
		}
		for (uint32_t o = 0; o < n; o++)
			if ((int)net->ops[o].phase == ph)
				for (uint32_t e = cstart[o]; e < cstart[o + 1]; e++)
					edges[e].key = key[edges[e].op];
		for (uint32_t o = 0; o < n; o++)
			if ((int)net->ops[o].phase == ph && cstart[o + 1] - cstart[o] > 1)
				qsort(edges + cstart[o], cstart[o + 1] - cstart[o], sizeof(*edges), cmp_child);
		qsort(roots, n_roots, sizeof(*roots), cmp_child);
		for (uint32_t ri = 0; ri < n_roots; ri++) {
			uint32_t sp = 0;

			stack[sp].op = roots[ri].op;
			stack[sp++].next = cstart[roots[ri].op];
			r->pos[roots[ri].op] = r->n;
			r->op[r->n++] = roots[ri].op;
			while (sp) {
				int32_t u = stack[sp - 1].op;
				uint32_t e = stack[sp - 1].next;

				if (e == cstart[u + 1]) {
					sp--;
					continue;
				}
				stack[sp - 1].next++;
				int32_t v = edges[e].op;

				if (++cnt[v] < npred[v])
					continue; /* a join: wait for the other predecessors */
				r->pos[v] = r->n;
				r->op[r->n++] = v;
				stack[sp].op = v;
				stack[sp++].next = cstart[v];
			}
		}
		free(roots);
		if (ph == MP_PHASE_FWD)
			r->n_fwd = r->n - start;
		else if (ph == MP_PHASE_BWD)
			r->n_bwd = r->n - start;
		else
			r->n_opt = r->n - start;
	}
	free(cstart);
	if (r->n < n) {
		/* an unplaced op with an unplaced predecessor: walk back to a repeat */
		uint32_t u = 0;

		while (r->pos[u] != UINT32_MAX)
			u++;
		for (uint32_t guard = 0; guard <= n; guard++) {
			const struct mp_op *op = &net->ops[u];
			uint32_t next = u;

			for (uint32_t k = 0; k < op->n_in && next == u; k++) {
				int32_t t = op->in[k];

				for (uint32_t w = wstart[t]; w < wstart[t + 1]; w++)
					if (wlist[w] != u && r->pos[wlist[w]] == UINT32_MAX &&
					    net->ops[wlist[w]].phase == op->phase) {
						next = wlist[w];
						break;
					}
			}
			if (next == u)
				break;
			u = next;
		}
		mp_error_set(err, "cycle: op '%s' depends on itself", net->ops[u].name);
		goto out;
	}
	rc = 0;
out:
	free(wstart);
	free(wlist);
	free(npred);
	free(cnt);
	free(mark);
	free(edges);
	free(key);
	free(stack);
	if (rc < 0)
		route_release(r);
	return rc;
}

void route_release(struct mp_route *r)
{
	free(r->op);
	free(r->pos);
	memset(r, 0, sizeof(*r));
}
