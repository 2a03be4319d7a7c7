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

struct frame {
	uint32_t node, next;
};

/* The dependency graph route_build walks: ops are nodes 0 .. n - 1, the
 * barriers that join several writers of one tensor nodes n .. n_nodes - 1. */
struct route_graph {
	const struct mp_net *net;
	uint32_t n, nt;
	uint32_t *wstart;          /* [nt + 1] writers of each tensor (CSR) */
	uint32_t *wlist;           /* [writers] */
	uint8_t *wreads;           /* [writers] the writer also reads the tensor */
	/* per (tensor, phase): writers of the phase, all and pure (not reading
	 * it), the single one when there is one, and the barrier node standing
	 * for several (UINT32_MAX until needed) */
	uint32_t *n_all, *n_pure, *one_all, *one_pure, *bar_all, *bar_pure;
	uint8_t *min_phase;        /* [nt] earliest phase writing the tensor */
	uint32_t n_nodes, cap_bar, *bar_phase;
	struct edge *el;           /* [n_el] dependency edges */
	uint32_t n_el, cap_el;
	uint32_t *npred;           /* [n_nodes] predecessors, deduplicated */
	uint32_t *cnt;             /* [n_nodes] predecessors placed so far */
	uint32_t *cstart;          /* [n_nodes + 1] children of each node (CSR) */
	struct child *edges;       /* [n_el] the children, sorted per phase */
	int64_t *key;              /* [n_nodes] visiting order */
	struct frame *stack;       /* [n_nodes] the depth-first walk */
};

/* Writers of each tensor (CSR), whether each also reads it, and their
 * counts per (tensor, phase). */
static void route_writers(struct route_graph *G)
{
	const struct mp_net *net = G->net;
	uint32_t n = G->n, nt = G->nt;
	uint32_t *inmark = mp_xcalloc(nt + 1, sizeof(*inmark)), *fill;

	G->wstart = mp_xcalloc(nt + 1, sizeof(*G->wstart));
	G->n_all = mp_xcalloc(3 * (size_t)nt + 1, sizeof(*G->n_all));
	G->n_pure = mp_xcalloc(3 * (size_t)nt + 1, sizeof(*G->n_pure));
	G->one_all = mp_xmalloc((3 * (size_t)nt + 1) * sizeof(*G->one_all));
	G->one_pure = mp_xmalloc((3 * (size_t)nt + 1) * sizeof(*G->one_pure));
	G->bar_all = mp_xmalloc((3 * (size_t)nt + 1) * sizeof(*G->bar_all));
	G->bar_pure = mp_xmalloc((3 * (size_t)nt + 1) * sizeof(*G->bar_pure));
	G->min_phase = mp_xmalloc(nt + 1);
	for (size_t i = 0; i < 3 * (size_t)nt; i++)
		G->bar_all[i] = G->bar_pure[i] = UINT32_MAX;
	memset(G->min_phase, 3, nt + 1);
	for (uint32_t o = 0; o < n; o++)
		for (uint32_t k = 0; k < net->ops[o].n_out; k++)
			G->wstart[net->ops[o].out[k] + 1]++;
	for (uint32_t t = 0; t < nt; t++)
		G->wstart[t + 1] += G->wstart[t];
	G->wlist = mp_xmalloc((G->wstart[nt] + 1) * sizeof(*G->wlist));
	G->wreads = mp_xcalloc(G->wstart[nt] + 1, 1);
	fill = mp_xcalloc(nt + 1, sizeof(*fill));
	for (uint32_t o = 0; o < n; o++) {
		const struct mp_op *op = &net->ops[o];

		for (uint32_t k = 0; k < op->n_in; k++)
			inmark[op->in[k]] = o + 1;
		for (uint32_t k = 0; k < op->n_out; k++) {
			int32_t t = op->out[k];
			uint32_t slot = G->wstart[t] + fill[t]++;
			size_t tp = 3 * (size_t)t + op->phase;

			G->wlist[slot] = o;
			G->wreads[slot] = inmark[t] == o + 1;
			if (op->phase < G->min_phase[t])
				G->min_phase[t] = (uint8_t)op->phase;
			if (G->n_all[tp]++ == 0)
				G->one_all[tp] = o;
			if (!G->wreads[slot] && G->n_pure[tp]++ == 0)
				G->one_pure[tp] = o;
		}
	}
	free(fill);
	free(inmark);
}

