/*
 * dqn: the learned planner's networks (Chen, "GPU memory management for
 * neural networks using deep Q-network", 4.4-4.10).  Owns the model (every
 * weight of the structure2vec embedding, Eq. 1-2, and the Q head, Eq. 3),
 * its forward and backward passes on a graph, its file format, and the
 * seeded random numbers that make training reproducible.  The planner that
 * trains and uses it is plan_dqn (planners.h).
 */
#ifndef MP_PLAN_DQN_H
#define MP_PLAN_DQN_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "../analysis/base/util.h"

#define DQN_P 8  /* embedding width p */
#define DQN_T 3  /* rounds of Eq. 1 (the paper's T; Dai et al. use 4) */
#define DQN_F 6  /* node features (4.4.1) */
#define DQN_A 3  /* actions at a node (4.5) */

enum dqn_action { DQN_NOTHING, DQN_OFFLOAD, DQN_REMOVE };

/* The weights, one flat array; each matrix row-major at its offset. */
enum {
	DQN_W1 = 0,                          /* p x F   node features */
	DQN_W2 = DQN_W1 + DQN_P * DQN_F,     /* p x p   neighbours' states */
	DQN_W3 = DQN_W2 + DQN_P * DQN_P,     /* p x p   edge messages */
	DQN_W4 = DQN_W3 + DQN_P * DQN_P,     /* p x 1   edge weight */
	DQN_W5 = DQN_W4 + DQN_P,             /* p x p   sum over all nodes (Eq. 2) */
	DQN_W6 = DQN_W5 + DQN_P * DQN_P,     /* p x p   node under execution (Eq. 2) */
	DQN_W8 = DQN_W6 + DQN_P * DQN_P,     /* p x p   action node (Eq. 3) */
	DQN_W7 = DQN_W8 + DQN_P * DQN_P,     /* A x 3p  one row per action (Eq. 3) */
	DQN_B7 = DQN_W7 + DQN_A * 3 * DQN_P, /* A       biases */
	DQN_NW = DQN_B7 + DQN_A,
};

struct dqn_model {
	double w[DQN_NW];
	bool loaded;        /* w holds weights (a file's, or a training's) */
	bool trained;       /* plan_dqn trained it (arena retries train no more) */
	/* what the last plan_dqn did with it */
	uint32_t episodes;  /* training episodes run */
	double train_s;     /* seconds spent training */
};

/* splitmix64 (Steele et al. 2014): the planner's only source of randomness. */
static inline uint64_t dqn_rand(uint64_t *s)
{
	uint64_t z = (*s += UINT64_C(0x9e3779b97f4a7c15));

	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

/* A uniform double in [0, 1) from 53 random bits. */
static inline double dqn_uniform(uint64_t *s)
{
	return (double)(dqn_rand(s) >> 11) * (1.0 / 9007199254740992.0);
}

/* Fresh weights, uniform in +-1/sqrt(fan-in), from seed. */
void dqn_model_init(struct dqn_model *m, uint64_t seed);

/*
 * The graph the embedding runs on: n nodes, each with DQN_F features,
 * neighbours as CSR (u != v; Eq. 1's N(v) adds v itself) with the edge
 * weights w(u, v).  The caller owns every array.
 */
struct dqn_graph {
	uint32_t n;
	const uint32_t *adj_start;  /* [n + 1] */
	const uint32_t *adj;        /* [adj_start[n]] */
	const double *adj_w;        /* [adj_start[n]] */
	const double *x;            /* [n * DQN_F] */
};

/* Activations of one forward pass on a graph, kept for the backward pass. */
struct dqn_fwd {
	uint32_t n;
	double *s;          /* [(DQN_T + 1) * n * DQN_P] s^t_v, t = 0..T (s^0 = 0) */
	double *e;          /* [n * DQN_P] W3 sum_u ReLU(W4 w(u, v)), the same each round */
	double sum[DQN_P];  /* sum_v s^T_v */
	uint32_t c;         /* the node under execution */
	double h[3 * DQN_P];/* ReLU([W5 sum, W6 s_c, W8 s_c]) */
	double q[DQN_A];
};

void dqn_fwd_init(struct dqn_fwd *f, uint32_t n);
void dqn_fwd_release(struct dqn_fwd *f);

/* Embed the graph (T rounds of Eq. 1) and take Q of every action at node c
 * (Eq. 2-3) into f->q.  O(T (n + edges) p^2). */
void dqn_forward(const struct dqn_model *m, const struct dqn_graph *g, uint32_t c, struct dqn_fwd *f);

/* After the features of the nodes changed[0..k) changed (same weights):
 * recompute the states that depend on them (T - 1 hops around them) and Q at
 * node c.  O(|neighbourhood| p^2); mark[n] and list[n] are scratch. */
void dqn_update(const struct dqn_model *m, const struct dqn_graph *g, struct dqn_fwd *f,
		const uint32_t *changed, uint32_t k, uint32_t c, uint32_t *mark, uint32_t *list);

/* Backward pass of dqn_forward: add dL/dw to grad[DQN_NW] for a loss whose
 * derivative by Q(c, a) is dq.  f must hold that forward's activations. */
void dqn_backward(const struct dqn_model *m, const struct dqn_graph *g, const struct dqn_fwd *f,
		  int a, double dq, double *grad);

/* Read a model file (memplan-plan(1) --model): 0, or -1 with *err naming the
 * file and the JSON path.  m is left unchanged on error. */
int dqn_model_load(const char *path, struct dqn_model *m, struct mp_error *err);
/* The model as a JSON document (a new reference): weights written to 17
 * digits, so reading them back gives the same doubles. */
json_t *dqn_model_json(const struct dqn_model *m);

#endif
