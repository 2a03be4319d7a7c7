/*
 * The DQN planner's networks in plain C (doubles): the structure2vec
 * embedding of Eq. 1,
 *   s_v^{t+1} = ReLU(W1 x_v + W2 sum_{u in N(v)} s_u^t + W3 sum_{u in N(v)} ReLU(W4 w(u, v))),
 * the graph state of Eq. 2, g = [W5 sum_u s_u^T, W6 s_c^T], and the Q head
 * of Eq. 3 with one output row per action, Q(g, c, a) = W7_a ReLU([g, W8 s_c^T]) + b_a;
 * their backward pass, and the model file.  Forward and backward are
 * O(T (n + edges) p^2).
 */
#include "dqn.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../analysis/base/jget.h"

#define P DQN_P

/* y[P] (+)= W[P x cols] x[cols] */
static void matvec(const double *W, const double *x, uint32_t cols, double *y, bool add)
{
	for (uint32_t i = 0; i < P; i++) {
		double a = add ? y[i] : 0;

		for (uint32_t j = 0; j < cols; j++)
			a += W[i * cols + j] * x[j];
		y[i] = a;
	}
}

/* dx[cols] += W^T dy; dW += dy x^T */
static void matvec_back(const double *W, const double *x, uint32_t cols, const double *dy, double *dx, double *dW)
{
	for (uint32_t i = 0; i < P; i++) {
		if (dy[i] == 0)
			continue;
		for (uint32_t j = 0; j < cols; j++) {
			if (dx)
				dx[j] += W[i * cols + j] * dy[i];
			dW[i * cols + j] += dy[i] * x[j];
		}
	}
}

void dqn_model_init(struct dqn_model *m, uint64_t seed)
{
	static const struct { uint32_t at, n, fan_in; } blocks[] = {
		{ DQN_W1, P * DQN_F, DQN_F }, { DQN_W2, P * P, P }, { DQN_W3, P * P, P }, { DQN_W4, P, 1 },
		{ DQN_W5, P * P, P }, { DQN_W6, P * P, P }, { DQN_W8, P * P, P }, { DQN_W7, DQN_A * 3 * P, 3 * P },
	};
	uint64_t s = seed;

	memset(m, 0, sizeof(*m));
	for (size_t b = 0; b < sizeof(blocks) / sizeof(blocks[0]); b++) {
		double r = 1.0 / sqrt((double)blocks[b].fan_in);

		for (uint32_t k = 0; k < blocks[b].n; k++)
			m->w[blocks[b].at + k] = r * (2 * dqn_uniform(&s) - 1);
	}
	m->loaded = true;
}

void dqn_fwd_init(struct dqn_fwd *f, uint32_t n)
{
	memset(f, 0, sizeof(*f));
	f->n = n;
	f->s = mp_xcalloc((size_t)(DQN_T + 1) * n * P + 1, sizeof(*f->s));
	f->e = mp_xcalloc((size_t)n * P + 1, sizeof(*f->e));
}

void dqn_fwd_release(struct dqn_fwd *f)
{
	free(f->s);
	free(f->e);
	memset(f, 0, sizeof(*f));
}

static double *layer(const struct dqn_fwd *f, uint32_t t)
{
	return f->s + (size_t)t * f->n * P;
}

/* The edge messages sum_u ReLU(W4 w(u, v)) of node v. */
static void edge_sum(const struct dqn_model *m, const struct dqn_graph *g, uint32_t v, double *q)
{
	memset(q, 0, P * sizeof(*q));
	for (uint32_t k = g->adj_start[v]; k < g->adj_start[v + 1]; k++)
		for (uint32_t i = 0; i < P; i++) {
			double r = m->w[DQN_W4 + i] * g->adj_w[k];

			q[i] += r > 0 ? r : 0;
		}
}

/* The sum over N(v), v included, of layer t's states. */
static void neigh_sum(const struct dqn_graph *g, const double *st, uint32_t v, double *out)
{
	memcpy(out, st + (size_t)v * P, P * sizeof(*out));
	for (uint32_t k = g->adj_start[v]; k < g->adj_start[v + 1]; k++)
		for (uint32_t i = 0; i < P; i++)
			out[i] += st[(size_t)g->adj[k] * P + i];
}