/* Op o reads tensor t, which nothing of its phase or before writes. */
static void route_unwritten_error(const struct route_graph *G, uint32_t o, uint32_t k, struct mp_error *err)
{
	const struct mp_op *op = &G->net->ops[o];
	int32_t t = op->in[k];
	int only_self = G->wstart[t + 1] - G->wstart[t] == 1 && G->wlist[G->wstart[t]] == o;
	char wb[64];

	if (only_self)
		mp_error_set(err, "%sop '%s' reads '%s', which no earlier op writes",
			     where(op, k, wb, sizeof(wb)), op->name, G->net->tensors[t].name);
	else
		mp_error_set(err, "%s%s op '%s' reads '%s', which only a later phase writes",
			     where(op, k, wb, sizeof(wb)), mp_phase_name(op->phase), op->name,
			     G->net->tensors[t].name);
}

/* Dependencies within a phase: a reader waits for the writers of what it
 * reads (an in-place updater, for the pure writers only, and for the
 * in-place updaters before it in the file: add_ then relu_ on one tensor is
 * relu(x + y), not relu(x) + y).  Several writers are joined by one barrier
 * node, so W writers and R readers of one tensor cost W + R edges, not W *
 * R.  Cross-phase reads must look backward: a later phase runs later.  0,
 * or -1 with *err. */
static int route_deps(struct route_graph *G, struct mp_error *err)
{
	const struct mp_net *net = G->net;
	uint32_t n = G->n;
	uint32_t *outmark = mp_xcalloc(G->nt + 1, sizeof(*outmark));
	uint32_t *last_upd = mp_xmalloc((3 * (size_t)G->nt + 1) * sizeof(*last_upd));
	int rc = -1;

	for (size_t i = 0; i < 3 * (size_t)G->nt; i++)
		last_upd[i] = UINT32_MAX;

	for (uint32_t o = 0; o < n; o++) {
		const struct mp_op *op = &net->ops[o];

		for (uint32_t k = 0; k < op->n_out; k++)
			outmark[op->out[k]] = o + 1;
		for (uint32_t k = 0; k < op->n_in; k++) {
			int32_t t = op->in[k];
			int inplace = outmark[t] == o + 1;
			size_t tp = 3 * (size_t)t + op->phase;
			uint32_t cnt_w = inplace ? G->n_pure[tp] : G->n_all[tp];
			uint32_t *bar = inplace ? &G->bar_pure[tp] : &G->bar_all[tp];
			int earlier = persistent(&net->tensors[t]) || G->min_phase[t] < op->phase || cnt_w > 0;

			if (!earlier) {
				route_unwritten_error(G, o, k, err);
				goto out;
			}
			if (inplace) {
				if (last_upd[tp] != UINT32_MAX)
					add_edge(&G->el, &G->n_el, &G->cap_el, last_upd[tp], o);
				last_upd[tp] = o;
			}
			if (cnt_w == 1) {
				uint32_t w = inplace ? G->one_pure[tp] : G->one_all[tp];

				if (w != o)
					add_edge(&G->el, &G->n_el, &G->cap_el, w, o);
				continue;
			}
			if (cnt_w == 0)
				continue;
			if (*bar == UINT32_MAX) {
				*bar = G->n_nodes++;
				mp_grow((void **)&G->bar_phase, &G->cap_bar, *bar - n + 1, sizeof(*G->bar_phase));
				G->bar_phase[*bar - n] = op->phase;
				for (uint32_t w = G->wstart[t]; w < G->wstart[t + 1]; w++)
					if (net->ops[G->wlist[w]].phase == op->phase && !(inplace && G->wreads[w]))
						add_edge(&G->el, &G->n_el, &G->cap_el, G->wlist[w], *bar);
			}
			add_edge(&G->el, &G->n_el, &G->cap_el, *bar, o);
		}
	}
	rc = 0;
out:
	free(outmark);
	free(last_upd);
	return rc;
}

