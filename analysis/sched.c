/*
 * Schedule storage and the generic liveness emitter (SuperNeurons 3.2 at
 * tensor granularity, TENSILE III-C release events), linear in the sequence:
 * one backward pass finds each tensor's last touch per generation, one forward
 * pass writes the actions.  Replaces SuperNeurons' O(N^2) in/out sets.
 */
#include "sched.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

const char *mp_act_name(enum mp_act_kind k)
{
	static const char *const n[] = { "compute", "recompute", "alloc", "free",
		"swap_out", "swap_in", "wait" };
	return n[k];
}

void sched_init(struct mp_schedule *s)
{
	memset(s, 0, sizeof(*s));
}

void sched_release(struct mp_schedule *s)
{
	free(s->a);
	free(s->micro);
	memset(s, 0, sizeof(*s));
}

void sched_push(struct mp_schedule *s, enum mp_act_kind kind, int32_t op,
		int32_t tensor, uint64_t bytes)
{
	struct mp_action *a;

	mp_grow((void **)&s->a, &s->cap, s->n + 1, sizeof(*s->a));
	a = &s->a[s->n++];
	memset(a, 0, sizeof(*a));
	a->kind = kind;
	a->op = op;
	a->tensor = tensor;
	a->algo = -1;
	a->micro = 1;
	a->micro_at = 0;
	a->bytes = bytes;
}

void sched_reserve(struct mp_schedule *s, uint32_t n)
{
	uint64_t need = (uint64_t)s->n + n;

	if (need <= s->cap)
		return;
	if (need > UINT32_MAX)
		need = UINT32_MAX;
	s->a = mp_xrealloc(s->a, (size_t)need * sizeof(*s->a));
	s->cap = (uint32_t)need;
}

void sched_copy(struct mp_schedule *dst, const struct mp_schedule *src, const uint32_t *ord)
{
	dst->n = dst->cap = src->n;
	dst->a = mp_xmalloc((src->n + 1) * sizeof(*dst->a));
	if (ord) {
		for (uint32_t i = 0; i < src->n; i++)
			dst->a[i] = src->a[ord[i]];
	} else if (src->n) {
		memcpy(dst->a, src->a, src->n * sizeof(*src->a));
	}
	dst->n_micro = dst->cap_micro = src->n_micro;
	dst->micro = mp_xmalloc((src->n_micro + 1) * sizeof(*dst->micro));
	if (src->n_micro) /* (NULL where no step runs in micro-batches) */
		memcpy(dst->micro, src->micro, src->n_micro * sizeof(*src->micro));
}

uint64_t sched_ws_bytes(const struct mp_net *net, int32_t op, int32_t algo)
{
	const struct mp_op *o = &net->ops[op];

	if (algo >= 0)
		return o->algos[algo].workspace_bytes;
	return o->ws >= 0 ? net->tensors[o->ws].bytes : 0;
}

double sched_op_ms(const struct mp_net *net, int32_t op, int32_t algo)
{
	const struct mp_op *o = &net->ops[op];

	return algo >= 0 ? o->algos[algo].ms : o->ms;
}

void sched_micro_cost(const struct mp_net *net, int32_t op, int32_t algo, uint32_t batch,
		      double *ms, uint64_t *ws_bytes)
{
	const struct mp_op *o = &net->ops[op];
	double full_ms = sched_op_ms(net, op, algo);
	uint64_t full_ws = sched_ws_bytes(net, op, algo);
	uint32_t B = o->batch ? o->batch : 1;

	if (algo >= 0 && batch != B) {
		/* an entry of the same algorithm measured at this micro-batch */
		for (uint32_t k = 0; k < o->n_algos; k++)
			if (o->algos[k].batch == batch && !strcmp(o->algos[k].name, o->algos[algo].name)) {
				*ms = o->algos[k].ms;
				*ws_bytes = o->algos[k].workspace_bytes;
				return;
			}
	}
	if (batch >= B) {
		*ms = full_ms;
		*ws_bytes = full_ws;
		return;
	}
	/* scaled from the full batch: time and workspace proportional to samples */
	*ms = full_ms * batch / B;
	*ws_bytes = (uint64_t)((double)full_ws * batch / B);
}

void sched_op_cost(const struct mp_net *net, int32_t op, int32_t algo, const struct mp_micro *m,
		   uint32_t n, double *ms, uint64_t *ws_bytes)
{
	if (n <= 1) {
		*ms = sched_op_ms(net, op, algo);
		*ws_bytes = sched_ws_bytes(net, op, algo);
		return;
	}
	*ms = 0;
	*ws_bytes = 0;
	for (uint32_t k = 0; k < n; k++) {
		double t;
		uint64_t w;

		sched_micro_cost(net, op, m[k].algo, m[k].batch, &t, &w);
		*ms += t;
		if (w > *ws_bytes)
			*ws_bytes = w;
	}
}

