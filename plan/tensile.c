/*
 * TENSILE (IV) for a single job: peak analysis by the simulator (Alg. 1);
 * greedy swap of the largest tensors at the peak whose feasible interval
 * (the time between the accesses around the peak) hides both copies (Alg. 2),
 * parameters and optimizer state included, swapped across iterations when
 * their idle time spans the iteration boundary; when no swap is feasible,
 * recomputation of the tensor with the most memory saved per second of
 * recomputation (MSPS, IV-D); iterated until the budget holds (Alg. 3).
 * O(rounds * n).
 */
#include "planners.h"

#include <stdlib.h>

static int by_bytes_desc(const void *a, const void *b)
{
	const struct pl_cand *x = a, *y = b;

	if (x->bytes != y->bytes)
		return x->bytes > y->bytes ? -1 : 1;
	return x->t - y->t;
}

static const struct mp_net *msps_net;

/* Recompute time of t: its forward writers' time. */
static double rebuild_ms(const struct mp_net *net, int32_t t)
{
	const struct mp_tensor *x = &net->tensors[t];

	return net->ops[x->producer].ms;
}

static int by_msps_desc(const void *a, const void *b)
{
	const struct pl_cand *x = a, *y = b;
	double mx = (double)x->bytes / (rebuild_ms(msps_net, x->t) + 1e-6);
	double my = (double)y->bytes / (rebuild_ms(msps_net, y->t) + 1e-6);

	if (mx != my)
		return mx > my ? -1 : 1;
	return x->t - y->t;
}

/* Can t be dropped after forward and rebuilt by re-running its writer?
 * fwd_writers[t] counts forward ops writing t: one means no in-place chain. */
static bool recomputable(const struct pl_state *S, const uint8_t *fwd_writers, int32_t t)
{
	const struct mp_net *net = S->net;
	const struct mp_tensor *x = &net->tensors[t];
	const struct mp_op *w;

	if (x->kind != MP_TK_ACTIVATION || x->producer < 0 || sched_persistent(x))
		return false;
	w = &net->ops[x->producer];
	return w->phase == MP_PHASE_FWD && w->recomputable && fwd_writers[t] == 1;
}

struct tensile_ctx {
	const uint8_t *fwd_writers;
	uint32_t n_swap, n_rc;
};

static uint32_t tensile_round(struct pl_state *S, struct pl_cand *c, uint32_t n, uint64_t excess, void *ctx)
{
	const struct mp_net *net = S->net;
	const struct mp_device *dev = &S->req->device;
	struct tensile_ctx *x = ctx;
	struct pl_cand *f = mp_xmalloc((n + 1) * sizeof(*f));
	uint32_t nf = 0, m;

	/* Alg. 2: feasible swaps, largest first */
	for (uint32_t k = 0; k < n; k++) {
		uint64_t b = net->tensors[c[k].t].bytes;

		if (c[k].gap_ms >= device_copy_ms(dev, b, false) + device_copy_ms(dev, b, true))
			f[nf++] = c[k];
	}
	qsort(f, nf, sizeof(*f), by_bytes_desc);
	m = pl_take_until(S, f, nf, excess);
	x->n_swap += m;
	if (!m) {
		/* MSPS recomputation of what the peak holds */
		nf = 0;
		for (uint32_t k = 0; k < n; k++)
			if (!c[k].cross && recomputable(S, x->fwd_writers, c[k].t))
				f[nf++] = c[k];
		msps_net = net;
		qsort(f, nf, sizeof(*f), by_msps_desc);
		for (uint32_t k = 0; k < nf && m == 0; k++) {
			S->drop[f[k].t] = 1;
			S->keep[f[k].t] = 0;
			m = 1;
		}
		x->n_rc += m;
	}
	if (!m) {
		/* last resort: swaps whose copies cannot hide, largest first */
		qsort(c, n, sizeof(*c), by_bytes_desc);
		m = pl_take_until(S, c, n, excess);
		x->n_swap += m;
	}
	free(f);
	return m;
}

int plan_tensile(struct pl_state *S, struct mp_plan *p, struct mp_error *err)
{
	const struct mp_net *net = S->net;
	uint8_t *fwd_writers = mp_xcalloc(net->n_tensors + 1, 1);
	struct tensile_ctx x = { fwd_writers, 0, 0 };
	int rc;

	for (uint32_t o = 0; o < net->n_ops; o++)
		if (net->ops[o].phase == MP_PHASE_FWD)
			for (uint32_t k = 0; k < net->ops[o].n_out; k++)
				if (fwd_writers[net->ops[o].out[k]] < 2)
					fwd_writers[net->ops[o].out[k]]++;
	S->prefetch = PL_PREFETCH_JIT;
	rc = pl_build(S, err) < 0 ? -1 : pl_rounds(S, p, tensile_round, &x, err);
	free(fwd_writers);
	if (rc < 0)
		return -1;
	snprintf(p->note, sizeof(p->note), "%u swaps, %u recomputed tensors in %u rounds", x.n_swap, x.n_rc,
		 p->iterations);
	return 0;
}