/* The Q head (Eq. 2-3) on f's embedding at node c. */
static void head(const struct dqn_model *m, struct dqn_fwd *f, uint32_t c)
{
	const double *sc = layer(f, DQN_T) + (size_t)c * P;

	f->c = c;
	matvec(m->w + DQN_W5, f->sum, P, f->h, false);
	matvec(m->w + DQN_W6, sc, P, f->h + P, false);
	matvec(m->w + DQN_W8, sc, P, f->h + 2 * P, false);
	for (uint32_t i = 0; i < 3 * P; i++)
		f->h[i] = f->h[i] > 0 ? f->h[i] : 0;
	for (uint32_t a = 0; a < DQN_A; a++) {
		double q = m->w[DQN_B7 + a];

		for (uint32_t i = 0; i < 3 * P; i++)
			q += m->w[DQN_W7 + a * 3 * P + i] * f->h[i];
		f->q[a] = q;
	}
}

static void node_state(const struct dqn_model *m, const struct dqn_graph *g, struct dqn_fwd *f, uint32_t t,
		       uint32_t v);

void dqn_forward(const struct dqn_model *m, const struct dqn_graph *g, uint32_t c, struct dqn_fwd *f)
{
	double q[P];

	MP_ASSERT(f->n == g->n && c < g->n);
	for (uint32_t v = 0; v < g->n; v++) {
		edge_sum(m, g, v, q);
		matvec(m->w + DQN_W3, q, P, f->e + (size_t)v * P, false);
	}
	memset(layer(f, 0), 0, (size_t)g->n * P * sizeof(double));
	for (uint32_t t = 1; t <= DQN_T; t++) {
		for (uint32_t v = 0; v < g->n; v++)
			node_state(m, g, f, t, v);
	}
	memset(f->sum, 0, sizeof(f->sum));
	for (uint32_t v = 0; v < g->n; v++)
		for (uint32_t i = 0; i < P; i++)
			f->sum[i] += layer(f, DQN_T)[(size_t)v * P + i];
	head(m, f, c);
}

/* Layer t's state of node v from layer t - 1 (Eq. 1). */
static void node_state(const struct dqn_model *m, const struct dqn_graph *g, struct dqn_fwd *f, uint32_t t,
		       uint32_t v)
{
	double *s = layer(f, t) + (size_t)v * P, ns[P];

	memcpy(s, f->e + (size_t)v * P, P * sizeof(*s));
	matvec(m->w + DQN_W1, g->x + (size_t)v * DQN_F, DQN_F, s, true);
	neigh_sum(g, layer(f, t - 1), v, ns);
	matvec(m->w + DQN_W2, ns, P, s, true);
	for (uint32_t i = 0; i < P; i++)
		s[i] = s[i] > 0 ? s[i] : 0;
}

void dqn_update(const struct dqn_model *m, const struct dqn_graph *g, struct dqn_fwd *f,
		const uint32_t *changed, uint32_t k, uint32_t c, uint32_t *mark, uint32_t *list)
{
	uint32_t n = 0;

	memset(mark, 0, (size_t)g->n * sizeof(*mark));
	for (uint32_t i = 0; i < k; i++)
		if (!mark[changed[i]]) {
			mark[changed[i]] = 1;
			list[n++] = changed[i];
		}
	/* layer t changes on the nodes within t - 1 hops of a changed one */
	for (uint32_t t = 1; t <= DQN_T; t++) {
		if (t > 1)
			for (uint32_t i = 0, n0 = n; i < n0; i++)
				for (uint32_t j = g->adj_start[list[i]]; j < g->adj_start[list[i] + 1]; j++)
					if (!mark[g->adj[j]]) {
						mark[g->adj[j]] = 1;
						list[n++] = g->adj[j];
					}
		for (uint32_t i = 0; i < n; i++) {
			if (t == DQN_T)
				for (uint32_t q = 0; q < P; q++)
					f->sum[q] -= layer(f, t)[(size_t)list[i] * P + q];
			node_state(m, g, f, t, list[i]);
			if (t == DQN_T)
				for (uint32_t q = 0; q < P; q++)
					f->sum[q] += layer(f, t)[(size_t)list[i] * P + q];
		}
	}
	head(m, f, c);
}

