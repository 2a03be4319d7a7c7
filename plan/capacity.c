/*
 * Capacity search (SuperNeurons 4.2, Tables 4 and 5).  For a size n the net
 * is built (a scaled copy of a net file, or a generated model at batch, depth
 * or sequence length n), then judged
 * by the one simulator: a fixed strategy fits when its simulated peak is at
 * most the usable memory, a planner when its plan fits.  Sizes are searched
 * by doubling then bisection, so each answer n fits and n + 1 does not.
 * Two bounds skip simulation: above the size whose layer-wise minimum exceeds
 * the memory nothing fits, and the strategies are ordered (baseline >=
 * liveness >= offload >= recompute, every planner starts from liveness) so a
 * row's search starts at the answer of the row it cannot do worse than.
 * O(log(max) * rows) builds and simulations.
 */
#include "capacity.h"

#include <stdlib.h>

#include "../analysis/jobs.h"
#include <string.h>

const char *cap_row_name(unsigned row)
{
	if (row < MP_STRAT__COUNT)
		return mp_strategy_name((enum mp_strategy)row);
	return row < CAP_N_ROWS ? mp_planner_name((enum mp_planner)(row - MP_STRAT__COUNT)) : "?";
}

uint32_t cap_resnet_depth(uint32_t n)
{
	return 3 * (6 + 32 + n + 6) + 2;
}

/* n copies of the net file (scaled to the GPU) as jobs on one GPU, merged at
 * the worst offsets found: caller frees it. */
static struct mp_net *build_copies(const struct cap_query *q, uint32_t n, struct mp_error *err)
{
	const struct mp_net *nets[JOBS_MAX], *one = q->base;
	struct mp_net *scaled = NULL, *m = NULL;
	double off[JOBS_MAX];

	if (q->compute_factor != 1.0 || q->memory_factor != 1.0) {
		if (!(scaled = net_scaled(q->base, q->base->batch, q->compute_factor, q->memory_factor, err)))
			return NULL;
		one = scaled;
	}
	/* copies of one job at one offset run in lockstep on the time-sliced
	 * engine, every peak together: the worst alignment (jobs_worst_offsets
	 * finds no other for identical jobs) */
	for (uint32_t j = 0; j < n; j++) {
		nets[j] = one;
		off[j] = 0;
	}
	m = jobs_merge(nets, n, off, NULL, &q->device, err);
	net_free(scaled);
	return m;
}

/* The net at size n: caller frees it (and *gen, a generated net's JSON is not
 * kept). */
static struct mp_net *build(const struct cap_query *q, uint32_t n, struct mp_error *err)
{
	if (q->vary == CAP_VARY_COPIES)
		return build_copies(q, n, err);
	if (!q->model)
		return net_scaled(q->base, n, q->compute_factor, q->memory_factor, err);
	{
		struct zoo_opts o = q->zopts;
		struct mp_net *net;
		json_t *j;

		if (q->vary == CAP_VARY_BATCH)
			o.batch = n;
		else if (q->vary == CAP_VARY_DEPTH)
			o.depth = cap_resnet_depth(n);
		else
			o.seq = n;
		o.device = &q->device;
		if (!(j = zoo_generate(q->model, &o, err)))
			return NULL;
		net = net_load_json(j, err);
		json_decref(j);
		return net;
	}
}

double cap_per_step(const struct cap_query *q, uint32_t n)
{
	switch (q->vary) {
	case CAP_VARY_BATCH:
		return n;
	case CAP_VARY_TOKENS:
		return (double)q->zopts.batch * n;
	case CAP_VARY_COPIES:
		return (double)n * (q->base->batch ? q->base->batch : 1);
	default:
		return q->zopts.batch;
	}
}

/* Whether the model builds under o at seq n (a range the zoo refuses). */
static bool seq_builds(const char *model, struct zoo_opts o, uint32_t n)
{
	struct mp_error err;
	json_t *j;

	o.seq = n;
	j = zoo_generate(model, &o, &err);
	json_decref(j);
	return j != NULL;
}

int cap_seq_resolve(struct cap_query *q, struct mp_error *err)
{
	const struct zoo_model *zm = zoo_model_find(q->model, NULL);
	struct zoo_opts o = q->zopts;
	uint32_t lo = 1, hi = CAP_MAX_SEQ;
	json_t *j;

	if (!zm || !(zm->options & ZOO_OPT_SEQ)) {
		mp_error_set(err, "'%s' has no sequence length to vary", q->model);
		return -1;
	}
	o.device = &q->device;
	o.seq = 1;
	if (!(j = zoo_generate(q->model, &o, err)))
		return -1;
	q->zopts.batch = (uint32_t)json_integer_value(json_object_get(json_object_get(j, "generator"), "batch"));
	json_decref(j);
	o.batch = q->zopts.batch;
	/* the longest seq the model builds: bisection on the zoo's answer */
	if (seq_builds(q->model, o, hi))
		lo = hi;
	while (hi - lo > 1) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (seq_builds(q->model, o, mid))
			lo = mid;
		else
			hi = mid;
	}
	q->limit = lo;
	return 0;
}

