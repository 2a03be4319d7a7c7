/*
 * Schedule storage and the generic liveness emitter (SuperNeurons 3.2 at
 * tensor granularity, TENSILE III-C release events), linear in the sequence:
 * one backward pass finds each tensor's last touch per generation, one forward
 * pass writes the actions.  Replaces SuperNeurons' O(N^2) in/out sets.
 */
#include "sched.h"

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

bool sched_persistent(const struct mp_tensor *t)
{
	return t->kind == MP_TK_PARAM || t->kind == MP_TK_OPT_STATE ||
	       (t->producer < 0 && t->kind != MP_TK_WORKSPACE);
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

void sched_action_cost(const struct mp_net *net, const struct mp_schedule *s,
		       const struct mp_action *a, double *ms, uint64_t *ws_bytes)
{
	if (a->micro <= 1) {
		*ms = sched_op_ms(net, a->op, a->algo);
		*ws_bytes = sched_ws_bytes(net, a->op, a->algo);
		return;
	}
	*ms = 0;
	*ws_bytes = 0;
	for (uint32_t k = 0; k < a->micro; k++) {
		const struct mp_micro *m = &s->micro[a->micro_at + k];
		double t;
		uint64_t w;

		sched_micro_cost(net, a->op, m->algo, m->batch, &t, &w);
		*ms += t;
		if (w > *ws_bytes)
			*ws_bytes = w;
	}
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

void sched_emit(const struct mp_net *net, const struct mp_entry *e, uint32_t n_e,
		const struct mp_swap *swaps, uint32_t n_swaps, struct mp_schedule *out)
{
	uint32_t nt = net->n_tensors;
	uint8_t *later = mp_xcalloc(nt, 1), *resident = mp_xcalloc(nt, 1), *written = mp_xcalloc(nt, 1);
	uint8_t *keep = mp_xcalloc(nt, 1);
	int32_t *swap_of = mp_xmalloc(nt * sizeof(*swap_of));
	/* last-touch marks: for entry i, the flat list of tensors to release after it */
	uint32_t *rel_start = mp_xcalloc(n_e + 1, sizeof(*rel_start)), n_rel = 0, cap_rel = 0;
	int32_t *rel = NULL;
	/* per entry: swaps whose in_at / use_at is this entry (CSR) */
	uint32_t *in_start = mp_xcalloc(n_e + 2, sizeof(*in_start));
	uint32_t *use_start = mp_xcalloc(n_e + 2, sizeof(*use_start));
	uint32_t *in_list = mp_xmalloc((n_swaps + 1) * sizeof(*in_list));
	uint32_t *use_list = mp_xmalloc((n_swaps + 1) * sizeof(*use_list));
	uint8_t *gen_start; /* flat per (entry, output): starts a generation */
	uint32_t *gs_start = mp_xcalloc(n_e + 1, sizeof(*gs_start));

	for (uint32_t t = 0; t < nt; t++)
		swap_of[t] = -1;
	for (uint32_t s = 0; s < n_swaps; s++) {
		swap_of[swaps[s].tensor] = (int32_t)s;
		in_start[swaps[s].in_at + 1]++;
		use_start[swaps[s].use_at + 1]++;
	}
	for (uint32_t i = 0; i <= n_e; i++) {
		in_start[i + 1] += in_start[i];
		use_start[i + 1] += use_start[i];
	}
	{
		uint32_t *fi = mp_xcalloc(n_e + 1, sizeof(*fi)), *fu = mp_xcalloc(n_e + 1, sizeof(*fu));

		for (uint32_t s = 0; s < n_swaps; s++) {
			in_list[in_start[swaps[s].in_at] + fi[swaps[s].in_at]++] = s;
			use_list[use_start[swaps[s].use_at] + fu[swaps[s].use_at]++] = s;
		}
		free(fi);
		free(fu);
	}
	/* iteration outputs: parameter gradients nobody reads stay to the end */
	for (uint32_t t = 0; t < nt; t++)
		keep[t] = net->tensors[t].kind == MP_TK_PARAM_GRAD || sched_persistent(&net->tensors[t]);
	for (uint32_t o = 0; o < net->n_ops; o++)
		for (uint32_t k = 0; k < net->ops[o].n_in; k++) {
			int32_t t = net->ops[o].in[k];

			if (net->tensors[t].kind == MP_TK_PARAM_GRAD)
				keep[t] = 0;
		}
	/* forward: which writes start a generation */
	for (uint32_t i = 0; i < n_e; i++)
		gs_start[i + 1] = gs_start[i] + net->ops[e[i].op].n_out;
	gen_start = mp_xcalloc(gs_start[n_e] + 1, 1);
	for (uint32_t i = 0; i < n_e; i++) {
		const struct mp_op *op = &net->ops[e[i].op];

		for (uint32_t k = 0; k < op->n_out; k++) {
			int32_t t = op->out[k];

			if (!written[t] || e[i].recompute)
				gen_start[gs_start[i] + k] = 1;
			written[t] = 1;
		}
	}
	/* backward: last touch of each generation */
	for (uint32_t i = n_e; i-- > 0;) {
		const struct mp_op *op = &net->ops[e[i].op];
		uint32_t base = n_rel;

		FOR_TOUCH(op, t, {
			if (!later[t] && !keep[t]) {
				mp_grow((void **)&rel, &cap_rel, n_rel + 1, sizeof(*rel));
				rel[n_rel++] = t;
			}
			later[t] = 1;
		});
		for (uint32_t k = 0; k < op->n_out; k++)
			if (gen_start[gs_start[i] + k])
				later[op->out[k]] = 0;
		for (uint32_t u = use_start[i]; u < use_start[i + 1]; u++)
			later[swaps[use_list[u]].tensor] = 0;
		rel_start[i] = base; /* entries are filled in reverse; fixed below */
	}
	/* rel holds entries in reverse order: entry i's list is rel[rel_start[i] ..
	 * rel_start[i-1]) with the end of entry n_e-1 at n_rel */
	{
		uint32_t *end = mp_xmalloc((n_e + 1) * sizeof(*end));

		for (uint32_t i = 0; i < n_e; i++)
			end[i] = i == 0 ? n_rel : rel_start[i - 1];
		/* emit */
		for (uint32_t t = 0; t < nt; t++)
			if (sched_persistent(&net->tensors[t]) && swap_of[t] < 0) {
				sched_push(out, MP_ACT_ALLOC, -1, (int32_t)t, net->tensors[t].bytes);
				resident[t] = 1;
			}
		for (uint32_t i = 0; i < n_e; i++) {
			const struct mp_op *op = &net->ops[e[i].op];

			for (uint32_t s = in_start[i]; s < in_start[i + 1]; s++) {
				int32_t t = swaps[in_list[s]].tensor;

				sched_push(out, MP_ACT_SWAP_IN, -1, t, net->tensors[t].bytes);
				resident[t] = 1;
			}
			for (uint32_t s = use_start[i]; s < use_start[i + 1]; s++)
				sched_push(out, MP_ACT_WAIT, -1, swaps[use_list[s]].tensor, 0);
			for (uint32_t k = 0; k < op->n_out; k++) {
				int32_t t = op->out[k];

				if (!resident[t] && gen_start[gs_start[i] + k]) {
					sched_push(out, MP_ACT_ALLOC, -1, t, net->tensors[t].bytes);
					resident[t] = 1;
				}
			}
			if (op->ws >= 0)
				sched_push(out, MP_ACT_ALLOC, -1, op->ws, sched_ws_bytes(net, e[i].op, e[i].algo));
			sched_push(out, e[i].recompute ? MP_ACT_RECOMPUTE : MP_ACT_COMPUTE, e[i].op, -1, 0);
			out->a[out->n - 1].algo = e[i].algo;
			if (op->ws >= 0)
				sched_push(out, MP_ACT_FREE, -1, op->ws, 0);
			for (uint32_t r = rel_start[i]; r < end[i]; r++) {
				int32_t t = rel[r];
				int32_t s = swap_of[t];

				if (!resident[t])
					continue;
				if (s >= 0 && swaps[s].out_after == i)
					sched_push(out, MP_ACT_SWAP_OUT, -1, t, 0);
				else
					sched_push(out, MP_ACT_FREE, -1, t, 0);
				resident[t] = 0;
			}
		}
		free(end);
	}
	free(later);
	free(resident);
	free(written);
	free(keep);
	free(swap_of);
	free(rel_start);
	free(rel);
	free(in_start);
	free(use_start);
	free(in_list);
	free(use_list);
	free(gen_start);
	free(gs_start);
}
