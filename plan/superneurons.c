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

/* Offload tensors at the peak, least recently used first, until the budget
 * holds or none is left: checkpoint outputs only (the unified tensor pool of
 * 3.3.1), or any unlocked tensor (the tensor cache's LRU.out of Alg. 2). */
static int utp_rounds(struct pl_state *S, struct mp_plan *p, bool any_tensor, struct mp_error *err)
{
	const struct mp_net *net = S->net;

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
			const struct mp_tensor *x = &net->tensors[c[k].t];

			if (any_tensor || (!c[k].cross && x->producer >= 0 && net->ops[x->producer].phase == MP_PHASE_FWD &&
					   policy_is_checkpoint(net, &S->req->popts, x->producer)))
				c[m++] = c[k];
		}
		qsort(c, m, sizeof(*c), by_lru);
		m = pl_take_until(S, c, m, S->sim.peak_bytes - S->req->budget_bytes);
		free(c);
		if (!m)
			break;
		p->iterations++;
		if (pl_build(S, err) < 0)
			return -1;
	}
	return 0;
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
		if (dropped[t] && S->swap_step[t] == UINT32_MAX) {
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