void sched_action_cost(const struct mp_net *net, const struct mp_schedule *s,
		       const struct mp_action *a, double *ms, uint64_t *ws_bytes)
{
	sched_op_cost(net, a->op, a->algo, a->micro > 1 ? &s->micro[a->micro_at] : NULL, a->micro, ms, ws_bytes);
}

void sched_set_micro(struct mp_schedule *s, uint32_t i, const struct mp_micro *m, uint32_t n)
{
	mp_grow((void **)&s->micro, &s->cap_micro, s->n_micro + n, sizeof(*s->micro));
	memcpy(s->micro + s->n_micro, m, n * sizeof(*m));
	s->a[i].micro_at = s->n_micro;
	s->a[i].micro = n;
	s->n_micro += n;
}

/* Iterate the tensors an entry touches: inputs then outputs (no workspace). */
#define FOR_TOUCH(op, t, body) do { \
	for (uint32_t k_ = 0; k_ < (op)->n_in; k_++) { int32_t t = (op)->in[k_]; body } \
	for (uint32_t k_ = 0; k_ < (op)->n_out; k_++) { int32_t t = (op)->out[k_]; body } \
} while (0)

static bool op_reads(const struct mp_op *op, int32_t t)
{
	for (uint32_t k = 0; k < op->n_in; k++)
		if (op->in[k] == t)
			return true;
	return false;
}

/* Per-entry lists of swap indices (CSR): by out_after, in_at or use_at. */
struct swap_index {
	uint32_t *start, *list;
};

static void swap_index_build(struct swap_index *x, const struct mp_swap *swaps, uint32_t n_swaps,
			     uint32_t n_e, size_t field)
{
	uint32_t *fill = mp_xcalloc(n_e + 1, sizeof(*fill));

	x->start = mp_xcalloc(n_e + 2, sizeof(*x->start));
	x->list = mp_xmalloc((n_swaps + 1) * sizeof(*x->list));
	for (uint32_t s = 0; s < n_swaps; s++) {
		uint32_t at = *(const uint32_t *)((const char *)&swaps[s] + field);

		if (at < n_e)
			x->start[at + 1]++;
	}
	for (uint32_t i = 0; i <= n_e; i++)
		x->start[i + 1] += x->start[i];
	for (uint32_t s = 0; s < n_swaps; s++) {
		uint32_t at = *(const uint32_t *)((const char *)&swaps[s] + field);

		if (at < n_e)
			x->list[x->start[at] + fill[at]++] = s;
	}
	free(fill);
}

static void swap_index_release(struct swap_index *x)
{
	free(x->start);
	free(x->list);
}

void sched_close(const struct mp_net *net, struct mp_schedule *s)
{
	uint8_t *on = mp_xcalloc(net->n_tensors ? net->n_tensors : 1, 1);
	const uint32_t n = s->n;
	uint32_t n_free = 0;

	for (uint32_t i = 0; i < n; i++) {
		const struct mp_action *a = &s->a[i];

		if (a->tensor < 0)
			continue;
		if (a->kind == MP_ACT_ALLOC || a->kind == MP_ACT_SWAP_IN)
			on[a->tensor] = 1;
		else if (a->kind == MP_ACT_FREE || a->kind == MP_ACT_SWAP_OUT)
			on[a->tensor] = 0;
	}
	for (uint32_t t = 0; t < net->n_tensors; t++)
		n_free += on[t] && !sched_persistent(&net->tensors[t]);
	sched_reserve(s, n_free);
	for (uint32_t t = 0; t < net->n_tensors; t++)
		if (on[t] && !sched_persistent(&net->tensors[t]))
			sched_push(s, MP_ACT_FREE, -1, (int32_t)t, 0);
	free(on);
}

/* What sched_emit knows of a compute sequence while it emits it. */
struct emit_state {
	const struct mp_net *net;
	const struct mp_entry *e;
	uint32_t n_e;
	const struct mp_swap *swaps;
	struct mp_schedule *out;
	uint8_t *resident;         /* [nt] */
	/* gen_start[gs_start[i] + k]: entry i's k-th output starts a generation */
	uint32_t *gs_start;        /* [n_e + 1] */
	uint8_t *gen_start;
	/* releases: for entry i, the tensors whose generation ends there (CSR,
	 * filled in reverse entry order by the backward pass) */
	uint32_t *rel_start, n_rel;
	int32_t *rel;              /* [n_rel] */
	uint32_t n_kept;           /* tensors sched_close frees: unread gradients */
	struct swap_index by_out, by_in, by_use, by_wait;
};

