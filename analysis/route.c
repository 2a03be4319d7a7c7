/*
 * Execution route (SuperNeurons 3.1, Alg. 1): per phase, a depth-first walk
 * from the phase's roots in which an op is placed only once all its
 * predecessors are (the join counter), children visited in a fixed key order.
 * Iterative, so 10^5-deep chains do not overflow the stack.
 * O(ops + tensor uses * writers + E log E) for the child sort.
 */
#include "route.h"
#include "sched.h"

#include <math.h>
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

/* "ops[2].inputs[1]: " for an explicit op's k-th input; "" for lowered ops,
 * whose names already say which layer they come from. */
static const char *where(const struct mp_op *op, uint32_t k, char *buf, size_t n)
{
	if (op->json_index < 0) {
		buf[0] = '\0';
		return buf;
	}
	snprintf(buf, n, "ops[%d].inputs[%u]: ", op->json_index, op->in_json ? op->in_json[k] : k);
	return buf;
}

/* A dependency edge while building: source node -> destination node. */
struct edge {
	uint32_t src, dst;
};

static void add_edge(struct edge **e, uint32_t *n, uint32_t *cap, uint32_t src, uint32_t dst)
{
	mp_grow((void **)e, cap, *n + 1, sizeof(**e));
	(*e)[(*n)++] = (struct edge){ src, dst };
}