void cap_cache_release(struct cap_cache *c)
{
	for (int i = 0; i < CAP_CACHE_SLOTS; i++)
		if (c->slot[i].net) {
			route_release(&c->slot[i].r);
			net_free(c->slot[i].net);
		}
	memset(c, 0, sizeof(*c));
}

static int cached_net(struct cap_cache *c, const struct cap_query *q, uint32_t n, struct mp_net **net,
		      struct mp_route **r, struct mp_error *err)
{
	int victim = 0;

	for (int i = 0; i < CAP_CACHE_SLOTS; i++) {
		if (c->slot[i].net && c->slot[i].q == q && c->slot[i].n == n) {
			c->slot[i].used = ++c->clock;
			*net = c->slot[i].net;
			*r = &c->slot[i].r;
			return 0;
		}
		if (!c->slot[i].net || c->slot[i].used < c->slot[victim].used)
			victim = i;
	}
	if (c->slot[victim].net) {
		route_release(&c->slot[victim].r);
		net_free(c->slot[victim].net);
	}
	memset(&c->slot[victim], 0, sizeof(c->slot[victim]));
	if (!(*net = build(q, n, err)))
		return -1;
	if (route_build(*net, &c->slot[victim].r, err) < 0) {
		net_free(*net);
		return -1;
	}
	c->slot[victim] = (struct cap_cache_slot){ q, n, *net, c->slot[victim].r, ++c->clock };
	*r = &c->slot[victim].r;
	return 0;
}

/* Evaluate one row at size n: fits, and its time. */
static int eval(struct cap_cache *c, const struct cap_query *q, unsigned row, uint32_t n, bool *fits, double *ms,
		struct mp_error *err)
{
	struct mp_net *net;
	struct mp_route *rp;
	struct mp_layer_min lm;
	int rc = -1;

	*fits = false;
	*ms = 0;
	if (cached_net(c, q, n, &net, &rp, err) < 0)
		return -1;
#define r (*rp)
	policy_layer_min(net, &r, &lm);
	if (lm.bytes > q->usable_bytes) {
		rc = 0; /* no schedule at layer granularity fits */
		goto out;
	}
	if (row < MP_STRAT__COUNT) {
		struct mp_schedule base;
		struct mp_sim sim, bsim;

		rc = analysis_strategy(net, &r, (enum mp_strategy)row, &q->popts, &q->device, NULL, &sim, NULL, err);
		if (rc < 0)
			goto out;
		*fits = sim.peak_bytes <= q->usable_bytes;
		*ms = sim.time_ms;
		if (*fits && q->max_overhead >= 0) {
			sched_init(&base);
			policy_build(net, &r, MP_STRAT_LIVENESS, &q->popts, &base, NULL);
			rc = sim_run(net, &q->device, &base, &bsim, err);
			sched_release(&base);
			if (rc == 0) {
				*fits = sim.time_ms <= bsim.time_ms * (1 + q->max_overhead) + 1e-9;
				sim_release(&bsim);
			}
		}
		sim_release(&sim);
	} else {
		struct mp_plan_req req;
		struct mp_plan p;

		memset(&req, 0, sizeof(req));
		req.budget_bytes = q->usable_bytes;
		req.device = q->device;
		req.ws_mode = q->ws_mode;
		req.popts = q->popts;
		req.fit_only = q->max_overhead < 0;
		plan_init(&p);
		rc = plan_run(net, &r, (enum mp_planner)(row - MP_STRAT__COUNT), &req, &p, err);
		if (rc == 0) {
			*fits = p.fits && (q->max_overhead < 0 || p.overhead <= q->max_overhead + 1e-12);
			*ms = p.sim.time_ms;
		}
		plan_release(&p);
	}
out:
	return rc;
#undef r
}

int cap_eval(struct cap_cache *c, const struct cap_query *q, unsigned row, uint32_t n, bool *fits,
	     double *ms, struct mp_error *err)
{
	return eval(c, q, row, n, fits, ms, err);
}

/* Between lo (fits, or 0: "none") and hi (does not fit; 0: lo is the limit),
 * bisect to the largest size that fits and record it in res. */
static int bisect(struct cap_cache *c, const struct cap_query *q, unsigned row, uint32_t lo, double lo_ms, uint32_t hi,
		  struct cap_result *res, struct mp_error *err)
{
	bool fits;
	double ms;

	while (hi && hi - lo > 1) {
		uint32_t mid = lo + (hi - lo) / 2;

		res->evals++;
		if (eval(c, q, row, mid, &fits, &ms, err) < 0)
			return -1;
		if (fits) {
			lo = mid;
			lo_ms = ms;
		} else {
			hi = mid;
		}
	}
	res->max = lo;
	res->time_ms = lo ? lo_ms : 0;
	res->throughput = lo && lo_ms > 0 ? cap_per_step(q, lo) / (lo_ms / 1000.0) : 0;
	return 0;
}