/* Forward: which writes start a generation.  A recompute starts a new one,
 * unless it updates the tensor in place (an in-place relu re-run after its
 * producer). */
static void emit_generations(struct emit_state *E)
{
	const struct mp_net *net = E->net;
	uint8_t *written = mp_xcalloc(net->n_tensors, 1);

	E->gs_start = mp_xcalloc(E->n_e + 1, sizeof(*E->gs_start));
	for (uint32_t i = 0; i < E->n_e; i++)
		E->gs_start[i + 1] = E->gs_start[i] + net->ops[E->e[i].op].n_out;
	E->gen_start = mp_xcalloc(E->gs_start[E->n_e] + 1, 1);
	for (uint32_t i = 0; i < E->n_e; i++) {
		const struct mp_op *op = &net->ops[E->e[i].op];

		for (uint32_t k = 0; k < op->n_out; k++) {
			int32_t t = op->out[k];

			if (!written[t] || (E->e[i].recompute && !op_reads(op, t)))
				E->gen_start[E->gs_start[i] + k] = 1;
			written[t] = 1;
		}
	}
	free(written);
}

/* Backward: the last touch of each generation, where the tensor is
 * released; a swap's use starts a new generation.  Persistent tensors and
 * parameter gradients nobody reads stay resident (the latter to the end of
 * the iteration: sched_close). */
static void emit_releases(struct emit_state *E)
{
	const struct mp_net *net = E->net;
	uint32_t nt = net->n_tensors, cap_rel = 0;
	uint8_t *later = mp_xcalloc(nt, 1), *keep = mp_xcalloc(nt, 1);

	for (uint32_t t = 0; t < nt; t++)
		keep[t] = net->tensors[t].kind == MP_TK_PARAM_GRAD || sched_persistent(&net->tensors[t]);
	for (uint32_t o = 0; o < net->n_ops; o++)
		for (uint32_t k = 0; k < net->ops[o].n_in; k++) {
			int32_t t = net->ops[o].in[k];

			if (net->tensors[t].kind == MP_TK_PARAM_GRAD && !sched_persistent(&net->tensors[t]))
				keep[t] = 0;
		}
	for (uint32_t t = 0; t < nt; t++)
		E->n_kept += keep[t] && !sched_persistent(&net->tensors[t]);
	E->rel_start = mp_xcalloc(E->n_e + 1, sizeof(*E->rel_start));
	for (uint32_t i = E->n_e; i-- > 0;) {
		const struct mp_op *op = &net->ops[E->e[i].op];

		E->rel_start[i] = E->n_rel;
		FOR_TOUCH(op, t, {
			if (!later[t] && !keep[t]) {
				mp_grow((void **)&E->rel, &cap_rel, E->n_rel + 1, sizeof(*E->rel));
				E->rel[E->n_rel++] = t;
			}
			later[t] = 1;
		});
		for (uint32_t k = 0; k < op->n_out; k++)
			if (E->gen_start[E->gs_start[i] + k])
				later[op->out[k]] = 0;
		for (uint32_t u = E->by_use.start[i]; u < E->by_use.start[i + 1]; u++)
			later[E->swaps[E->by_use.list[u]].tensor] = 0;
	}
	free(later);
	free(keep);
}

/* Entry i's actions: waits for swap-outs, swap-ins, waits for them, allocs
 * of the generations it starts, its workspace around the compute, then
 * swap-outs and frees.  Its releases are rel[rel_start[i] .. end of i),
 * where the end is where entry i-1's list begins (it was filled next). */
