/*
 * The checkpointing people do by hand, as planners, so that a plan is always
 * shown beside what it saves over them:
 *   chen               sqrt(n) checkpoints (Chen et al. 2016, "Training Deep
 *                      Nets with Sublinear Memory Cost", 3.2): the forward
 *                      graph's cuts every sqrt(n) forward ops are kept, every
 *                      other activation is dropped and rebuilt once, segment
 *                      by segment, in backward
 *   checkpoint-blocks  torch.utils.checkpoint around every block: the cuts
 *                      that end a block (written by an add, a concat or a
 *                      pool: residual blocks, dense blocks, VGG stages,
 *                      transformer sub-layers; every cut where a net has fewer
 *                      than two such) are kept, the rest is dropped
 * Both leave a net that fits at liveness alone, as a person would.  O(n) plus
 * two builds.
 */
#include "planners.h"

#include <math.h>
#include <stdlib.h>

/* The forward graph's cuts (route_bounds with k = 1), each once, in route
 * order.  Returns the count; *cuts malloc'd. */
static uint32_t forward_cuts(const struct pl_state *S, int32_t **cuts)
{
	uint32_t nf = S->r->n_fwd, n = 0, nb;
	uint32_t *at = mp_xmalloc((nf + 1) * sizeof(*at));
	int32_t *in = mp_xmalloc((2 * nf + 2) * sizeof(*in));

	nb = route_bounds(S->net, S->r, 1, at, in);
	*cuts = mp_xmalloc((nb + 1) * sizeof(**cuts));
	/* each once, at the last boundary it alone crosses */
	for (uint32_t i = 0; i < nb; i++)
		if (i + 1 == nb || in[2 * (i + 1)] != in[2 * i])
			(*cuts)[n++] = in[2 * i];
	free(at);
	free(in);
	return n;
}

/* Keep the tensors marked in ckpt, drop every other droppable one, each
 * rebuilt once and kept to its last use. */
static void drop_all_but(struct pl_state *S, const uint8_t *ckpt)
{
	for (uint32_t t = 0; t < S->nt; t++)
		if (S->droppable[t] && !ckpt[t]) {
			S->drop[t] = 1;
			S->keep[t] = 1;
		}
}

/* Build liveness; when it does not fit, checkpoint at the chosen cuts
 * (choose() marks them in ckpt and returns how many) and build again. */
static int checkpoint_plan(struct pl_state *S, struct mp_plan *p, const char *what,
			   uint32_t (*choose)(const struct pl_state *S, const int32_t *cuts, uint32_t n, uint8_t *ckpt),
			   struct mp_error *err)
{
	int32_t *cuts;
	uint8_t *ckpt;
	uint32_t n, m;
	int rc;

	if ((rc = pl_fits_as_is(S, p, err)) != 0)
		return rc < 0 ? -1 : 0;
	n = forward_cuts(S, &cuts);
	ckpt = mp_xcalloc(S->nt + 1, 1);
	m = choose(S, cuts, n, ckpt);
	drop_all_but(S, ckpt);
	free(cuts);
	free(ckpt);
	p->iterations++;
	if (pl_build(S, err) < 0)
		return -1;
	snprintf(p->note, sizeof(p->note), "%s: %u checkpoints kept, every other activation rebuilt once", what, m);
	return 0;
}

/* Every ceil(sqrt(n))-th forward op, at the first cut at or after it. */
static uint32_t choose_sqrt(const struct pl_state *S, const int32_t *cuts, uint32_t n, uint8_t *ckpt)
{
	uint32_t nf = S->r->n_fwd, seg = (uint32_t)ceil(sqrt((double)nf)), last = 0, m = 0;

	for (uint32_t k = 0; k < n; k++) {
		uint32_t at = S->r->pos[S->net->tensors[cuts[k]].producer];

		if (at >= last + seg) {
			ckpt[cuts[k]] = 1;
			last = at;
			m++;
		}
	}
	return m;
}

static bool ends_block(const struct pl_state *S, int32_t t)
{
	for (uint32_t j = S->fw_start[t]; j < S->fw_start[t + 1]; j++) {
		enum mp_layer_type ty = S->net->ops[S->fw_list[j]].type;

		if (ty == MP_L_ADD || ty == MP_L_CONCAT || ty == MP_L_POOL)
			return true;
	}
	return false;
}

static uint32_t choose_blocks(const struct pl_state *S, const int32_t *cuts, uint32_t n, uint8_t *ckpt)
{
	uint32_t m = 0;

	for (uint32_t k = 0; k < n; k++)
		m += ends_block(S, cuts[k]);
	for (uint32_t k = 0; k < n; k++)
		ckpt[cuts[k]] = m < 2 || ends_block(S, cuts[k]);
	return m < 2 ? n : m;
}

int plan_chen(struct pl_state *S, struct mp_plan *p, struct mp_error *err)
{
	return checkpoint_plan(S, p, "sqrt(n) checkpoints", choose_sqrt, err);
}

int plan_blocks(struct pl_state *S, struct mp_plan *p, struct mp_error *err)
{
	return checkpoint_plan(S, p, "a checkpoint per block", choose_blocks, err);
}