/* Largest n in [lo, limit] with fits, given fits(lo) (lo may be 0: "none"):
 * doubling from lo, then bisection. */
static int search(struct cap_cache *c, const struct cap_query *q, unsigned row, uint32_t lo, double lo_ms,
		  struct cap_result *res, struct mp_error *err)
{
	uint32_t hi = 0;
	bool fits;
	double ms;

	/* doubling from lo until something does not fit */
	for (uint32_t step = 1;; step *= 2) {
		uint64_t n = (uint64_t)lo + step;

		if (n > q->limit) {
			if (lo == q->limit)
				break;
			n = q->limit;
		}
		res->evals++;
		if (eval(c, q, row, (uint32_t)n, &fits, &ms, err) < 0)
			return -1;
		if (!fits) {
			hi = (uint32_t)n;
			break;
		}
		lo = (uint32_t)n;
		lo_ms = ms;
		if (lo == q->limit)
			break;
		if (step > UINT32_MAX / 4)
			break;
	}
	return bisect(c, q, row, lo, lo_ms, hi, res, err);
}

/* From the search's answer to the exact one under the model's own nets
 * (generated at each size): max fits and max + 1 does not.  Galloping from
 * the estimate, then bisection: O(log |error|) exact evaluations. */
static int settle(struct cap_cache *c, const struct cap_query *exact, unsigned row, struct cap_result *r, struct mp_error *err)
{
	uint32_t lo = 0, hi, guess = r->max;
	bool fits = false;
	double ms = 0, lo_ms = 0;

	r->evals++;
	if (guess && eval(c, exact, row, guess, &fits, &ms, err) < 0)
		return -1;
	if (guess && fits)
		return search(c, exact, row, guess, ms, r, err); /* gallop up, bisect */
	/* gallop down to a size that fits (or none), then bisect */
	hi = guess ? guess : 1;
	for (uint32_t step = 1; guess && step < guess; step *= 2) {
		uint32_t n = guess - step;

		r->evals++;
		if (eval(c, exact, row, n, &fits, &ms, err) < 0)
			return -1;
		if (fits) {
			lo = n;
			lo_ms = ms;
			break;
		}
		hi = n;
	}
	return bisect(c, exact, row, lo, lo_ms, hi, r, err);
}

int cap_run(const struct cap_query *q0, struct cap_result res[CAP_N_ROWS], struct mp_error *err)
{
	struct cap_cache cache = { 0 }, *c = &cache; /* this run's: its queries are its own */
	struct cap_query fast = *q0;
	const struct cap_query *q = q0;
	struct mp_net *base = NULL;
	int rc = -1;

	memset(res, 0, CAP_N_ROWS * sizeof(*res));
	/* a generated model varied by batch: search on scaled copies of one
	 * generated net (its per-sample tensors are exact multiples of the
	 * batch), then settle each answer on the model's own nets */
	if (q0->model && q0->vary == CAP_VARY_BATCH) {
		struct zoo_opts o = q0->zopts;
		json_t *j;

		o.batch = 32;
		o.device = &q0->device;
		if (!(j = zoo_generate(q0->model, &o, err)))
			return -1;
		base = net_load_json(j, err);
		json_decref(j);
		if (!base)
			return -1;
		fast.model = NULL;
		fast.base = base;
		fast.compute_factor = fast.memory_factor = 1.0;
		q = &fast;
	}
	for (unsigned row = 0; row < CAP_N_ROWS; row++) {
		uint32_t lo = 0;
		double lo_ms = 0;
		bool fits;

		if (!(q->rows & (1u << row)))
			continue;
		/* start from a row this one cannot do worse than, if computed and
		 * no overhead bound makes the order invalid */
		if (q->max_overhead < 0) {
			int prev = row == 0 ? -1 : row < MP_STRAT__COUNT ? (int)row - 1 : MP_STRAT_LIVENESS;

			while (prev >= 0 && !(q->rows & (1u << prev)))
				prev = prev >= MP_STRAT__COUNT ? MP_STRAT_LIVENESS : prev - 1;
			if (prev >= 0 && res[prev].max) {
				lo = res[prev].max;
				res[row].evals++;
				if (eval(c, q, row, lo, &fits, &lo_ms, err) < 0)
					goto out;
				if (!fits) {
					lo = 0;
					lo_ms = 0;
				}
			}
		}
		if (search(c, q, row, lo, lo_ms, &res[row], err) < 0)
			goto out;
		if (q != q0 && settle(c, q0, row, &res[row], err) < 0)
			goto out;
	}
	rc = 0;
out:
	cap_cache_release(c);
	net_free(base);
	return rc;
}
