/*
 * The DQN planner: its networks' gradients against central finite
 * differences (embedding weights W1-W4 and Q weights W5-W8, b7 apart), the
 * incremental embedding against a full one, the model file's round trip and
 * its errors, and plans: valid in the simulator, fitting, and the same plan
 * and weights from the same seed.
 */
#include <math.h>
#include <stdlib.h>
#include <unistd.h>

#include "../../plan/dqn.h"
#include "../../plan/planners.h"
#include "unit.h"
#include "fixture.h"

/* A small graph: a chain of n nodes with a skip edge every third, random
 * features and edge weights from seed. */
struct test_graph {
	uint32_t adj_start[16], adj[64];
	double adj_w[64], x[16 * DQN_F];
	struct dqn_graph g;
};

static void graph_make(struct test_graph *G, uint32_t n, uint64_t seed)
{
	uint32_t m = 0;

	MP_ASSERT(n < 16);
	for (uint32_t v = 0; v < n; v++) {
		G->adj_start[v] = m;
		for (uint32_t u = 0; u < n; u++) {
			uint32_t d = u > v ? u - v : v - u;

			if (d == 1 || (d == 3 && (u < v ? u : v) % 3 == 0)) {
				G->adj[m] = u;
				/* symmetric: w(u, v) = w(v, u) */
				G->adj_w[m++] = 0.1 + 0.1 * ((u + v) % 7);
			}
		}
	}
	G->adj_start[n] = m;
	for (uint32_t k = 0; k < n * DQN_F; k++)
		G->x[k] = dqn_uniform(&seed);
	G->g = (struct dqn_graph){ n, G->adj_start, G->adj, G->adj_w, G->x };
}

static double q_of(const struct dqn_model *m, const struct dqn_graph *g, uint32_t c, int a)
{
	struct dqn_fwd f;
	double q;

	dqn_fwd_init(&f, g->n);
	dqn_forward(m, g, c, &f);
	q = f.q[a];
	dqn_fwd_release(&f);
	return q;
}

/* dQ(c, a)/dw by the backward pass and by central differences, every
 * weight; returns the largest difference in [lo, hi) and counts the
 * weights there whose gradient is not zero. */
static double grad_check(const struct dqn_model *m0, const struct dqn_graph *g, uint32_t c, int a, int lo, int hi,
			 int *nonzero)
{
	struct dqn_model m = *m0;
	double *grad = calloc(DQN_NW, sizeof(double)), worst = 0;
	struct dqn_fwd f;

	dqn_fwd_init(&f, g->n);
	dqn_forward(&m, g, c, &f);
	dqn_backward(&m, g, &f, a, 1.0, grad);
	dqn_fwd_release(&f);
	*nonzero = 0;
	for (int k = lo; k < hi; k++) {
		const double h = 1e-6, w = m.w[k];
		double up, down, fd, diff;

		m.w[k] = w + h;
		up = q_of(&m, g, c, a);
		m.w[k] = w - h;
		down = q_of(&m, g, c, a);
		m.w[k] = w;
		fd = (up - down) / (2 * h);
		diff = fabs(fd - grad[k]) / (1 + fabs(fd));
		worst = diff > worst ? diff : worst;
		*nonzero += grad[k] != 0;
	}
	free(grad);
	return worst;
}

static void test_gradients(void)
{
	for (uint64_t seed = 1; seed <= 3; seed++) {
		struct test_graph G;
		struct dqn_model m;

		graph_make(&G, 9, seed);
		dqn_model_init(&m, seed * 77);
		for (int a = 0; a < DQN_A; a++) {
			int nz_embed, nz_q;
			double e = grad_check(&m, &G.g, (uint32_t)(seed + 2), a, DQN_W1, DQN_W5, &nz_embed);
			double q = grad_check(&m, &G.g, (uint32_t)(seed + 2), a, DQN_W5, DQN_NW, &nz_q);

			CHECK(e < 1e-6); /* the embedding: W1-W4 through T rounds of Eq. 1 */
			CHECK(q < 1e-6); /* the Q network: W5, W6, W8, W7, b7 */
			if (e >= 1e-6 || q >= 1e-6)
				fprintf(stderr, "seed %llu action %d: embedding %g, Q %g\n", (unsigned long long)seed, a, e, q);
			/* the check means something: gradients reach most weights */
			CHECK(nz_embed > (DQN_W5 - DQN_W1) / 3);
			CHECK(nz_q > 3 * DQN_P);
		}
	}
}

