/*
 * A Net at another batch size and on another GPU (net_scaled, for memplan
 * capacity): per-sample tensors scale with the batch, op and algorithm times
 * with the batch and a roofline factor per op kind.  The copy borrows the
 * original's names and arrays.  O(tensors + ops + algorithms).
 */
#include "net.h"

#include <stdlib.h>
#include <string.h>

static bool compute_bound(enum mp_layer_type t)
{
	return t == MP_L_CONV || t == MP_L_FC || t == MP_L_ATTENTION || t == MP_L_EMBEDDING;
}

struct mp_net *net_scaled(const struct mp_net *net, uint32_t batch, double compute_factor,
			  double memory_factor, struct mp_error *err)
{
	struct mp_net *c;
	double r;

	if (!net->batch) {
		mp_error_set(err, "the net has no batch to vary (no data layer with a shape)");
		return NULL;
	}
	r = (double)batch / net->batch;
	c = mp_xcalloc(1, sizeof(*c));
	*c = *net;
	memset(&c->arena, 0, sizeof(c->arena));
	c->parent = net;
	c->batch = batch;
	c->tensors = mp_xmalloc((net->n_tensors + 1) * sizeof(*c->tensors));
	c->ops = mp_xmalloc((net->n_ops + 1) * sizeof(*c->ops));
	c->layers = mp_xmalloc((net->n_layers + 1) * sizeof(*c->layers));
	memcpy(c->tensors, net->tensors, net->n_tensors * sizeof(*c->tensors));
	memcpy(c->ops, net->ops, net->n_ops * sizeof(*c->ops));
	if (net->n_layers) /* (an explicit-op net has none: layers NULL) */
		memcpy(c->layers, net->layers, net->n_layers * sizeof(*c->layers));
	for (uint32_t i = 0; i < net->n_layers; i++) /* the shapes of per-sample outputs */
		if (c->layers[i].shape.nd && c->layers[i].shape.d[0] == net->batch)
			c->layers[i].shape.d[0] = batch;
	for (uint32_t t = 0; t < net->n_tensors; t++) {
		struct mp_tensor *x = &c->tensors[t];

		if (x->per_sample) {
			/* exact for batch-first shapes: bytes = batch * per-sample bytes */
			uint64_t per = x->bytes / net->batch, b;

			if (per * net->batch != x->bytes)
				per = (x->bytes + net->batch - 1) / net->batch;
			if (mp_mul_u64(per, batch, &b) < 0 || b > MP_MAX_BYTES) {
				mp_error_set(err, "batch %u makes '%s' larger than 1 PiB", batch, x->name);
				net_free(c);
				return NULL;
			}
			x->bytes = b ? b : 1;
		}
	}
	for (uint32_t o = 0; o < net->n_ops; o++) {
		struct mp_op *op = &c->ops[o];
		double g = compute_bound(op->type) ? compute_factor : memory_factor;
		double f = (op->phase == MP_PHASE_OPT ? 1.0 : r) * g;

		op->ms *= f;
		if (op->batch == net->batch)
			op->batch = batch;
		if (op->n_algos) {
			struct mp_algo *a = mp_arena_alloc(&c->arena, op->n_algos * sizeof(*a));

			memcpy(a, op->algos, op->n_algos * sizeof(*a));
			for (uint32_t k = 0; k < op->n_algos; k++) {
				if (!a[k].batch) {
					a[k].ms *= f;
					a[k].workspace_bytes = (uint64_t)((double)a[k].workspace_bytes * r);
				} else {
					a[k].ms *= g; /* measured at its own micro-batch */
					if (a[k].batch >= batch)
						a[k].batch = UINT32_MAX; /* no longer a micro-batch of this batch */
				}
			}
			op->algos = a;
		}
	}
	return c;
}
