/*
 * SuperNeurons (PPoPP'18) as a planner: liveness, then the unified tensor
 * pool offloading checkpoint outputs with prefetch one checkpoint ahead
 * (3.3.1) but only while memory is short, evicting least recently used first
 * (the tensor cache of Alg. 2, 3.3.2), then cost-aware recomputation (3.4),
 * then memory-centric recomputation everywhere.  Dynamic conv workspace (3.5)
 * is applied by plan_run.  Each round is one build: O(rounds * n).
 */
#include "planners.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int by_lru(const void *a, const void *b)
{
	const struct pl_cand *x = a, *y = b;

	if (x->last_use != y->last_use)
		return x->last_use < y->last_use ? -1 : 1;
	return x->t - y->t;
}

/* The unified tensor pool offloads checkpoint outputs (3.3.1); the tensor
 * cache's LRU.out (Alg. 2) evicts any unlocked tensor. */
static bool checkpoint_output(const struct pl_state *S, const struct pl_cand *c)
{
	const struct mp_net *net = S->net;
	const struct mp_tensor *x = &net->tensors[c->t];

	return !c->cross && x->producer >= 0 && net->ops[x->producer].phase == MP_PHASE_FWD &&
	       policy_is_checkpoint(net, &S->req->popts, x->producer);
}

static bool any_tensor(const struct pl_state *S, const struct pl_cand *c)
{
	(void)S;
	(void)c;
	return true;
}

/* Offload tensors at the peak, least recently used first, until the budget
 * holds or none is left. */
static int utp_rounds(struct pl_state *S, struct mp_plan *p, bool any, struct mp_error *err)
{
	return pl_swap_rounds(S, p, any ? any_tensor : checkpoint_output, by_lru, err);
}

int plan_superneurons(struct pl_state *S, struct mp_plan *p, struct mp_error *err)
{
	const struct mp_net *net = S->net;
	uint8_t *dropped, *keep;

	S->prefetch = PL_PREFETCH_CKPT_AHEAD;
	if (pl_build(S, err) < 0 || utp_rounds(S, p, false, err) < 0)
		return -1;
	if (S->sim.peak_bytes <= S->req->budget_bytes) {
		snprintf(p->note, sizeof(p->note), "liveness%s", S->sim.n_swap_out ? " + checkpoint offload" : "");
		return 0;
	}
	/* cost-aware recomputation of the non-checkpoint layers */
	dropped = mp_xcalloc(net->n_tensors + 1, 1);
	keep = mp_xcalloc(net->n_tensors + 1, 1);
	policy_recompute_set(net, S->r, &S->req->popts, dropped, keep);
	for (uint32_t t = 0; t < net->n_tensors; t++)
		if (dropped[t] && !pl_swapped(S, (int32_t)t)) {
			S->drop[t] = 1;
			S->keep[t] = keep[t];
		}
	free(dropped);
	free(keep);
	p->iterations++;
	if (pl_build(S, err) < 0 || utp_rounds(S, p, false, err) < 0)
		return -1;
	if (S->sim.peak_bytes <= S->req->budget_bytes) {
		snprintf(p->note, sizeof(p->note), "checkpoint offload + cost-aware recomputation");
		return 0;
	}
	/* the tensor cache under pressure: evict any unlocked tensor, LRU */
	if (utp_rounds(S, p, true, err) < 0)
		return -1;
	if (S->sim.peak_bytes <= S->req->budget_bytes) {
		snprintf(p->note, sizeof(p->note), "checkpoint offload + cost-aware recomputation + LRU tensor cache");
		return 0;
	}
	/* memory-centric everywhere: rebuild for each reader, drop again */
	memset(S->keep, 0, net->n_tensors);
	p->iterations++;
	if (pl_build(S, err) < 0 || utp_rounds(S, p, true, err) < 0)
		return -1;
	snprintf(p->note, sizeof(p->note), "checkpoint offload + memory-centric recomputation + LRU tensor cache");
	return 0;
}
