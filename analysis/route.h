/*
 * route: the execution order of one training iteration.  Forward ops, then
 * backward ops, then optimizer ops; inside each phase SuperNeurons Alg. 1
 * (depth-first, waiting at joins), deterministic.  Backward ops of layers are
 * visited in reverse forward order, as in SuperNeurons Fig. 6.
 */
#ifndef MP_ROUTE_H
#define MP_ROUTE_H

#include <stdint.h>

#include "net/net.h"

struct mp_route {
	uint32_t n;             /* steps: every op once */
	int32_t *op;            /* [n] op id of each step, owned */
	uint32_t *pos;          /* [n_ops] step of each op, owned */
	uint32_t n_fwd, n_bwd, n_opt;
};

/* Build the route.  0, or -1 with *err (a cycle, names an op on it; a read
 * of a tensor that only a later phase writes).  A net with a fixed order
 * (net->order: several jobs merged, analysis/jobs.h) keeps it: n_fwd counts
 * its leading forward steps, n_opt its trailing optimizer steps, n_bwd the
 * steps between, which may hold forward ops of jobs that started later. */
int route_build(const struct mp_net *net, struct mp_route *r, struct mp_error *err);
void route_release(struct mp_route *r);

/*
 * The forward step boundaries that at most k (1 or 2) tensors cross, and
 * those tensors: boundary b lies between forward steps b and b + 1, and what
 * steps after it read of steps before it is those few tensors (persistent
 * ones aside), each written for the last time at or before b.  k = 1 gives
 * the forward graph's cuts (its articulation points: ResNet and transformer
 * blocks).  at[] (caller's, [n_fwd]) gets the boundaries in order, in[2 i],
 * in[2 i + 1] (caller's, [2 n_fwd]) the tensors (-1: none).  Returns the
 * count.  O(ops + uses).
 */
uint32_t route_bounds(const struct mp_net *net, const struct mp_route *r, uint32_t k, uint32_t *at, int32_t *in);

#endif