int route_build(const struct mp_net *net, struct mp_route *r, struct mp_error *err)
{
	char wb[64];
	uint32_t n = net->n_ops, nt = net->n_tensors;
	uint32_t *wstart = mp_xcalloc(nt + 1, sizeof(*wstart)), *wlist, *fill;
	uint8_t *wreads;           /* [writers] the writer also reads the tensor */
	uint32_t *inmark = mp_xcalloc(nt + 1, sizeof(*inmark)), *outmark = mp_xcalloc(nt + 1, sizeof(*outmark));
	/* per (tensor, phase): writers of the phase, all and pure (not reading
	 * it), the single one when there is one, and the barrier node standing
	 * for several (UINT32_MAX until needed) */
	uint32_t *n_all = mp_xcalloc(3 * (size_t)nt + 1, sizeof(*n_all));
	uint32_t *n_pure = mp_xcalloc(3 * (size_t)nt + 1, sizeof(*n_pure));
	uint32_t *one_all = mp_xmalloc((3 * (size_t)nt + 1) * sizeof(*one_all));
	uint32_t *one_pure = mp_xmalloc((3 * (size_t)nt + 1) * sizeof(*one_pure));
	uint32_t *bar_all = mp_xmalloc((3 * (size_t)nt + 1) * sizeof(*bar_all));
	uint32_t *bar_pure = mp_xmalloc((3 * (size_t)nt + 1) * sizeof(*bar_pure));
	uint8_t *min_phase = mp_xmalloc(nt + 1);
	uint32_t *mark = NULL, n_nodes = n, cap_bar = 0, *bar_phase = NULL;
	uint32_t *npred = NULL, *cnt = NULL, *cstart = NULL;
	struct edge *el = NULL;
	uint32_t n_el = 0, cap_el = 0;
	struct child *edges = NULL;
	int64_t *key = NULL;
	struct { uint32_t node, next; } *stack = NULL;
	int rc = -1;

	memset(r, 0, sizeof(*r));
	r->op = mp_xmalloc((n + 1) * sizeof(*r->op));
	r->pos = mp_xmalloc((n + 1) * sizeof(*r->pos));
	for (uint32_t i = 0; i < n; i++)
		r->pos[i] = UINT32_MAX;
	for (size_t i = 0; i < 3 * (size_t)nt; i++)
		bar_all[i] = bar_pure[i] = UINT32_MAX;
	memset(min_phase, 3, nt + 1);
	/* writers of each tensor (CSR), and whether each also reads it */
	for (uint32_t o = 0; o < n; o++)
		for (uint32_t k = 0; k < net->ops[o].n_out; k++)
			wstart[net->ops[o].out[k] + 1]++;
	for (uint32_t t = 0; t < nt; t++)
		wstart[t + 1] += wstart[t];
	wlist = mp_xmalloc((wstart[nt] + 1) * sizeof(*wlist));
	wreads = mp_xcalloc(wstart[nt] + 1, 1);
	fill = mp_xcalloc(nt + 1, sizeof(*fill));
	for (uint32_t o = 0; o < n; o++) {
		const struct mp_op *op = &net->ops[o];

		for (uint32_t k = 0; k < op->n_in; k++)
			inmark[op->in[k]] = o + 1;
		for (uint32_t k = 0; k < op->n_out; k++) {
			int32_t t = op->out[k];
			uint32_t slot = wstart[t] + fill[t]++;
			size_t tp = 3 * (size_t)t + op->phase;

			wlist[slot] = o;
			wreads[slot] = inmark[t] == o + 1;
			if (op->phase < min_phase[t])
				min_phase[t] = (uint8_t)op->phase;
			if (n_all[tp]++ == 0)
				one_all[tp] = o;
			if (!wreads[slot] && n_pure[tp]++ == 0)
				one_pure[tp] = o;
		}
	}
	free(fill);
	/* dependencies within a phase: a reader waits for the writers of what it
	 * reads (an in-place updater, for the pure writers only).  Several
	 * writers are joined by one barrier node, so W writers and R readers of
	 * one tensor cost W + R edges, not W * R.  Cross-phase reads must look
	 * backward: a later phase runs later. */
	for (uint32_t o = 0; o < n; o++) {
		const struct mp_op *op = &net->ops[o];

		for (uint32_t k = 0; k < op->n_out; k++)
			outmark[op->out[k]] = o + 1;
		for (uint32_t k = 0; k < op->n_in; k++) {
			int32_t t = op->in[k];
			int inplace = outmark[t] == o + 1;
			size_t tp = 3 * (size_t)t + op->phase;
			uint32_t cnt_w = inplace ? n_pure[tp] : n_all[tp], *bar = inplace ? &bar_pure[tp] : &bar_all[tp];
			int earlier = persistent(&net->tensors[t]) || min_phase[t] < op->phase || cnt_w > 0;

			if (!earlier) {
				int only_self = wstart[t + 1] - wstart[t] == 1 && wlist[wstart[t]] == o;

				if (only_self)
					mp_error_set(err, "%sop '%s' reads '%s', which no earlier op writes",
						     where(op, k, wb, sizeof(wb)), op->name, net->tensors[t].name);
				else
					mp_error_set(err, "%s%s op '%s' reads '%s', which only a later phase writes",
						     where(op, k, wb, sizeof(wb)), mp_phase_name(op->phase), op->name,
						     net->tensors[t].name);
				goto out;
			}
			if (cnt_w == 1) {
				uint32_t w = inplace ? one_pure[tp] : one_all[tp];

				if (w != o)
					add_edge(&el, &n_el, &cap_el, w, o);
				continue;
			}
			if (cnt_w == 0)
				continue;
			if (*bar == UINT32_MAX) {
				*bar = n_nodes++;
				mp_grow((void **)&bar_phase, &cap_bar, *bar - n + 1, sizeof(*bar_phase));
				bar_phase[*bar - n] = op->phase;
				for (uint32_t w = wstart[t]; w < wstart[t + 1]; w++)
					if (net->ops[wlist[w]].phase == op->phase && !(inplace && wreads[w]))
						add_edge(&el, &n_el, &cap_el, wlist[w], *bar);
			}
			add_edge(&el, &n_el, &cap_el, *bar, o);
		}
	}
	/* children of each node (CSR), deduplicated per destination */
	npred = mp_xcalloc(n_nodes + 1, sizeof(*npred));
	cnt = mp_xcalloc(n_nodes + 1, sizeof(*cnt));
	mark = mp_xmalloc((n_nodes + 1) * sizeof(*mark));
	key = mp_xmalloc((n_nodes + 1) * sizeof(*key));
	stack = mp_xmalloc((n_nodes + 1) * sizeof(*stack));
	cstart = mp_xcalloc(n_nodes + 2, sizeof(*cstart));
	edges = mp_xmalloc((n_el + 1) * sizeof(*edges));
	{
		uint32_t *f = mp_xcalloc(n_nodes + 1, sizeof(*f)), kept = 0;

		/* drop duplicate (src, dst) pairs: an op reading two tensors of one
		 * writer depends on it once */
		for (uint32_t i = 0; i <= n_nodes; i++)
			mark[i] = UINT32_MAX;
		{
			/* group by destination to dedupe with one mark per source */
			uint32_t *dstart = mp_xcalloc(n_nodes + 2, sizeof(*dstart)), *dl;

			for (uint32_t e = 0; e < n_el; e++)
				dstart[el[e].dst + 1]++;
			for (uint32_t v = 0; v < n_nodes; v++)
				dstart[v + 1] += dstart[v];
			dl = mp_xmalloc((n_el + 1) * sizeof(*dl));
			for (uint32_t e = 0; e < n_el; e++)
				dl[dstart[el[e].dst] + f[el[e].dst]++] = el[e].src;
			for (uint32_t v = 0; v < n_nodes; v++)
				for (uint32_t e = dstart[v]; e < dstart[v + 1]; e++) {
					uint32_t src = dl[e];

					if (mark[src] == v)
						continue;
					mark[src] = v;
					el[kept++] = (struct edge){ src, v };
					npred[v]++;
				}
			free(dstart);
			free(dl);
			n_el = kept;
		}
		memset(f, 0, (n_nodes + 1) * sizeof(*f));
		for (uint32_t e = 0; e < n_el; e++)
			cstart[el[e].src + 1]++;
		for (uint32_t v = 0; v < n_nodes; v++)
			cstart[v + 1] += cstart[v];
		for (uint32_t e = 0; e < n_el; e++)
			edges[cstart[el[e].src] + f[el[e].src]++].op = (int32_t)el[e].dst;
		free(f);
	}
	for (uint32_t o = 0; o < n; o++)
		key[o] = net->ops[o].index;
	for (int ph = MP_PHASE_FWD; ph <= MP_PHASE_OPT; ph++) {
		struct child *roots = mp_xmalloc((n + 1) * sizeof(*roots));
		uint32_t n_roots = 0, start = r->n;

		/* keys: forward by file order; backward by reverse forward step of
		 * the layer's forward op; optimizer by forward step; a barrier
		 * takes its first reader's */
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
		for (uint32_t b = n; b < n_nodes; b++) {
			if ((int)bar_phase[b - n] != ph)
				continue;
			key[b] = INT64_MAX;
			for (uint32_t e = cstart[b]; e < cstart[b + 1]; e++)
				if (key[edges[e].op] < key[b])
					key[b] = key[edges[e].op];
		}
		for (uint32_t v = 0; v < n_nodes; v++) {
			if ((v < n ? (int)net->ops[v].phase : (int)bar_phase[v - n]) != ph)
				continue;
			for (uint32_t e = cstart[v]; e < cstart[v + 1]; e++)
				edges[e].key = key[edges[e].op];
			if (cstart[v + 1] - cstart[v] > 1)
				qsort(edges + cstart[v], cstart[v + 1] - cstart[v], sizeof(*edges), cmp_child);
		}
		qsort(roots, n_roots, sizeof(*roots), cmp_child);
		for (uint32_t ri = 0; ri < n_roots; ri++) {
			uint32_t sp = 0;

			stack[sp].node = (uint32_t)roots[ri].op;
			stack[sp++].next = cstart[roots[ri].op];
			r->pos[roots[ri].op] = r->n;
			r->op[r->n++] = roots[ri].op;
			while (sp) {
				uint32_t u = stack[sp - 1].node, e = stack[sp - 1].next, v;

				if (e == cstart[u + 1]) {
					sp--;
					continue;
				}
				stack[sp - 1].next++;
				v = (uint32_t)edges[e].op;
				if (++cnt[v] < npred[v])
					continue; /* a join: wait for the other predecessors */
				if (v < n) { /* barriers only pass the walk on */
					r->pos[v] = r->n;
					r->op[r->n++] = (int32_t)v;
				}
				stack[sp].node = v;
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
	if (r->n < n) {
		/* an unplaced op with an unplaced predecessor: walk back n steps,
		 * which lands on the cycle, then name the input that closes it */
		uint32_t u = 0, via = 0, pred = 0;

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
						via = k;
						break;
					}
			}
			if (next == u)
				break;
			pred = next;
			if (guard == n)
				break;
			u = next;
		}
		mp_error_set(err, "%scycle: op '%s' depends on itself through '%s'",
			     where(&net->ops[u], via, wb, sizeof(wb)), net->ops[u].name, net->ops[pred].name);
		goto out;
	}
	rc = 0;
out:
	free(wstart);
	free(wlist);
	free(wreads);
	free(inmark);
	free(outmark);
	free(n_all);
	free(n_pure);
	free(one_all);
	free(one_pure);
	free(bar_all);
	free(bar_pure);
	free(min_phase);
	free(bar_phase);
	free(el);
	free(npred);
	free(cnt);
	free(mark);
	free(key);
	free(stack);
	free(cstart);
	free(edges);
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

/* From sums of (t + 1) and (t + 1)^2 over the tensors crossing each boundary
 * (exact modulo 2^64 while at most two cross). */
uint32_t route_bounds(const struct mp_net *net, const struct mp_route *r, uint32_t k, uint32_t *at, int32_t *in)
{
	uint32_t nf = r->n_fwd, nt = net->n_tensors, n = 0;
	uint32_t *first = mp_xmalloc((nt + 1) * sizeof(*first)), *last = mp_xcalloc(nt + 1, sizeof(*last));
	uint32_t *last_w = mp_xcalloc(nt + 1, sizeof(*last_w)); /* last forward step writing t, + 1 */
	int64_t *cnt = mp_xcalloc(nf + 1, sizeof(*cnt));
	uint64_t *s1 = mp_xcalloc(nf + 1, sizeof(*s1)), *s2 = mp_xcalloc(nf + 1, sizeof(*s2));
	int64_t c = 0;
	uint64_t a1 = 0, a2 = 0;

	for (uint32_t t = 0; t < nt; t++)
		first[t] = UINT32_MAX;
	for (uint32_t i = 0; i < nf; i++) {
		const struct mp_op *op = &net->ops[r->op[i]];

		for (uint32_t q = 0; q < op->n_in + op->n_out; q++) {
			int32_t t = q < op->n_in ? op->in[q] : op->out[q - op->n_in];

			if (q >= op->n_in)
				last_w[t] = i + 1;
			if (sched_persistent(&net->tensors[t]) || net->tensors[t].kind == MP_TK_WORKSPACE)
				continue;
			if (first[t] == UINT32_MAX)
				first[t] = i;
			last[t] = i;
		}
	}
	for (uint32_t t = 0; t < nt; t++)
		if (first[t] != UINT32_MAX && first[t] < last[t]) {
			uint64_t v = (uint64_t)t + 1;

			cnt[first[t]]++;
			cnt[last[t]]--;
			s1[first[t]] += v;
			s1[last[t]] -= v;
			s2[first[t]] += v * v;
			s2[last[t]] -= v * v;
		}
	for (uint32_t b = 0; b + 1 < nf; b++) {
		int32_t x[2] = { -1, -1 };
		bool ok = true;

		c += cnt[b];
		a1 += s1[b];
		a2 += s2[b];
		if (c < 1 || (uint64_t)c > k)
			continue;
		if (c == 1) {
			x[0] = (int32_t)(a1 - 1);
		} else {
			/* a + b = a1, a^2 + b^2 = a2: (a - b)^2 = 2 a2 - a1^2 */
			uint64_t d2 = 2 * a2 - a1 * a1, d = (uint64_t)sqrt((double)d2);

			while (d * d > d2)
				d--;
			while ((d + 1) * (d + 1) <= d2)
				d++;
			x[0] = (int32_t)((a1 + d) / 2 - 1);
			x[1] = (int32_t)((a1 - d) / 2 - 1);
		}
		/* each written for the last time at or before b */
		for (int q = 0; q < 2 && ok; q++)
			ok = x[q] < 0 || (last_w[x[q]] && last_w[x[q]] - 1 <= b);
		if (!ok)
			continue;
		at[n] = b;
		in[2 * n] = x[0];
		in[2 * n + 1] = x[1];
		n++;
	}
	free(first);
	free(last);
	free(last_w);
	free(cnt);
	free(s1);
	free(s2);
	return n;
}
