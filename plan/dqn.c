/*
 * dqn: the learned planner (Chen, "GPU memory management for neural networks
 * using deep Q-network", sections 4-5).  Its nodes are the forward
 * activations that could leave the device between their last forward use
 * and their first backward use.  Walked in production order, each node whose
 * gap the projected memory overflows is a decision (4.5): nothing, offload
 * (swapped out after its last forward use, prefetched just in time) or remove
 * (dropped, rebuilt once before its first backward reader and kept).  The
 * projection is the liveness build's memory per step (a segment tree) less
 * what the decisions free: an offload from the end of its copy to its
 * prefetch, a removal up to its rebuild, plus what a rebuild keeps alive (its
 * inputs, removed ones rebuilt on the way).  The state is the structure2vec
 * embedding of the node graph (Eq. 1-2; edges join consecutive nodes and
 * producer-consumer pairs, weighted by the time between them) with the six
 * node features of 4.4.1; Q is Eq. 3 (dqnnet.c).  Rewards (4.7): minus each
 * action's estimated time (a rebuild's compute; an offload's lateness behind
 * the copy engines), plus the drop in the stall of copying the projected
 * excess out and back in (a potential: it pays at once for memory freed where
 * it is short); at the end of the episode one simulation replaces the
 * estimates, so an episode's return is minus the simulated overhead, a peak
 * over the budget paid as that stall.  Training (Alg. 1): epsilon-greedy with
 * epsilon = 1 - k/l at episode k of l, experience replay, minibatches (Adam,
 * a target network frozen for the episode) after each episode rather than
 * after each action, so that an episode keeps one set of weights and its
 * embedding is updated incrementally.  The plan is the greedy policy's, or
 * the best training episode's when that was better; a peak the simulator
 * still finds over the budget is repaired by the rounds every planner shares.
 * Per episode: a rollout of O(n log n + n d^(T-1) p^2) (d: degree), one
 * build, and DQN_UPDATES x DQN_BATCH passes of O(T (n + edges) p^2).
 */
#include "planners.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dqn.h"

#define DQN_EPISODES 40 /* from fresh weights, unless asked */
#define DQN_BATCH 16    /* transitions per minibatch */
#define DQN_UPDATES 16  /* minibatches after each episode */
#define DQN_LR 1e-3     /* Adam's step */
#define DQN_GAMMA 1.0   /* episodes are finite: no discount */
#define DQN_EPS_LOADED 0.2 /* exploration when fine-tuning a loaded model */

struct dq_node {
	int32_t t;
	uint32_t lf, fb;         /* route steps: last forward touch, first backward touch */
	uint32_t trig;           /* step its just-in-time swap-in is issued at */
	bool rem;                /* may be removed (dropped and rebuilt) */
	double rebuild_ms, out_ms, in_ms;
	uint32_t in0, in1;       /* its writers' inputs: E->ins[in0 .. in1) */
};

/* An input a rebuild reads: it stays (or comes back) until the rebuild. */
struct dq_input {
	int32_t t;
	uint32_t node;           /* UINT32_MAX: not a node */
	uint32_t lu;             /* its last touch in the route */
};

struct dq_step {                 /* one decision of an episode */
	uint32_t node;
	uint8_t a, mask;         /* action; valid actions, a bit each */
	double r;
	double need;             /* the node's feature x5 when it was decided */
};

struct dq_episode {
	struct dq_step *st;      /* [n] owned */
	uint32_t n;
};

struct dq_env {
	struct pl_state *S;
	uint32_t n;
	struct dq_node *nodes;   /* [n] in production order */
	struct dq_input *ins;    /* the nodes' writers' inputs */
	uint32_t n_ins, cap_ins;
	uint8_t *decided;        /* [n] its action in this episode */
	uint8_t *depth;          /* [n] removed: the longest chain of removed inputs, itself included */
	uint32_t *rb;            /* [n] removed: the step before which it is rebuilt */
	double *in_load;         /* [steps] ms of prefetch copies placed in each step */
	uint32_t *chg;           /* [n] nodes changed since the last decision */
	uint32_t *adj_start, *adj;
	double *adj_w, *xs, *x;  /* static features with x4 = 0, x5 = 1; the state's */
	struct dqn_graph g;
	uint32_t steps;
	int64_t *mem;            /* [steps] the liveness build's memory per step */
	double *start, *end, *base_start, base_ms;
	int64_t budget;
	uint32_t size;           /* segment tree over steps: max with range add */
	int64_t *mx, *add;
	uint32_t *mark, *list;   /* dqn_update's scratch */
};

/* --- segment tree: memory per step after the episode's decisions --- */

#define ST_NONE (-(INT64_C(1) << 62))

static void st_reset(struct dq_env *E)
{
	for (uint32_t i = 0; i < E->size; i++) {
		E->mx[E->size + i] = i < E->steps ? E->mem[i] : ST_NONE;
		E->add[E->size + i] = 0;
	}
	for (uint32_t i = E->size; i-- > 1;) {
		E->mx[i] = E->mx[2 * i] > E->mx[2 * i + 1] ? E->mx[2 * i] : E->mx[2 * i + 1];
		E->add[i] = 0;
	}
}

