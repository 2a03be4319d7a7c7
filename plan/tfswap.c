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

/* Activations, inputs and gradients: what the paper swaps (no parameters). */
static bool activation_like(const struct pl_state *S, const struct pl_cand *c)
{
	enum mp_tensor_kind kind = S->net->tensors[c->t].kind;

	return !c->cross && (kind == MP_TK_ACTIVATION || kind == MP_TK_INPUT || kind == MP_TK_GRADIENT);
}

int plan_tfswap(struct pl_state *S, struct mp_plan *p, struct mp_error *err)
{
	S->prefetch = PL_PREFETCH_JIT;
	if (pl_build(S, err) < 0)
		return -1;
	if (pl_swap_rounds(S, p, activation_like, by_gap_desc, err) < 0)
		return -1;
	snprintf(p->note, sizeof(p->note), "%u tensors swapped, swap-ins triggered just in time",
		 S->sim.n_swap_out);
	return 0;
}