/* Drop duplicate (src, dst) edges (an op reading two tensors of one writer
 * depends on it once) and count each node's predecessors; grouping the
 * edges by destination dedupes them with one mark per source. */
static void route_dedupe(struct route_graph *G)
{
	uint32_t n_nodes = G->n_nodes, kept = 0;
	uint32_t *f = mp_xcalloc(n_nodes + 1, sizeof(*f));
	uint32_t *mark = mp_xmalloc((n_nodes + 1) * sizeof(*mark));
	uint32_t *dstart = mp_xcalloc(n_nodes + 2, sizeof(*dstart)), *dl;
	struct edge *el = G->el;

	for (uint32_t i = 0; i <= n_nodes; i++)
		mark[i] = UINT32_MAX;
	for (uint32_t e = 0; e < G->n_el; e++)
		dstart[el[e].dst + 1]++;
	for (uint32_t v = 0; v < n_nodes; v++)
		dstart[v + 1] += dstart[v];
	dl = mp_xmalloc((G->n_el + 1) * sizeof(*dl));
	for (uint32_t e = 0; e < G->n_el; e++)
		dl[dstart[el[e].dst] + f[el[e].dst]++] = el[e].src;
	for (uint32_t v = 0; v < n_nodes; v++)
		for (uint32_t e = dstart[v]; e < dstart[v + 1]; e++) {
			uint32_t src = dl[e];

			if (mark[src] == v)
				continue;
			mark[src] = v;
			el[kept++] = (struct edge){ src, v };
			G->npred[v]++;
		}
	G->n_el = kept;
	free(dstart);
	free(dl);
	free(mark);
	free(f);
}

/* Children of each node (CSR), deduplicated per destination. */
static void route_children(struct route_graph *G)
{
	uint32_t n_nodes = G->n_nodes, *f;

	G->npred = mp_xcalloc(n_nodes + 1, sizeof(*G->npred));
	G->cnt = mp_xcalloc(n_nodes + 1, sizeof(*G->cnt));
	G->key = mp_xmalloc((n_nodes + 1) * sizeof(*G->key));
	G->stack = mp_xmalloc((n_nodes + 1) * sizeof(*G->stack));
	G->cstart = mp_xcalloc(n_nodes + 2, sizeof(*G->cstart));
	G->edges = mp_xmalloc((G->n_el + 1) * sizeof(*G->edges));
	route_dedupe(G);
	f = mp_xcalloc(n_nodes + 1, sizeof(*f));
	for (uint32_t e = 0; e < G->n_el; e++)
		G->cstart[G->el[e].src + 1]++;
	for (uint32_t v = 0; v < n_nodes; v++)
		G->cstart[v + 1] += G->cstart[v];
	for (uint32_t e = 0; e < G->n_el; e++)
		G->edges[G->cstart[G->el[e].src] + f[G->el[e].src]++].op = (int32_t)G->el[e].dst;
	free(f);
}

/* Keys of phase ph's nodes: forward by file order; backward by reverse
 * forward step of the layer's forward op; optimizer by forward step; a
 * barrier takes its first reader's.  Sorts each node's children by key and
 * fills roots[] (the nodes without predecessors), sorted too; returns their
 * count. */
