/*
 * policy: the four fixed strategies of `memplan analyze`, each a function
 * (Net, route, options) -> Schedule, all predicted by the one simulator:
 *   baseline   every tensor its own memory for the whole iteration
 *   liveness   allocate at the first write, free after the last read
 *   offload    liveness + checkpoint outputs swapped out after their last
 *              forward use, prefetched one checkpoint ahead (SuperNeurons 3.3.1)
 *   recompute  offload + cost-aware recomputation of the other layers
 *              (SuperNeurons 3.4)
 * Also the layer-wise minimum l_peak.  Owns nothing beyond its outputs.
 */
#ifndef MP_POLICY_H
#define MP_POLICY_H

#include <stdbool.h>
#include <stdint.h>

#include "net/net.h"
#include "route.h"
#include "sched.h"

enum mp_strategy {
	MP_STRAT_BASELINE, MP_STRAT_LIVENESS, MP_STRAT_OFFLOAD, MP_STRAT_RECOMPUTE,
	MP_STRAT__COUNT
};
const char *mp_strategy_name(enum mp_strategy s);
int mp_strategy_parse(const char *s); /* -1 */

struct mp_policy_opts {
	uint32_t checkpoints; /* bit (1u << mp_layer_type): layers whose outputs are
			       * offloaded and never recomputed; default conv */
	bool loose_rebuild;   /* recompute: rebuild from any input the backward
			       * keeps, even an offloaded one needed a checkpoint
			       * later (its prefetch then comes earlier); default
			       * false: only from inputs needed between the same
			       * two checkpoints */
};
void policy_opts_default(struct mp_policy_opts *o);

/* What recomputation did, for reports. */
struct mp_recompute_info {
	uint32_t segments_speed, segments_memory;
	uint32_t extra_ops;   /* recompute actions */
	uint32_t rule_blocked; /* inputs the strict rebuild rule refused (0: the
				* loose rule would drop the same tensors) */
};

/*
 * Build the schedule of one strategy into *out (initialised by the caller).
 * info may be NULL.  Never fails on a routed net.
 */
void policy_build(const struct mp_net *net, const struct mp_route *r,
		  enum mp_strategy s, const struct mp_policy_opts *o,
		  struct mp_schedule *out, struct mp_recompute_info *info);

/* Is op of a checkpoint layer type? */
int policy_is_checkpoint(const struct mp_net *net, const struct mp_policy_opts *o, int32_t op);

/* SuperNeurons' recompute choice for the recompute strategy: dropped[t] for
 * tensors rebuilt in backward, keep[t] for those kept once rebuilt
 * (speed-centric segments).  Both [n_tensors], caller-allocated. */
void policy_recompute_set(const struct mp_net *net, const struct mp_route *r,
			  const struct mp_policy_opts *o, uint8_t *dropped, uint8_t *keep);

/* The route with recompute entries: before each backward op, the forward
 * writers of the dropped tensors it reads that are not resident are re-run,
 * rebuilding dropped inputs of those writers first (chains); keep[t] keeps a
 * rebuilt tensor, whether rebuilt for its own reader or on the way to
 * another, to its last use, else it is dropped again after the backward op
 * it was rebuilt for.  keep_from (NULL: all zero) delays the keeping: a
 * rebuild for a backward op at a route step before keep_from[t] is dropped
 * again after it, the first at or after it is kept.  Returns the count;
 * *entries malloc'd.  Past max_entries entries (0: no limit) it stops:
 * UINT32_MAX, *entries NULL. */
uint32_t policy_recompute_seq(const struct mp_net *net, const struct mp_route *r,
			      const uint8_t *dropped, const uint8_t *keep, const uint32_t *keep_from,
			      uint32_t max_entries, struct mp_entry **entries);

/* Checkpoint swaps on a sequence whose backward starts at entry bwd (the
 * offload strategy's rule).  Returns the count; *swaps malloc'd. */
uint32_t policy_checkpoint_swaps(const struct mp_net *net, const struct mp_policy_opts *o,
				 const struct mp_entry *e, uint32_t n_e, uint32_t bwd,
				 struct mp_swap **swaps);

/* The forward writers of each tensor, in route order (CSR): tensor t's are
 * list[start[t] .. start[t + 1]).  Both arrays malloc'd, the caller's. */
struct mp_writers {
	uint32_t *start; /* [n_tensors + 1] */
	uint32_t *list;  /* [forward writes] op ids */
};
void policy_writers_build(const struct mp_net *net, const struct mp_route *r, struct mp_writers *w);

/* The layer-wise minimum l_peak: the most memory any single op needs to run
 * alone (the distinct tensors it reads and writes, plus the smallest workspace
 * among its implementations).  No schedule at layer granularity goes below. */
struct mp_layer_min {
	uint64_t bytes;
	uint32_t step;  /* route step */
	int32_t op;
};
void policy_layer_min(const struct mp_net *net, const struct mp_route *r,
		      struct mp_layer_min *out);
/* Memory op needs alone, as above. */
uint64_t policy_op_bytes(const struct mp_net *net, int32_t op);

#endif