/* dqn_update after a few features change gives what a full forward gives. */
static void test_incremental(void)
{
	struct test_graph G;
	struct dqn_model m;
	struct dqn_fwd inc, full;
	uint32_t mark[16], list[16], changed[2] = { 4, 5 };

	graph_make(&G, 12, 9);
	dqn_model_init(&m, 5);
	dqn_fwd_init(&inc, 12);
	dqn_fwd_init(&full, 12);
	dqn_forward(&m, &G.g, 0, &inc);
	G.x[4 * DQN_F + 4] = -1;
	G.x[5 * DQN_F + 5] = 0.25;
	dqn_update(&m, &G.g, &inc, changed, 2, 6, mark, list);
	dqn_forward(&m, &G.g, 6, &full);
	for (int a = 0; a < DQN_A; a++)
		CHECK_NEAR(inc.q[a], full.q[a], 1e-12);
	for (int i = 0; i < DQN_P; i++)
		CHECK_NEAR(inc.sum[i], full.sum[i], 1e-12);
	dqn_fwd_release(&inc);
	dqn_fwd_release(&full);
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	fputs(text, f);
	fclose(f);
}

static void test_model_file(void)
{
	char path[] = "/tmp/memplan-dqn-XXXXXX";
	int fd = mkstemp(path);
	struct dqn_model m, back;
	struct mp_error err;
	json_t *j;

	CHECK(fd >= 0);
	close(fd);
	dqn_model_init(&m, 42);
	j = dqn_model_json(&m);
	CHECK(json_dump_file(j, path, 0) == 0);
	json_decref(j);
	memset(&back, 0, sizeof(back));
	CHECK(dqn_model_load(path, &back, &err) == 0);
	CHECK(back.loaded);
	CHECK(!memcmp(back.w, m.w, sizeof(m.w))); /* 17 digits: the same doubles */

	/* errors name the file and the JSON path; the model is left as it was */
	write_file(path, "{\"format\": \"memplan-dqn\", \"version\": 1, \"p\": 8, \"T\": 3, \"features\": 6, "
			 "\"actions\": 3, \"weights\": {\"W1\": [1, 2]}}");
	CHECK(dqn_model_load(path, &back, &err) < 0);
	CHECK(strstr(err.msg, path) && strstr(err.msg, "weights.W1: expected an array of 48 numbers"));
	CHECK(!memcmp(back.w, m.w, sizeof(m.w)));
	write_file(path, "{\"format\": \"memplan-dqn\", \"version\": 1, \"p\": 16}");
	CHECK(dqn_model_load(path, &back, &err) < 0);
	CHECK(strstr(err.msg, "p: 16, but this memplan's networks have p 8") != NULL);
	write_file(path, "[1, 2");
	CHECK(dqn_model_load(path, &back, &err) < 0);
	CHECK(strstr(err.msg, path) && strstr(err.msg, "line 1"));
	unlink(path);
	CHECK(dqn_model_load(path, &back, &err) < 0);
	CHECK(strstr(err.msg, path) != NULL);
}

static uint64_t liveness_peak(const struct fixture *f)
{
	struct mp_schedule s;
	struct mp_sim sim;
	struct mp_error err;
	uint64_t peak;

	sched_init(&s);
	policy_build(f->net, &f->route, MP_STRAT_LIVENESS, &f->req.popts, &s, NULL);
	MP_ASSERT(sim_run(f->net, &f->req.device, &s, &sim, &err) == 0);
	peak = sim.peak_bytes;
	sim_release(&sim);
	sched_release(&s);
	return peak;
}

/* Plans at a share of the liveness peak: the simulator accepts the schedule
 * again as written and agrees with the plan; the first n_fit fit; the
 * same seed gives the same plan and weights, another seed other weights. */