static void st_add(struct dq_env *E, uint32_t x, uint32_t lo, uint32_t hi, uint32_t l, uint32_t r, int64_t v)
{
	uint32_t mid = lo + (hi - lo) / 2;

	if (r < lo || hi < l)
		return;
	if (l <= lo && hi <= r) {
		E->mx[x] += v;
		E->add[x] += v;
		return;
	}
	st_add(E, 2 * x, lo, mid, l, r, v);
	st_add(E, 2 * x + 1, mid + 1, hi, l, r, v);
	E->mx[x] = (E->mx[2 * x] > E->mx[2 * x + 1] ? E->mx[2 * x] : E->mx[2 * x + 1]) + E->add[x];
}

static int64_t st_max(const struct dq_env *E, uint32_t x, uint32_t lo, uint32_t hi, uint32_t l, uint32_t r)
{
	uint32_t mid = lo + (hi - lo) / 2;
	int64_t a, b;

	if (r < lo || hi < l)
		return ST_NONE;
	if (l <= lo && hi <= r)
		return E->mx[x];
	a = st_max(E, 2 * x, lo, mid, l, r);
	b = st_max(E, 2 * x + 1, mid + 1, hi, l, r);
	return (a > b ? a : b) + E->add[x];
}

/* --- the environment --- */

/* The last step in [lo, hi] that starts at or before t; none: dflt. */
static uint32_t last_at(const struct dq_env *E, uint32_t lo, uint32_t hi, double t, uint32_t dflt)
{
	if (lo > hi || E->start[lo] > t)
		return dflt;
	while (lo < hi) {
		uint32_t mid = hi - (hi - lo) / 2;

		if (E->start[mid] <= t)
			lo = mid;
		else
			hi = mid - 1;
	}
	return lo;
}