static uint32_t route_phase_keys(struct route_graph *G, const struct mp_route *r, int ph, struct child *roots)
{
	const struct mp_net *net = G->net;
	uint32_t n = G->n, n_roots = 0, *cstart = G->cstart;
	int64_t *key = G->key;

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
		if (G->npred[o] == 0)
			roots[n_roots++] = (struct child){ key[o], (int32_t)o };
	}
	for (uint32_t b = n; b < G->n_nodes; b++) {
		if ((int)G->bar_phase[b - n] != ph)
			continue;
		key[b] = INT64_MAX;
		for (uint32_t e = cstart[b]; e < cstart[b + 1]; e++)
			if (key[G->edges[e].op] < key[b])
				key[b] = key[G->edges[e].op];
	}
	for (uint32_t v = 0; v < G->n_nodes; v++) {
		if ((v < n ? (int)net->ops[v].phase : (int)G->bar_phase[v - n]) != ph)
			continue;
		for (uint32_t e = cstart[v]; e < cstart[v + 1]; e++)
			G->edges[e].key = key[G->edges[e].op];
		if (cstart[v + 1] - cstart[v] > 1)
			qsort(G->edges + cstart[v], cstart[v + 1] - cstart[v], sizeof(*G->edges), cmp_child);
	}
	qsort(roots, n_roots, sizeof(*roots), cmp_child);
	return n_roots;
}

/* Depth-first from root, placing a node once all its predecessors are (the
 * join counter); barriers only pass the walk on. */
static void route_walk(struct route_graph *G, struct mp_route *r, int32_t root)
{
	struct frame *stack = G->stack;
	uint32_t sp = 0, *cstart = G->cstart;

	stack[sp].node = (uint32_t)root;
	stack[sp++].next = cstart[root];
	r->pos[root] = r->n;
	r->op[r->n++] = root;
	while (sp) {
		uint32_t u = stack[sp - 1].node, e = stack[sp - 1].next, v;

		if (e == cstart[u + 1]) {
			sp--;
			continue;
		}
		stack[sp - 1].next++;
		v = (uint32_t)G->edges[e].op;
		if (++G->cnt[v] < G->npred[v])
			continue; /* a join: wait for the other predecessors */
		if (v < G->n) {
			r->pos[v] = r->n;
			r->op[r->n++] = (int32_t)v;
		}
		stack[sp].node = v;
		stack[sp++].next = cstart[v];
	}
}

/* An unplaced writer, in u's phase, of one of the tensors u reads (its k-th
 * input into *via), or u when there is none. */
static uint32_t cycle_pred(const struct route_graph *G, const struct mp_route *r, uint32_t u, uint32_t *via)
{
	const struct mp_op *op = &G->net->ops[u];

	for (uint32_t k = 0; k < op->n_in; k++) {
		int32_t t = op->in[k];

		for (uint32_t w = G->wstart[t]; w < G->wstart[t + 1]; w++)
			if (G->wlist[w] != u && r->pos[G->wlist[w]] == UINT32_MAX &&
			    G->net->ops[G->wlist[w]].phase == op->phase) {
				*via = k;
				return G->wlist[w];
			}
	}
	return u;
}

/* Some op is unplaced, so it has an unplaced predecessor: walk back n
 * steps, which lands on a cycle, then name the input that closes it, at an
 * op of the file's "ops" where the cycle has one (its JSON path). */
static void route_cycle_error(const struct route_graph *G, const struct mp_route *r, struct mp_error *err)
{
	const struct mp_net *net = G->net;
	uint32_t n = G->n, u = 0, via = 0, pred, start;
	char wb[64];

	while (r->pos[u] != UINT32_MAX)
		u++;
	for (uint32_t guard = 0; guard < n && (pred = cycle_pred(G, r, u, &via)) != u; guard++)
		u = pred;
	start = u;
	for (uint32_t guard = 0; guard < n && net->ops[u].json_index < 0; guard++) {
		pred = cycle_pred(G, r, u, &via);
		if (pred == u || pred == start) {
			u = start;
			break;
		}
		u = pred;
	}
	pred = cycle_pred(G, r, u, &via);
	mp_error_set(err, "%scycle: op '%s' depends on itself through '%s'",
		     where(&net->ops[u], via, wb, sizeof(wb)), net->ops[u].name, net->ops[pred].name);
}