static void test_plans(const char *path, const int *pcts, int n_pct, int n_fit)
{
	struct fixture f;
	struct mp_error err;

	if (load(&f, path) < 0) {
		CHECK(0);
		return;
	}
	for (int k = 0; k < n_pct; k++) {
		struct dqn_model m1, m2, m3;
		struct mp_plan p1, p2, p3;
		struct mp_sim again;

		f.req.budget_bytes = liveness_peak(&f) / 100 * (uint64_t)pcts[k];
		f.req.dqn_seed = 7;
		memset(&m1, 0, sizeof(m1));
		memset(&m2, 0, sizeof(m2));
		memset(&m3, 0, sizeof(m3));
		plan_init(&p1);
		plan_init(&p2);
		plan_init(&p3);
		f.req.dqn_model = &m1;
		CHECK(plan_run(f.net, &f.route, MP_PLANNER_DQN, &f.req, &p1, &err) == 0);
		f.req.dqn_model = &m2;
		CHECK(plan_run(f.net, &f.route, MP_PLANNER_DQN, &f.req, &p2, &err) == 0);
		if (k < n_fit) {
			if (!p1.fits)
				fprintf(stderr, "%s at %d%%: %s\n", path, pcts[k], p1.note);
			CHECK(p1.fits);
		}
		/* fits says so truly, fitting or not */
		CHECK(p1.fits == (p1.sim.peak_bytes <= f.req.budget_bytes && p1.arena_bytes <= f.req.budget_bytes));
		CHECK(m1.episodes > 0 || p1.sim.n_recompute + p1.sim.n_swap_out == 0);
		/* valid: the simulator takes the written schedule again */
		CHECK(sim_run(f.net, &f.req.device, &p1.sched, &again, &err) == 0);
		CHECK_U64(again.peak_bytes, p1.sim.peak_bytes);
		CHECK_NEAR(again.time_ms, p1.sim.time_ms, 1e-9);
		sim_release(&again);
		/* reproducible bit for bit */
		CHECK_U64(p1.sched.n, p2.sched.n);
		CHECK(p1.sched.n == p2.sched.n && !memcmp(p1.sched.a, p2.sched.a, p1.sched.n * sizeof(*p1.sched.a)));
		CHECK(p1.sim.time_ms == p2.sim.time_ms);
		CHECK(!memcmp(m1.w, m2.w, sizeof(m1.w)));
		CHECK_STR(p1.note, p2.note);
		/* another seed trains other weights */
		f.req.dqn_seed = 8;
		f.req.dqn_model = &m3;
		CHECK(plan_run(f.net, &f.route, MP_PLANNER_DQN, &f.req, &p3, &err) == 0);
		CHECK(m1.episodes == 0 || memcmp(m1.w, m3.w, sizeof(m1.w)));
		/* from the trained model without training: the greedy policy */
		{
			struct mp_plan p4;

			m1.trained = false;
			m1.episodes = 0;
			f.req.dqn_model = &m1;
			plan_init(&p4);
			CHECK(plan_run(f.net, &f.route, MP_PLANNER_DQN, &f.req, &p4, &err) == 0);
			CHECK_U64(m1.episodes, 0);
			CHECK(p4.fits == (p4.sim.peak_bytes <= f.req.budget_bytes &&
					  p4.arena_bytes <= f.req.budget_bytes));
			CHECK(sim_run(f.net, &f.req.device, &p4.sched, &again, &err) == 0);
			CHECK_U64(again.peak_bytes, p4.sim.peak_bytes);
			sim_release(&again);
			plan_release(&p4);
		}
		f.req.dqn_model = NULL;
		plan_release(&p1);
		plan_release(&p2);
		plan_release(&p3);
	}
	unload(&f);
}

int main(void)
{
	static const int three[] = { 90, 70, 50 }, two[] = { 90, 70 };

	test_gradients();
	test_incremental();
	test_model_file();
	/* (50% of U-Net and 70% of the diamond do not fit from every seed:
	 * their plans must still be valid and say so) */
	test_plans("examples/alexnet.json", three, 3, 3);
	test_plans("examples/unet.json", three, 3, 2);
	test_plans("examples/diamond.json", two, 2, 1);
	test_plans("examples/vgg16-b64.json", two, 2, 2);
	return unit_report("test_dqn");
}