static void emit_entry(struct emit_state *E, uint32_t i)
{
	const struct mp_net *net = E->net;
	const struct mp_entry *e = &E->e[i];
	const struct mp_op *op = &net->ops[e->op];
	const struct mp_swap *swaps = E->swaps;
	struct mp_schedule *out = E->out;
	uint32_t rel_end = i == 0 ? E->n_rel : E->rel_start[i - 1];

	for (uint32_t s = E->by_wait.start[i]; i && s < E->by_wait.start[i + 1]; s++)
		if (swaps[E->by_wait.list[s]].out_after < i)
			sched_push(out, MP_ACT_WAIT, -1, swaps[E->by_wait.list[s]].tensor, 0);
	for (uint32_t s = E->by_in.start[i]; s < E->by_in.start[i + 1]; s++) {
		int32_t t = swaps[E->by_in.list[s]].tensor;

		sched_push(out, MP_ACT_SWAP_IN, -1, t, net->tensors[t].bytes);
		E->resident[t] = 1;
	}
	for (uint32_t s = E->by_use.start[i]; s < E->by_use.start[i + 1]; s++)
		sched_push(out, MP_ACT_WAIT, -1, swaps[E->by_use.list[s]].tensor, 0);
	for (uint32_t k = 0; k < op->n_out; k++) {
		int32_t t = op->out[k];

		if (!E->resident[t] && E->gen_start[E->gs_start[i] + k]) {
			sched_push(out, MP_ACT_ALLOC, -1, t, net->tensors[t].bytes);
			E->resident[t] = 1;
		}
	}
	if (op->ws >= 0)
		sched_push(out, MP_ACT_ALLOC, -1, op->ws, sched_ws_bytes(net, e->op, e->algo));
	sched_push(out, e->recompute ? MP_ACT_RECOMPUTE : MP_ACT_COMPUTE, e->op, -1, 0);
	out->a[out->n - 1].algo = e->algo;
	if (op->ws >= 0)
		sched_push(out, MP_ACT_FREE, -1, op->ws, 0);
	for (uint32_t s = E->by_out.start[i]; s < E->by_out.start[i + 1]; s++) {
		int32_t t = swaps[E->by_out.list[s]].tensor;

		if (E->resident[t]) {
			sched_push(out, MP_ACT_SWAP_OUT, -1, t, 0);
			E->resident[t] = 0;
		}
	}
	for (uint32_t r = E->rel_start[i]; r < rel_end; r++) {
		int32_t t = E->rel[r];

		if (!E->resident[t])
			continue; /* swapped out above */
		sched_push(out, MP_ACT_FREE, -1, t, 0);
		E->resident[t] = 0;
	}
}

/* At most how many actions sched_emit pushes, so that it never grows the
 * schedule: each swap gives at most a wait for its copy, a swap-in, a wait at
 * its use, a swap-out and, after that swap-out, an alloc of a new generation
 * of its tensor; each entry its compute, a workspace's alloc and free, and
 * its releases; each persistent tensor its alloc before the first entry, and
 * each generation of another tensor an alloc (a persistent tensor stays
 * resident unless swapped); sched_close the unread gradients. */
static uint32_t emit_bound(const struct emit_state *E, uint32_t n_swaps)
{
	const struct mp_net *net = E->net;
	uint64_t n = 5ull * n_swaps + E->n_rel + E->n_e + E->n_kept;

	for (uint32_t t = 0; t < net->n_tensors; t++)
		n += sched_persistent(&net->tensors[t]);
	for (uint32_t i = 0; i < E->n_e; i++) {
		const struct mp_op *op = &net->ops[E->e[i].op];

		for (uint32_t k = 0; k < op->n_out; k++)
			n += E->gen_start[E->gs_start[i] + k] && !sched_persistent(&net->tensors[op->out[k]]);
		n += 2 * (op->ws >= 0);
	}
	return n > UINT32_MAX ? UINT32_MAX : (uint32_t)n;
}

void sched_emit(const struct mp_net *net, const struct mp_entry *e, uint32_t n_e,
		const struct mp_swap *swaps, uint32_t n_swaps, struct mp_schedule *out)
{
	uint32_t nt = net->n_tensors;
	struct emit_state E = { .net = net, .e = e, .n_e = n_e, .swaps = swaps, .out = out };
	uint8_t *host_start = mp_xcalloc(nt, 1);

	E.resident = mp_xcalloc(nt, 1);
	swap_index_build(&E.by_out, swaps, n_swaps, n_e, offsetof(struct mp_swap, out_after));
	swap_index_build(&E.by_in, swaps, n_swaps, n_e, offsetof(struct mp_swap, in_at));
	swap_index_build(&E.by_use, swaps, n_swaps, n_e, offsetof(struct mp_swap, use_at));
	swap_index_build(&E.by_wait, swaps, n_swaps, n_e, offsetof(struct mp_swap, out_wait));
	for (uint32_t s = 0; s < n_swaps; s++)
		if (swaps[s].out_after == MP_SWAP_NONE)
			host_start[swaps[s].tensor] = 1;
	emit_generations(&E);
	emit_releases(&E);
	sched_reserve(out, emit_bound(&E, n_swaps));
	for (uint32_t t = 0; t < nt; t++)
		if (sched_persistent(&net->tensors[t]) && !host_start[t]) {
			sched_push(out, MP_ACT_ALLOC, -1, (int32_t)t, net->tensors[t].bytes);
			E.resident[t] = 1;
		}
	for (uint32_t i = 0; i < n_e; i++)
		emit_entry(&E, i);
	sched_close(net, out);
	free(host_start);
	free(E.resident);
	free(E.gs_start);
	free(E.gen_start);
	free(E.rel_start);
	free(E.rel);
	swap_index_release(&E.by_out);
	swap_index_release(&E.by_in);
	swap_index_release(&E.by_use);
	swap_index_release(&E.by_wait);
}