void dqn_backward(const struct dqn_model *m, const struct dqn_graph *g, const struct dqn_fwd *f,
		  int a, double dq, double *grad)
{
	uint32_t n = g->n, c = f->c;
	const double *sc = layer(f, DQN_T) + (size_t)c * P;
	double dh[3 * P], dsum[P] = { 0 }, dsc[P] = { 0 }, ns[P], q[P], dqv[P];
	double *ds = mp_xcalloc((size_t)n * P + 1, sizeof(*ds));    /* dL/ds^t */
	double *dprev = mp_xcalloc((size_t)n * P + 1, sizeof(*ds)); /* dL/ds^{t-1} */
	double *de = mp_xcalloc((size_t)n * P + 1, sizeof(*de));    /* dL/de */

	MP_ASSERT(a >= 0 && a < DQN_A);
	/* Q head */
	grad[DQN_B7 + a] += dq;
	for (uint32_t i = 0; i < 3 * P; i++) {
		grad[DQN_W7 + a * 3 * P + i] += dq * f->h[i];
		dh[i] = f->h[i] > 0 ? dq * m->w[DQN_W7 + a * 3 * P + i] : 0;
	}
	matvec_back(m->w + DQN_W5, f->sum, P, dh, dsum, grad + DQN_W5);
	matvec_back(m->w + DQN_W6, sc, P, dh + P, dsc, grad + DQN_W6);
	matvec_back(m->w + DQN_W8, sc, P, dh + 2 * P, dsc, grad + DQN_W8);
	for (uint32_t v = 0; v < n; v++)
		memcpy(ds + (size_t)v * P, dsum, sizeof(dsum));
	for (uint32_t i = 0; i < P; i++)
		ds[(size_t)c * P + i] += dsc[i];
	/* T rounds of Eq. 1, last first */
	for (uint32_t t = DQN_T; t >= 1; t--) {
		const double *cur = layer(f, t), *prev = layer(f, t - 1);

		memset(dprev, 0, (size_t)n * P * sizeof(*dprev));
		for (uint32_t v = 0; v < n; v++) {
			double da[P], dns[P] = { 0 };
			bool any = false;

			for (uint32_t i = 0; i < P; i++) {
				da[i] = cur[(size_t)v * P + i] > 0 ? ds[(size_t)v * P + i] : 0;
				any |= da[i] != 0;
			}
			if (!any)
				continue;
			for (uint32_t i = 0; i < P; i++)
				de[(size_t)v * P + i] += da[i];
			matvec_back(m->w + DQN_W1, g->x + (size_t)v * DQN_F, DQN_F, da, NULL, grad + DQN_W1);
			if (t == 1)
				continue; /* s^0 = 0: nothing reaches W2 or below */
			neigh_sum(g, prev, v, ns);
			matvec_back(m->w + DQN_W2, ns, P, da, dns, grad + DQN_W2);
			for (uint32_t i = 0; i < P; i++)
				dprev[(size_t)v * P + i] += dns[i];
			for (uint32_t k = g->adj_start[v]; k < g->adj_start[v + 1]; k++)
				for (uint32_t i = 0; i < P; i++)
					dprev[(size_t)g->adj[k] * P + i] += dns[i];
		}
		{
			double *tmp = ds;

			ds = dprev;
			dprev = tmp;
		}
	}
	/* e_v = W3 sum_u ReLU(W4 w(u, v)) */
	for (uint32_t v = 0; v < n; v++) {
		memset(dqv, 0, sizeof(dqv));
		edge_sum(m, g, v, q);
		matvec_back(m->w + DQN_W3, q, P, de + (size_t)v * P, dqv, grad + DQN_W3);
		for (uint32_t k = g->adj_start[v]; k < g->adj_start[v + 1]; k++)
			for (uint32_t i = 0; i < P; i++)
				if (m->w[DQN_W4 + i] * g->adj_w[k] > 0)
					grad[DQN_W4 + i] += dqv[i] * g->adj_w[k];
	}
	free(ds);
	free(dprev);
	free(de);
}

/* The model file: {"format": "memplan-dqn", "version": 1, "p": 8, "T": 3,
 * "features": 6, "actions": 3, "weights": {"W1": [...], ...}}, each matrix
 * row-major as a flat array of numbers. */
static const struct {
	const char *name;
	uint32_t at, n;
} tensors[] = {
	{ "W1", DQN_W1, P * DQN_F }, { "W2", DQN_W2, P * P }, { "W3", DQN_W3, P * P }, { "W4", DQN_W4, P },
	{ "W5", DQN_W5, P * P },     { "W6", DQN_W6, P * P }, { "W7", DQN_W7, DQN_A * 3 * P },
	{ "W8", DQN_W8, P * P },     { "b7", DQN_B7, DQN_A },
};
#define N_TENSORS (sizeof(tensors) / sizeof(tensors[0]))

