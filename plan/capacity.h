/*
 * capacity: the largest batch (or ResNet depth, or sequence length) each
 * strategy and planner can train on a GPU (SuperNeurons Tables 4 and 5),
 * exact under the simulator: the answer N fits and N + 1 does not.  Owns
 * struct cap_query/cap_result.
 */
#ifndef MP_CAPACITY_H
#define MP_CAPACITY_H

#include <stdbool.h>
#include <stdint.h>

#include "plan.h"
#include "../analysis/zoo/zoo.h"

/* Reserved for the CUDA context, cuDNN and cuBLAS handles when none is given. */
#define CAP_DEFAULT_RESERVE (UINT64_C(512) << 20)

/* What is varied.  TOKENS searches the sequence length as SEQ does, at the
 * query's batch: a step of T tokens is batch sequences padded to
 * ceil(T / batch), so the most tokens that fit are batch * the longest seq
 * that fits, and one token more needs seq + 1. */
/* COPIES: copies of the net file as jobs sharing the GPU, merged at their
 * worst offsets (analysis/jobs.h), up to CAP_MAX_COPIES. */
enum cap_vary { CAP_VARY_BATCH, CAP_VARY_DEPTH, CAP_VARY_SEQ, CAP_VARY_TOKENS, CAP_VARY_COPIES };

/* What is measured: the four fixed strategies, then the planners. */
#define CAP_N_ROWS (MP_STRAT__COUNT + MP_PLANNER__COUNT)
/* The largest sizes searched: a batch, and ResNet's n3 for --vary depth
 * (depth 3 * (6 + 32 + n3 + 6) + 2 = 3134).  A planner that waits for its
 * swap-outs fits any depth at batch 16 (the layer-wise minimum does not
 * grow with depth), so without a bound its search would plan nets of 10^5
 * blocks. */
#define CAP_MAX_BATCH (1u << 20)
#define CAP_MAX_N3 1000u
/* The most copies searched: planning 32 merged copies of ResNet-50 (14720
 * ops) takes each planner seconds, and the search plans several sizes. */
#define CAP_MAX_COPIES 32u
/* The longest sequence searched, when the model builds one that long. */
#define CAP_MAX_SEQ (1u << 20)
const char *cap_row_name(unsigned row);

struct cap_query {
	enum cap_vary vary;
	/* a net file, varied by batch: scaled copies (net_scaled) */
	const struct mp_net *base;
	double compute_factor, memory_factor; /* GPU change (1: none) */
	/* or a generated model (zoo), varied by batch, depth or seq (its
	 * zopts.batch resolved, cap_seq_resolve) */
	const char *model;
	struct zoo_opts zopts;
	/* the GPU */
	struct mp_device device;           /* link for copies; memory_bytes ignored */
	uint64_t usable_bytes;             /* memory less the reserve */
	struct mp_policy_opts popts;
	enum mp_ws_mode ws_mode;
	double max_overhead;               /* < 0: no bound; else e.g. 0.10 */
	uint32_t rows;                     /* bit per row to compute */
	uint32_t limit;                    /* largest size tried (batch, n3 or seq) */
};

struct cap_result {
	uint32_t max;                      /* 0: not even the smallest size fits */
	double time_ms;                    /* at max */
	double throughput;                 /* samples (TOKENS: tokens) per second at max */
	uint32_t evals;                    /* sizes simulated or planned */
};

/* What one step at size n carries, the numerator of res->throughput:
 * samples (the batch n, or the query's batch; COPIES' n times the net's
 * batch), or TOKENS' batch * n. */
double cap_per_step(const struct cap_query *q, uint32_t n);

/* The depth of the n-th ResNet of SuperNeurons' family (n3 = n):
 * 3 * (6 + 32 + n + 6) + 2. */
uint32_t cap_resnet_depth(uint32_t n);

/*
 * For a query varying the seq (or tokens) of q->model: the model's own batch
 * into q->zopts.batch when it is 0, and into q->limit the longest sequence
 * the model builds, up to CAP_MAX_SEQ.  0, or -1 with *err (the model takes
 * no seq, or its options do not build).
 */
int cap_seq_resolve(struct cap_query *q, struct mp_error *err);

/*
 * Fill res[row] for every row in q->rows.  0, or -1 with *err (a net that
 * cannot be built, an internal error).
 */
int cap_run(const struct cap_query *q, struct cap_result res[CAP_N_ROWS], struct mp_error *err);

/* Built nets and their routes by size, so that the rows of one query, and a
 * chart's points, build each size once.  Keyed by the query's address: give
 * one cache one query (or release it between queries).  Zero it to start;
 * cap_cache_release frees what it holds. */
#define CAP_CACHE_SLOTS 16
struct cap_cache {
	struct cap_cache_slot {
		const struct cap_query *q;
		uint32_t n;
		struct mp_net *net;
		struct mp_route r;
		uint64_t used;
	} slot[CAP_CACHE_SLOTS];
	uint64_t clock;
};
void cap_cache_release(struct cap_cache *c);

/* Time per iteration of row at size n (for charts), building through the
 * caller's cache c: 0 and *ms, *fits. */
int cap_eval(struct cap_cache *c, const struct cap_query *q, unsigned row, uint32_t n, bool *fits,
	     double *ms, struct mp_error *err);

#endif