static void route_graph_release(struct route_graph *G)
{
	free(G->wstart);
	free(G->wlist);
	free(G->wreads);
	free(G->n_all);
	free(G->n_pure);
	free(G->one_all);
	free(G->one_pure);
	free(G->bar_all);
	free(G->bar_pure);
	free(G->min_phase);
	free(G->bar_phase);
	free(G->el);
	free(G->npred);
	free(G->cnt);
	free(G->key);
	free(G->stack);
	free(G->cstart);
	free(G->edges);
}

/* A net that fixes its order (several jobs merged): that order, checked to
 * be a permutation; the forward steps are its leading forward ops, the
 * optimizer steps its trailing optimizer ops, the backward steps the rest. */
static int route_fixed(const struct mp_net *net, struct mp_route *r, struct mp_error *err)
{
	uint32_t n = net->n_ops, f = 0, o = 0;

	memset(r, 0, sizeof(*r));
	r->op = mp_xmalloc((n + 1) * sizeof(*r->op));
	r->pos = mp_xmalloc((n + 1) * sizeof(*r->pos));
	for (uint32_t i = 0; i < n; i++)
		r->pos[i] = UINT32_MAX;
	for (uint32_t i = 0; i < n; i++) {
		int32_t op = net->order[i];

		if (op < 0 || (uint32_t)op >= n || r->pos[op] != UINT32_MAX) {
			mp_error_set(err, "internal: the fixed order is not a permutation of the ops (step %u)", i);
			route_release(r);
			return -1;
		}
		r->op[i] = op;
		r->pos[op] = i;
	}
	r->n = n;
	while (f < n && net->ops[r->op[f]].phase == MP_PHASE_FWD)
		f++;
	while (o < n - f && net->ops[r->op[n - 1 - o]].phase == MP_PHASE_OPT)
		o++;
	r->n_fwd = f;
	r->n_opt = o;
	r->n_bwd = n - f - o;
	return 0;
}

int route_build(const struct mp_net *net, struct mp_route *r, struct mp_error *err)
{
	uint32_t n = net->n_ops;
	struct route_graph G = { .net = net, .n = n, .nt = net->n_tensors, .n_nodes = n };
	int rc = -1;

	if (net->order)
		return route_fixed(net, r, err);
	memset(r, 0, sizeof(*r));
	r->op = mp_xmalloc((n + 1) * sizeof(*r->op));
	r->pos = mp_xmalloc((n + 1) * sizeof(*r->pos));
	for (uint32_t i = 0; i < n; i++)
		r->pos[i] = UINT32_MAX;
	route_writers(&G);
	if (route_deps(&G, err) < 0)
		goto out;
	route_children(&G);
	for (uint32_t o = 0; o < n; o++)
		G.key[o] = net->ops[o].index;
	for (int ph = MP_PHASE_FWD; ph <= MP_PHASE_OPT; ph++) {
		struct child *roots = mp_xmalloc((n + 1) * sizeof(*roots));
		uint32_t n_roots = route_phase_keys(&G, r, ph, roots), start = r->n;

		for (uint32_t ri = 0; ri < n_roots; ri++)
			route_walk(&G, r, roots[ri].op);
		free(roots);
		if (ph == MP_PHASE_FWD)
			r->n_fwd = r->n - start;
		else if (ph == MP_PHASE_BWD)
			r->n_bwd = r->n - start;
		else
			r->n_opt = r->n - start;
	}
	if (r->n < n) {
		route_cycle_error(&G, r, err);
		goto out;
	}
	rc = 0;
out:
	route_graph_release(&G);
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