json_t *dqn_model_json(const struct dqn_model *m)
{
	json_t *root = json_object(), *w = json_object();

	json_object_set_new(root, "format", json_string("memplan-dqn"));
	json_object_set_new(root, "version", json_integer(1));
	json_object_set_new(root, "p", json_integer(P));
	json_object_set_new(root, "T", json_integer(DQN_T));
	json_object_set_new(root, "features", json_integer(DQN_F));
	json_object_set_new(root, "actions", json_integer(DQN_A));
	for (size_t k = 0; k < N_TENSORS; k++) {
		json_t *arr = json_array();

		for (uint32_t i = 0; i < tensors[k].n; i++)
			json_array_append_new(arr, json_real(m->w[tensors[k].at + i]));
		json_object_set_new(w, tensors[k].name, arr);
	}
	json_object_set_new(root, "weights", w);
	return root;
}

/* A member of obj that must be there. */
static int member(const json_t *obj, const char *path, const char *key, json_t **out, struct mp_error *err)
{
	char b[256];

	if (!(*out = json_object_get(obj, key))) {
		mp_error_set(err, "%s: missing", jget_path(b, sizeof(b), path, key));
		return -1;
	}
	return 0;
}

/* One integer member that must equal want (the shape this build was made with). */
static int shape(const json_t *root, const char *key, int64_t want, struct mp_error *err)
{
	json_t *v;
	int64_t k;

	if (member(root, "", key, &v, err) < 0 || jget_int(v, key, 0, 1 << 20, &k, err) < 0)
		return -1;
	if (k != want) {
		mp_error_set(err, "%s: %lld, but this memplan's networks have %s %lld", key, (long long)k, key,
			     (long long)want);
		return -1;
	}
	return 0;
}

static int model_read(const json_t *root, double *w, struct mp_error *err)
{
	static const char *const keys[] = { "format", "version", "p", "T", "features", "actions", "weights", NULL };
	static const char *wkeys[N_TENSORS + 1];
	const char *fmt;
	json_t *v, *ws;

	for (size_t k = 0; k < N_TENSORS; k++)
		wkeys[k] = tensors[k].name;
	if (jget_object(root, "(top level)", err) < 0 || jget_check_keys(root, "", keys, err) < 0 ||
	    member(root, "", "format", &v, err) < 0 || jget_string(v, "format", &fmt, err) < 0)
		return -1;
	if (strcmp(fmt, "memplan-dqn")) {
		mp_error_set(err, "format: '%s', expected 'memplan-dqn'", fmt);
		return -1;
	}
	if (shape(root, "version", 1, err) < 0 || shape(root, "p", P, err) < 0 || shape(root, "T", DQN_T, err) < 0 ||
	    shape(root, "features", DQN_F, err) < 0 || shape(root, "actions", DQN_A, err) < 0 ||
	    member(root, "", "weights", &ws, err) < 0 || jget_object(ws, "weights", err) < 0 ||
	    jget_check_keys(ws, "weights", wkeys, err) < 0)
		return -1;
	for (size_t k = 0; k < N_TENSORS; k++) {
		char path[64], b[80];
		json_t *arr;

		snprintf(path, sizeof(path), "weights.%s", tensors[k].name);
		if (member(ws, "weights", tensors[k].name, &arr, err) < 0)
			return -1;
		if (!json_is_array(arr) || json_array_size(arr) != tensors[k].n) {
			mp_error_set(err, "%s: expected an array of %u numbers, found %s", path, tensors[k].n,
				     json_is_array(arr) ? "an array of another length" : jget_type(arr));
			return -1;
		}
		for (uint32_t i = 0; i < tensors[k].n; i++)
			if (jget_finite(json_array_get(arr, i), jget_index(b, sizeof(b), path, i), &w[tensors[k].at + i],
					err) < 0)
				return -1;
	}
	return 0;
}

int dqn_model_load(const char *path, struct dqn_model *m, struct mp_error *err)
{
	double *w = mp_xmalloc(sizeof(m->w));
	json_t *root = mp_json_load_file(path, err);
	int rc = -1;

	if (root && model_read(root, w, err) == 0) {
		memcpy(m->w, w, sizeof(m->w));
		m->loaded = true;
		rc = 0;
	}
	if (rc < 0)
		mp_error_prefix(err, "%s: ", path);
	json_decref(root);
	free(w);
	return rc;
}