/* The first step that starts at or after t (E->steps: none). */
static uint32_t first_at(const struct dq_env *E, double t)
{
	uint32_t lo = 0, hi = E->steps;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (E->start[mid] < t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Nodes: forward activations with a gap between their forward and backward
 * uses, in the order they are produced. */
static void env_nodes(struct dq_env *E)
{
	struct pl_state *S = E->S;
	const struct mp_net *net = S->net;
	const struct mp_route *r = S->r;
	const struct mp_device *dev = &S->req->device;
	uint32_t *lf = mp_xmalloc((S->nt + 1) * sizeof(*lf)), *fb = mp_xmalloc((S->nt + 1) * sizeof(*fb));
	uint32_t *lu = mp_xmalloc((S->nt + 1) * sizeof(*lu)), *node_of = mp_xmalloc((S->nt + 1) * sizeof(*node_of));

	for (uint32_t t = 0; t < S->nt; t++)
		lf[t] = fb[t] = lu[t] = node_of[t] = UINT32_MAX;
	for (uint32_t i = 0; i < r->n; i++) {
		const struct mp_op *op = &net->ops[r->op[i]];

		for (uint32_t k = 0; k < op->n_in + op->n_out; k++) {
			int32_t t = k < op->n_in ? op->in[k] : op->out[k - op->n_in];

			lu[t] = i;
			if (op->phase == MP_PHASE_FWD)
				lf[t] = i;
			else if (fb[t] == UINT32_MAX)
				fb[t] = i;
		}
	}
	E->nodes = mp_xmalloc((S->nt + 1) * sizeof(*E->nodes));
	for (uint32_t i = 0; i < r->n; i++) {
		const struct mp_op *op = &net->ops[r->op[i]];

		if (op->phase != MP_PHASE_FWD)
			continue;
		for (uint32_t k = 0; k < op->n_out; k++) {
			int32_t t = op->out[k];
			const struct mp_tensor *x = &net->tensors[t];

			if (x->producer != r->op[i] || x->kind != MP_TK_ACTIVATION || sched_persistent(x) || !x->bytes ||
			    fb[t] == UINT32_MAX || lf[t] == UINT32_MAX || fb[t] <= lf[t] + 1)
				continue;
			struct dq_node *d = &E->nodes[E->n];

			*d = (struct dq_node){
				t, lf[t], fb[t], fb[t], S->droppable[t], pl_rebuild_ms(S, t),
				device_copy_ms(dev, x->bytes, false), device_copy_ms(dev, x->bytes, true), E->n_ins, E->n_ins,
			};
			/* the just-in-time trigger (engine.c): the latest step
			 * from which the copy, with a 10% margin, ends in time */
			d->trig = last_at(E, d->lf + 2, d->fb, E->start[d->fb] - 1.1 * d->in_ms, d->lf + 1);
			for (uint32_t j = S->fw_start[t]; j < S->fw_start[t + 1]; j++) {
				const struct mp_op *w = &net->ops[S->fw_list[j]];

				for (uint32_t q = 0; q < w->n_in; q++) {
					int32_t y = w->in[q];

					if (y == t || sched_persistent(&net->tensors[y]))
						continue;
					mp_grow((void **)&E->ins, &E->cap_ins, E->n_ins + 1, sizeof(*E->ins));
					E->ins[E->n_ins++] = (struct dq_input){ y, node_of[y], lu[y] };
				}
			}
			d->in1 = E->n_ins;
			node_of[t] = E->n++;
		}
	}
	free(lf);
	free(fb);
	free(lu);
	free(node_of);
}

static int by_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* Edges (4.2): consecutive nodes, and a node with the nodes its producer
 * reads; w(u, v) the time between their producers, over the largest. */
static void env_graph(struct dq_env *E)
{
	const struct mp_net *net = E->S->net;
	const struct mp_route *r = E->S->r;
	uint32_t n = E->n, ne = 0, cap = 2 * n + 2, *eu, *ev, *node_of = mp_xmalloc((E->S->nt + 1) * sizeof(*node_of));
	double wmax = 0;

	for (uint32_t t = 0; t < E->S->nt; t++)
		node_of[t] = UINT32_MAX;
	for (uint32_t v = 0; v < n; v++)
		node_of[E->nodes[v].t] = v;
	eu = mp_xmalloc(cap * sizeof(*eu));
	ev = mp_xmalloc(cap * sizeof(*ev));
	for (uint32_t v = 0; v < n; v++) {
		const struct mp_op *op = &net->ops[net->tensors[E->nodes[v].t].producer];

		if (v + 1 < n) {
			eu[ne] = v;
			ev[ne++] = v + 1;
		}
		for (uint32_t k = 0; k < op->n_in; k++) {
			uint32_t u = node_of[op->in[k]];

			if (u == UINT32_MAX || u == v || u + 1 == v)
				continue;
			if (ne == cap) {
				cap *= 2;
				eu = mp_xrealloc(eu, cap * sizeof(*eu));
				ev = mp_xrealloc(ev, cap * sizeof(*ev));
			}
			eu[ne] = u;
			ev[ne++] = v;
		}
	}
	/* symmetric CSR, each list sorted; a pair named twice is kept twice
	 * (harmless: Eq. 1's sums count it twice) */
	E->adj_start = mp_xcalloc(n + 2, sizeof(*E->adj_start));
	for (uint32_t k = 0; k < ne; k++) {
		E->adj_start[eu[k] + 1]++;
		E->adj_start[ev[k] + 1]++;
	}
	for (uint32_t v = 0; v < n; v++)
		E->adj_start[v + 1] += E->adj_start[v];
	E->adj = mp_xmalloc((2 * ne + 1) * sizeof(*E->adj));
	E->adj_w = mp_xmalloc((2 * ne + 1) * sizeof(*E->adj_w));
	{
		uint32_t *fill = mp_xcalloc(n + 1, sizeof(*fill));

		for (uint32_t k = 0; k < ne; k++) {
			E->adj[E->adj_start[eu[k]] + fill[eu[k]]++] = ev[k];
			E->adj[E->adj_start[ev[k]] + fill[ev[k]]++] = eu[k];
		}
		free(fill);
	}
	for (uint32_t v = 0; v < n; v++) {
		uint32_t s = E->adj_start[v], e = E->adj_start[v + 1];

		qsort(E->adj + s, e - s, sizeof(*E->adj), by_u32);
		for (uint32_t k = s; k < e; k++) {
			double a = E->start[r->pos[net->tensors[E->nodes[v].t].producer]];
			double b = E->start[r->pos[net->tensors[E->nodes[E->adj[k]].t].producer]];

			E->adj_w[k] = fabs(a - b);
			wmax = E->adj_w[k] > wmax ? E->adj_w[k] : wmax;
		}
	}
	for (uint32_t k = 0; wmax > 0 && k < E->adj_start[n]; k++)
		E->adj_w[k] /= wmax;
	free(eu);
	free(ev);
	free(node_of);
}

/* Node features (4.4.1), each over its largest value: size, the swap's
 * copies, the rebuild, how soon it is revisited; the action taken there
 * (1 offload, -1 remove, 0 none) and whether it may still act: 0 for the
 * nodes passed, 1 for those ahead, and for the node under execution the
 * share of its bytes the projection still needs freed in its gap (graded,
 * so that Q sees how short memory is where it acts). */
static void env_features(struct dq_env *E)
{
	double mx[4] = { 0 };

	E->xs = mp_xcalloc((size_t)E->n * DQN_F + 1, sizeof(*E->xs));
	E->x = mp_xcalloc((size_t)E->n * DQN_F + 1, sizeof(*E->x));
	for (uint32_t v = 0; v < E->n; v++) {
		const struct dq_node *d = &E->nodes[v];
		double *x = E->xs + (size_t)v * DQN_F;

		x[0] = (double)E->S->net->tensors[d->t].bytes;
		x[1] = d->out_ms + d->in_ms;
		x[2] = d->rem ? d->rebuild_ms : 0;
		x[3] = E->start[d->fb] - E->end[d->lf];
		x[4] = 0;
		x[5] = 1;
		for (int k = 0; k < 4; k++)
			mx[k] = x[k] > mx[k] ? x[k] : mx[k];
	}
	for (uint32_t v = 0; v < E->n; v++)
		for (int k = 0; k < 4; k++)
			E->xs[(size_t)v * DQN_F + k] /= mx[k] > 0 ? mx[k] : 1;
}

/* From S built as it is (liveness, just-in-time prefetch). */
static void env_init(struct dq_env *E, struct pl_state *S)
{
	const struct mp_net *net = S->net;
	uint32_t n = S->r->n;

	memset(E, 0, sizeof(*E));
	E->S = S;
	E->steps = n;
	E->budget = (int64_t)S->req->budget_bytes;
	E->base_ms = S->sim.time_ms > 0 ? S->sim.time_ms : 1;
	E->mem = mp_xmalloc((n + 1) * sizeof(*E->mem));
	E->start = mp_xmalloc((n + 1) * sizeof(*E->start));
	E->end = mp_xmalloc((n + 1) * sizeof(*E->end));
	E->base_start = mp_xmalloc((n + 1) * sizeof(*E->base_start));
	memcpy(E->base_start, S->step_start, n * sizeof(*E->base_start));
	for (uint32_t i = 0; i < n; i++) {
		int32_t o = S->sim.steps[i].op;

		E->mem[i] = (int64_t)S->sim.steps[i].bytes;
		E->start[i] = S->step_start[i];
		E->end[i] = E->start[i] + sched_op_ms(net, o, S->algo[o]);
	}
	for (E->size = 1; E->size < n; E->size <<= 1)
		;
	E->mx = mp_xmalloc(2 * E->size * sizeof(*E->mx));
	E->add = mp_xmalloc(2 * E->size * sizeof(*E->add));
	env_nodes(E);
	env_graph(E);
	env_features(E);
	E->g = (struct dqn_graph){ E->n, E->adj_start, E->adj, E->adj_w, E->x };
	E->decided = mp_xcalloc(E->n + 1, 1);
	E->depth = mp_xcalloc(E->n + 1, 1);
	E->rb = mp_xcalloc(E->n + 1, sizeof(*E->rb));
	E->in_load = mp_xcalloc(n + 1, sizeof(*E->in_load));
	E->chg = mp_xmalloc((E->n + 1) * sizeof(*E->chg));
	E->mark = mp_xmalloc((E->n + 1) * sizeof(*E->mark));
	E->list = mp_xmalloc((E->n + 1) * sizeof(*E->list));
}

static void env_release(struct dq_env *E)
{
	free(E->nodes);
	free(E->ins);
	free(E->decided);
	free(E->depth);
	free(E->rb);
	free(E->in_load);
	free(E->chg);
	free(E->adj_start);
	free(E->adj);
	free(E->adj_w);
	free(E->xs);
	free(E->x);
	free(E->mem);
	free(E->start);
	free(E->end);
	free(E->base_start);
	free(E->mx);
	free(E->add);
	free(E->mark);
	free(E->list);
}

static double action_sign(int a)
{
	return a == DQN_OFFLOAD ? 1 : a == DQN_REMOVE ? -1 : 0;
}

/* The features of an episode's k-th state (k == ep->n: after its last). */
static void state_x(struct dq_env *E, const struct dq_episode *ep, uint32_t k)
{
	uint32_t c = k < ep->n ? ep->st[k].node : E->n;

	memcpy(E->x, E->xs, (size_t)E->n * DQN_F * sizeof(*E->x));
	for (uint32_t u = 0; u < c; u++)
		E->x[(size_t)u * DQN_F + 5] = 0;
	for (uint32_t j = 0; j < k; j++)
		E->x[(size_t)ep->st[j].node * DQN_F + 4] = action_sign(ep->st[j].a);
	if (k < ep->n)
		E->x[(size_t)c * DQN_F + 5] = ep->st[k].need;
}

/* The best valid action by f->q. */
static int argmax(const struct dqn_fwd *f, unsigned mask)
{
	int best = 0;

	for (int a = 1; a < DQN_A; a++)
		if ((mask >> a & 1) && f->q[a] > f->q[best])
			best = a;
	return best;
}

/* What an action at node v would change in the projection: the steps
 * [*lo, *hi] freed of its bytes, and its estimated milliseconds.  An offload
 * frees from the end of its copy (the engine's queue, *out_free) to its
 * prefetch; a removal from after its last forward use to its rebuild, and
 * keeps the rebuild's inputs (tensors, not the nodes) until then. */
static double action_effect(const struct dq_env *E, uint32_t v, int a, double out_free, uint32_t *lo, uint32_t *hi,
			    double *o_end)
{
	const struct dq_node *d = &E->nodes[v];
	double o;

	*lo = d->lf + 1;
	*hi = d->fb - 1;
	if (a == DQN_REMOVE)
		return d->rebuild_ms;
	o = (out_free > E->end[d->lf] ? out_free : E->end[d->lf]) + d->out_ms;
	*o_end = o;
	{
		uint32_t j0 = first_at(E, o);

		*lo = j0 > *lo ? j0 : *lo;
		*hi = d->trig - 1;
	}
	/* the prefetch cannot start before the copy out ends, and waits for
	 * the prefetches already placed in its window */
	{
		double busy = 0, late;

		for (uint32_t j = d->trig; j < d->fb; j++)
			busy += E->in_load[j];
		late = (o > E->start[d->trig] ? o : E->start[d->trig]) + busy + d->in_ms - E->start[d->fb];
		return late > 0 ? late : 0;
	}
}

/* Place an offload's prefetch on the copy engine: spread over its window. */
static void place_prefetch(struct dq_env *E, const struct dq_node *d)
{
	double w = E->start[d->fb] - E->start[d->trig];

	if (!(w > 0)) {
		E->in_load[d->trig < d->fb ? d->trig : d->fb - 1] += d->in_ms;
		return;
	}
	for (uint32_t j = d->trig; j < d->fb; j++)
		E->in_load[j] += d->in_ms * (E->start[j + 1] - E->start[j]) / w;
}

/* Is there a step over the budget in [lo, hi]? */
static bool over(const struct dq_env *E, uint32_t lo, uint32_t hi)
{
	return lo <= hi && st_max(E, 1, 0, E->size - 1, lo, hi) > E->budget;
}

/* Removed inputs rebuilt on the way: a chain at most this long. */
#define DQN_MAX_CHAIN 4

/* The actions valid at node v: nothing, and those that free memory at a
 * step over the budget; a removal only when no input of its rebuild was
 * offloaded (it would come back early) and its chain of removed inputs is
 * at most DQN_MAX_CHAIN long. */
static unsigned valid_actions(const struct dq_env *E, uint32_t v, double out_free)
{
	const struct dq_node *d = &E->nodes[v];
	unsigned mask = 1u << DQN_NOTHING;
	uint32_t lo, hi;
	double o;

	action_effect(E, v, DQN_OFFLOAD, out_free, &lo, &hi, &o);
	if (over(E, lo, hi))
		mask |= 1u << DQN_OFFLOAD;
	if (d->rem && over(E, d->lf + 1, d->fb - 1)) {
		bool ok = true;

		for (uint32_t k = d->in0; k < d->in1 && ok; k++) {
			uint32_t u = E->ins[k].node;

			ok = u == UINT32_MAX || E->decided[u] == DQN_NOTHING ||
			     (E->decided[u] == DQN_REMOVE && E->depth[u] < DQN_MAX_CHAIN);
		}
		if (ok)
			mask |= 1u << DQN_REMOVE;
	}
	return mask;
}

/* A removed node u rebuilt on the way to a rebuild before step at: it comes
 * back from there (keep: to its last use), and so do its removed inputs. */
static void pull(struct dq_env *E, uint32_t u, uint32_t at)
{
	const struct dq_node *d = &E->nodes[u];

	if (E->rb[u] <= at)
		return;
	st_add(E, 1, 0, E->size - 1, at, E->rb[u] - 1, (int64_t)E->S->net->tensors[d->t].bytes);
	E->rb[u] = at;
	for (uint32_t k = d->in0; k < d->in1; k++)
		if (E->ins[k].node != UINT32_MAX && E->decided[E->ins[k].node] == DQN_REMOVE)
			pull(E, E->ins[k].node, at);
}

/* Take action a at node v: the projection and the copy engine. */
static void act(struct dq_env *E, uint32_t v, int a, double *out_free)
{
	const struct dq_node *d = &E->nodes[v];
	const struct mp_net *net = E->S->net;
	uint32_t lo, hi;
	double o = *out_free;

	if (a == DQN_NOTHING)
		return;
	action_effect(E, v, a, *out_free, &lo, &hi, &o);
	E->decided[v] = (uint8_t)a;
	if (lo <= hi)
		st_add(E, 1, 0, E->size - 1, lo, hi, -(int64_t)net->tensors[d->t].bytes);
	if (a == DQN_OFFLOAD) {
		*out_free = o;
		place_prefetch(E, d);
		return;
	}
	E->rb[v] = d->fb;
	E->depth[v] = 1;
	for (uint32_t k = d->in0; k < d->in1; k++) {
		const struct dq_input *x = &E->ins[k];

		if (x->node != UINT32_MAX && E->decided[x->node] == DQN_REMOVE) {
			pull(E, x->node, d->fb);
			if (E->depth[x->node] + 1 > E->depth[v])
				E->depth[v] = (uint8_t)(E->depth[x->node] + 1);
		} else if (x->lu + 1 <= d->fb - 1) {
			st_add(E, 1, 0, E->size - 1, x->lu + 1, d->fb - 1, (int64_t)net->tensors[x->t].bytes);
		}
	}
}

/* The stall of waiting for the projection's excess over the budget to be
 * copied out and back in (4.7), over the iteration time: the potential the
 * rewards are shaped with (Ng et al. 1999), so that freeing memory where it
 * is short pays at once rather than at the end of the episode. */
static double excess_stall(const struct dq_env *E)
{
	const struct mp_device *dev = &E->S->req->device;
	uint64_t over = E->mx[1] > E->budget ? (uint64_t)(E->mx[1] - E->budget) : 0;

	return over ? (device_copy_ms(dev, over, false) + device_copy_ms(dev, over, true)) / E->base_ms : 0;
}

/* One episode's decisions (4.5-4.7) with exploration eps; each step's
 * estimated reward.  Returns their sum.  ep->st must hold E->n steps. */
static double rollout(struct dq_env *E, const struct dqn_model *m, struct dqn_fwd *f, double eps, uint64_t *rng,
		      struct dq_episode *ep)
{
	uint32_t prev = 0;
	double out_free = 0, sum = 0;

	st_reset(E);
	memset(E->decided, 0, E->n + 1);
	memset(E->in_load, 0, E->steps * sizeof(*E->in_load));
	ep->n = 0;
	memcpy(E->x, E->xs, (size_t)E->n * DQN_F * sizeof(*E->x));
	if (E->n)
		dqn_forward(m, &E->g, 0, f);
	for (uint32_t v = 0; v < E->n && E->mx[1] > E->budget; v++) {
		unsigned mask = valid_actions(E, v, out_free);
		const struct dq_node *d = &E->nodes[v];
		uint64_t bytes = E->S->net->tensors[d->t].bytes;
		uint32_t lo, hi;
		double cost = 0, o, need;
		int64_t ex;
		int a;

		if (mask == 1u << DQN_NOTHING)
			continue; /* nothing to gain here: not a decision */
		ex = st_max(E, 1, 0, E->size - 1, d->lf + 1, d->fb - 1) - E->budget;
		need = ex >= (int64_t)bytes ? 1.0 : (double)ex / (double)bytes;
		/* the nodes passed since the last decision may no longer act */
		for (uint32_t u = prev; u < v; u++) {
			E->x[(size_t)u * DQN_F + 5] = 0;
			E->chg[u - prev] = u;
		}
		E->x[(size_t)v * DQN_F + 5] = need;
		E->chg[v - prev] = v;
		dqn_update(m, &E->g, f, E->chg, v - prev + 1, v, E->mark, E->list);
		prev = v;
		if (dqn_uniform(rng) < eps) {
			uint32_t k = (uint32_t)(dqn_rand(rng) % (uint64_t)__builtin_popcount(mask));

			for (a = 0; !(mask >> a & 1) || k--;)
				a++;
		} else {
			a = argmax(f, mask);
		}
		if (a != DQN_NOTHING)
			cost = action_effect(E, v, a, out_free, &lo, &hi, &o) / E->base_ms;
		cost -= excess_stall(E);
		act(E, v, a, &out_free);
		cost += excess_stall(E);
		E->x[(size_t)v * DQN_F + 4] = action_sign(a);
		ep->st[ep->n++] = (struct dq_step){ v, (uint8_t)a, (uint8_t)mask, -cost, need };
		sum -= cost;
	}
	return sum;
}

/* Put an episode's decisions on S and simulate them from the liveness
 * timeline.  0, or -1 with *err. */
static int apply(struct dq_env *E, const struct dq_episode *ep, struct mp_error *err)
{
	struct pl_state *S = E->S;

	for (uint32_t t = 0; t < S->nt; t++) {
		pl_gap_remove(S, (int32_t)t, UINT32_MAX);
		S->drop[t] = S->keep[t] = S->host[t] = 0;
		S->in_floor[t] = S->out_wait[t] = 0;
	}
	for (uint32_t k = 0; k < ep->n; k++) {
		const struct dq_node *d = &E->nodes[ep->st[k].node];

		if (ep->st[k].a == DQN_OFFLOAD)
			pl_gap_add(S, d->t, d->lf + 1);
		else if (ep->st[k].a == DQN_REMOVE)
			S->drop[d->t] = S->keep[d->t] = 1;
	}
	memcpy(S->step_start, E->base_start, E->steps * sizeof(*S->step_start));
	return pl_build(S, err) < 0 ? -1 : 0;
}

/* Minus the simulated overhead, a peak over the budget paid as the stall of
 * copying the excess out and back in (4.7). */
static double sim_return(const struct dq_env *E)
{
	const struct pl_state *S = E->S;
	double r = -(S->sim.time_ms - E->base_ms) / E->base_ms;

	if ((int64_t)S->sim.peak_bytes > E->budget) {
		uint64_t over = S->sim.peak_bytes - (uint64_t)E->budget;

		r -= (device_copy_ms(&S->req->device, over, false) + device_copy_ms(&S->req->device, over, true)) / E->base_ms;
	}
	return r;
}

struct dq_train {
	struct dq_episode *eps;  /* [n_eps] the replay memory, by episode */
	uint32_t n_eps;
	uint32_t *ref;           /* [n_ref * 2] (episode, step) of each transition */
	uint32_t n_ref, cap_ref;
	double *grad, *m1, *m2;  /* [DQN_NW] */
	uint32_t adam_t;
};

/* One minibatch of Eq. 4 with targets of Eq. 5 (from tm, the weights as
 * the episode began: a target network, for stability), and an Adam step. */
static void sgd_step(struct dq_env *E, struct dqn_model *m, const struct dqn_model *tm, struct dqn_fwd *f,
		     struct dq_train *tr, uint64_t *rng)
{
	const double b1 = 0.9, b2 = 0.999;
	double c1, c2;

	memset(tr->grad, 0, DQN_NW * sizeof(*tr->grad));
	for (int b = 0; b < DQN_BATCH; b++) {
		uint32_t i = (uint32_t)(dqn_rand(rng) % tr->n_ref);
		const struct dq_episode *ep = &tr->eps[tr->ref[2 * i]];
		uint32_t k = tr->ref[2 * i + 1];
		const struct dq_step *s = &ep->st[k];
		double y = s->r, d;

		if (k + 1 < ep->n) { /* else terminal: Q = 0 */
			state_x(E, ep, k + 1);
			dqn_forward(tm, &E->g, ep->st[k + 1].node, f);
			y += DQN_GAMMA * f->q[argmax(f, ep->st[k + 1].mask)];
		}
		state_x(E, ep, k);
		dqn_forward(m, &E->g, s->node, f);
		d = f->q[s->a] - y; /* Huber: the squared loss's slope, clipped */
		d = d > 1 ? 1 : d < -1 ? -1 : d;
		dqn_backward(m, &E->g, f, s->a, d / DQN_BATCH, tr->grad);
	}
	tr->adam_t++;
	c1 = 1 - pow(b1, tr->adam_t);
	c2 = 1 - pow(b2, tr->adam_t);
	for (int k = 0; k < DQN_NW; k++) {
		tr->m1[k] = b1 * tr->m1[k] + (1 - b1) * tr->grad[k];
		tr->m2[k] = b2 * tr->m2[k] + (1 - b2) * tr->grad[k] * tr->grad[k];
		m->w[k] -= DQN_LR * (tr->m1[k] / c1) / (sqrt(tr->m2[k] / c2) + 1e-8);
	}
}

/* The best training episodes: by return, and by the simulator's peak and
 * time as pl_better judges them (it fits, else the lower peak). */
struct dq_best {
	struct dq_episode ep[2];
	double ret;
	uint64_t peak;
	double ms;
	bool have;
};

static void best_offer(const struct dq_env *E, struct dq_best *b, const struct dq_episode *ep)
{
	const struct pl_state *S = E->S;
	double ret = sim_return(E);

	if (!b->have || ret > b->ret) {
		memcpy(b->ep[0].st, ep->st, ep->n * sizeof(*ep->st));
		b->ep[0].n = ep->n;
		b->ret = ret;
	}
	if (!b->have || pl_better(S, S->sim.peak_bytes, S->sim.time_ms, b->peak, b->ms)) {
		memcpy(b->ep[1].st, ep->st, ep->n * sizeof(*ep->st));
		b->ep[1].n = ep->n;
		b->peak = S->sim.peak_bytes;
		b->ms = S->sim.time_ms;
	}
	b->have = true;
}

/* Alg. 1: l episodes from m's weights, each followed by DQN_UPDATES
 * minibatches; the best episode into *best.  0, or -1 with *err. */
static int train(struct dq_env *E, struct dqn_model *m, uint32_t l, double eps0, uint64_t *rng, struct dq_best *best,
		 struct mp_error *err)
{
	struct dqn_model *tm = mp_xmalloc(sizeof(*tm));
	struct dq_train tr;
	struct dqn_fwd f;
	int rc = 0;

	memset(&tr, 0, sizeof(tr));
	tr.eps = mp_xcalloc(l + 1, sizeof(*tr.eps));
	tr.grad = mp_xcalloc(DQN_NW, sizeof(double));
	tr.m1 = mp_xcalloc(DQN_NW, sizeof(double));
	tr.m2 = mp_xcalloc(DQN_NW, sizeof(double));
	dqn_fwd_init(&f, E->n);
	for (uint32_t k = 1; k <= l && rc == 0; k++) {
		struct dq_episode *ep = &tr.eps[tr.n_eps];
		double est;

		ep->st = mp_xmalloc((E->n + 1) * sizeof(*ep->st));
		est = rollout(E, m, &f, eps0 * (1.0 - (double)k / l), rng, ep);
		if (!ep->n) {
			free(ep->st);
			break; /* nothing to decide: every episode would be this one */
		}
		if ((rc = apply(E, ep, err)) < 0)
			break;
		best_offer(E, best, ep);
		/* the simulator's answer replaces the estimates */
		ep->st[ep->n - 1].r += sim_return(E) - est;
		tr.n_eps++;
		for (uint32_t j = 0; j < ep->n; j++) {
			mp_grow((void **)&tr.ref, &tr.cap_ref, 2 * (tr.n_ref + 1), sizeof(*tr.ref));
			tr.ref[2 * tr.n_ref] = tr.n_eps - 1;
			tr.ref[2 * tr.n_ref++ + 1] = j;
		}
		memcpy(tm->w, m->w, sizeof(m->w));
		for (int u = 0; u < DQN_UPDATES; u++)
			sgd_step(E, m, tm, &f, &tr, rng);
		m->episodes++;
	}
	for (uint32_t k = 0; k < tr.n_eps; k++)
		free(tr.eps[k].st);
	free(tr.eps);
	free(tr.ref);
	free(tr.grad);
	free(tr.m1);
	free(tr.m2);
	free(tm);
	dqn_fwd_release(&f);
	return rc;
}

static int by_bytes_desc(const void *a, const void *b)
{
	const struct pl_cand *x = a, *y = b;

	if (x->bytes != y->bytes)
		return x->bytes > y->bytes ? -1 : 1;
	return x->t - y->t;
}

static const struct pl_state *repair_state;

/* Most bytes per millisecond of rebuild first. */
static int by_bytes_per_ms(const void *a, const void *b)
{
	const struct pl_cand *x = a, *y = b;
	double mx = (double)x->bytes / (pl_rebuild_ms(repair_state, x->t) + 1e-6);
	double my = (double)y->bytes / (pl_rebuild_ms(repair_state, y->t) + 1e-6);

	if (mx != my)
		return mx > my ? -1 : 1;
	return x->t - y->t;
}

/* A repair round at a peak the Q-network's decisions left over the budget:
 * drop what the peak holds and a backward reader reads next, the most bytes
 * per rebuild millisecond first, until the excess is covered; when none
 * may be dropped, swap the largest. */
static uint32_t repair_round(struct pl_state *S, struct pl_cand *c, uint32_t n, uint64_t excess, void *ctx)
{
	const struct mp_net *net = S->net;
	struct pl_cand *f = mp_xmalloc((n + 1) * sizeof(*f));
	uint32_t nf = 0, m = 0;
	uint64_t got = 0;

	(void)ctx;
	for (uint32_t k = 0; k < n; k++) {
		uint32_t u = c[k].next_use;

		if (!c[k].cross && S->droppable[c[k].t] && !S->drop[c[k].t] && u != UINT32_MAX &&
		    (S->entries[u].recompute || net->ops[S->entries[u].op].phase != MP_PHASE_FWD))
			f[nf++] = c[k];
	}
	repair_state = S;
	qsort(f, nf, sizeof(*f), by_bytes_per_ms);
	for (uint32_t k = 0; k < nf && got < excess; k++, m++) {
		S->drop[f[k].t] = S->keep[f[k].t] = 1;
		got += f[k].bytes;
	}
	free(f);
	if (!m) {
		qsort(c, n, sizeof(*c), by_bytes_desc);
		m = pl_take_until(S, c, n, excess);
	}
	return m;
}

/* An episode's decisions on S, and the repair rounds at what the simulator
 * still finds over the budget; *rounds: how many.  0, or -1 with *err. */
static int build_repaired(struct dq_env *E, const struct dq_episode *ep, struct mp_plan *p, uint32_t *rounds,
			  struct mp_error *err)
{
	uint32_t before = p->iterations;

	if (apply(E, ep, err) < 0 || pl_rounds(E->S, p, repair_round, NULL, err) < 0)
		return -1;
	*rounds = p->iterations - before;
	return 0;
}

/* The plan: of the greedy policy's episode and the best training episodes,
 * the best once repaired (it fits, peak and arena, and is the fastest, or
 * misses by the least), built on S into *out; *which says which.  0, or -1
 * with *err. */
static int final_plan(struct dq_env *E, const struct dqn_model *m, const struct dq_best *best, struct mp_plan *p,
		      struct dq_episode *out, const char **which, uint32_t *rounds, struct mp_error *err)
{
	const struct dq_episode *cand[3] = { out, &best->ep[0], &best->ep[1] };
	static const char *const names[3] = { "the greedy policy", "the best training episode",
					      "the best training episode" };
	int n = best->have ? 3 : 1, k_best = 0;
	uint64_t rng = 0, over = 0;
	struct dqn_fwd f;
	double ms = 0;

	dqn_fwd_init(&f, E->n);
	rollout(E, m, &f, 0, &rng, out);
	dqn_fwd_release(&f);
	for (int k = 0; k < n; k++) {
		uint64_t o;

		if (build_repaired(E, cand[k], p, rounds, err) < 0)
			return -1;
		/* it fits, peak and arena, and is faster, or misses by less */
		o = pl_overflow(E->S, E->S->req->budget_bytes);
		if (k == 0 || (o != over ? o < over : E->S->sim.time_ms < ms)) {
			k_best = k;
			over = o;
			ms = E->S->sim.time_ms;
		}
	}
	*which = names[k_best];
	if (k_best == n - 1)
		return 0; /* built last */
	if (k_best) {
		memcpy(out->st, cand[k_best]->st, cand[k_best]->n * sizeof(*out->st));
		out->n = cand[k_best]->n;
	}
	return build_repaired(E, out, p, rounds, err);
}

int plan_dqn(struct pl_state *S, struct mp_plan *p, struct mp_error *err)
{
	const struct mp_plan_req *req = S->req;
	struct dqn_model local, *m = req->dqn_model ? req->dqn_model : &local;
	uint64_t rng = req->dqn_seed;
	uint32_t l, n_off = 0, n_rem = 0, rounds = 0;
	struct dq_best best = { { { NULL, 0 }, { NULL, 0 } }, 0, 0, 0, false };
	struct dq_episode ep = { NULL, 0 };
	const char *which = NULL;
	double eps0 = 1, t0;
	struct dq_env E;
	int rc;

	if (m == &local)
		local.loaded = local.trained = false;
	if ((rc = pl_fits_as_is(S, p, err)) != 0)
		return rc < 0 ? -1 : 0;
	if (!m->loaded) {
		dqn_model_init(m, dqn_rand(&rng));
		m->episodes = 0;
		m->train_s = 0;
		l = req->dqn_episodes ? req->dqn_episodes : DQN_EPISODES;
	} else {
		l = req->dqn_episodes;
		eps0 = DQN_EPS_LOADED;
	}
	if (m->trained)
		l = 0; /* an arena retry: the weights trained for the budget above */
	env_init(&E, S);
	best.ep[0].st = mp_xmalloc((E.n + 1) * sizeof(*best.ep[0].st));
	best.ep[1].st = mp_xmalloc((E.n + 1) * sizeof(*best.ep[1].st));
	ep.st = mp_xmalloc((E.n + 1) * sizeof(*ep.st));
	t0 = plan_now_s();
	rc = train(&E, m, l, eps0, &rng, &best, err);
	m->train_s += plan_now_s() - t0;
	m->trained = true;
	if (rc == 0)
		rc = final_plan(&E, m, &best, p, &ep, &which, &rounds, err);
	for (uint32_t k = 0; k < ep.n; k++) {
		n_off += ep.st[k].a == DQN_OFFLOAD;
		n_rem += ep.st[k].a == DQN_REMOVE;
	}
	free(best.ep[0].st);
	free(best.ep[1].st);
	free(ep.st);
	env_release(&E);
	if (rc < 0)
		return -1;
	snprintf(p->note, sizeof(p->note), "%u offloads, %u removals by %s after %u episodes%s", n_off, n_rem, which,
		 m->episodes, rounds ? ", then the peaks left repaired" : "");
	return 0;
}
