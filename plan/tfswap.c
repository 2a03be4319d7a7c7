/*
 * Swap planning after "Training Deeper Models by GPU Memory Optimization on
 * TensorFlow" (3.1): candidates are the tensors live at the peak with the
 * longest lifetime gap first (the ones produced earliest in forward and used
 * last in backward: reverse topological order), swapped until the budget
 * holds; each swap-in is triggered from estimated completion times so its copy
 * ends just before the use (3.1.2).  No recomputation.  O(rounds * n).
 */
#include "planners.h"

#include <stdlib.h>

static int by_gap_desc(const void *a, const void *b)
{
	const struct pl_cand *x = a, *y = b;

	if (x->gap_ms != y->gap_ms)
		return x->gap_ms > y->gap_ms ? -1 : 1;
	if (x->bytes != y->bytes)
		return x->bytes > y->bytes ? -1 : 1;
	return x->t - y->t;
}

int plan_tfswap(struct pl_state *S, struct mp_plan *p, struct mp_error *err)
{
	const struct mp_net *net = S->net;

	S->prefetch = PL_PREFETCH_JIT;
	if (pl_build(S, err) < 0)
		return -1;
	while (S->sim.peak_bytes > S->req->budget_bytes && p->iterations < PL_MAX_ROUNDS) {
		struct pl_cand *c;
		uint32_t n, m = 0;

		/* a prefetch landing at the peak is moved after it first */
		if (pl_delay_swapins(S)) {
			p->iterations++;
			if (pl_build(S, err) < 0)
				return -1;
			continue;
		}
		n = pl_peak_candidates(S, &c);

		for (uint32_t k = 0; k < n; k++) {
			enum mp_tensor_kind kind = net->tensors[c[k].t].kind;

			if (!c[k].cross && (kind == MP_TK_ACTIVATION || kind == MP_TK_INPUT || kind == MP_TK_GRADIENT))
				c[m++] = c[k];
		}
		qsort(c, m, sizeof(*c), by_gap_desc);
		m = pl_take_until(S, c, m, S->sim.peak_bytes - S->req->budget_bytes);
		free(c);
		if (!m)
			break;
		p->iterations++;
		if (pl_build(S, err) < 0)
			return -1;
	}
	snprintf(p->note, sizeof(p->note), "%u tensors swapped, swap-ins triggered just in time",
		 S->sim.n_swap_out);
	return 0;
}
