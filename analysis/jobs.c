/*
 * Several jobs on one GPU (TENSILE I, III-A: asynchronous workloads whose
 * peaks can coincide; the global peak).  The merge renames each job's
 * tensors, ops and layers into one Net and fixes its order by simulating
 * the shared compute engine under processor sharing (k jobs running: each
 * at 1/k speed).  O(ops log ops) per merge; the offset search merges and
 * simulates liveness once per candidate (three).
 */
#include "jobs.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "policy.h"
#include "route.h"
#include "sim.h"

/* One op of one job on the shared engine. */
struct start {
	double ms;
	uint32_t job, step;
};

static int cmp_start(const void *a, const void *b)
{
	const struct start *x = a, *y = b;

	if (x->ms != y->ms)
		return x->ms < y->ms ? -1 : 1;
	if (x->job != y->job)
		return x->job < y->job ? -1 : 1;
	return x->step < y->step ? -1 : x->step > y->step;
}

/*
 * Processor sharing: job j runs the ops of its route one after the other
 * from offsets[j]; while k jobs have an op running each gets 1/k of the
 * engine.  Fills st[] (the caller's, one per op of every job, grouped by job
 * in route order) with each op's start.  Event by event: the next op to
 * finish or the next job to arrive, O(ops * jobs).
 */
static void ps_starts(const struct mp_net *const *nets, const struct mp_route *routes, uint32_t n,
		      const double *offsets, struct start *st)
{
	uint32_t k[JOBS_MAX], base[JOBS_MAX], total = 0;
	double rem[JOBS_MAX], t = 0;
	bool arrived[JOBS_MAX];

	for (uint32_t j = 0; j < n; j++) {
		base[j] = total;
		total += routes[j].n;
		k[j] = 0;
		arrived[j] = false;
	}
	for (;;) {
		uint32_t active = 0;
		double next_arrival = INFINITY, dt;
		int fin = -1;

		/* arrivals, and ops that end at t (zero time left) */
		for (uint32_t j = 0; j < n; j++) {
			if (!arrived[j] && offsets[j] <= t) {
				arrived[j] = true;
				if (routes[j].n) {
					st[base[j]] = (struct start){ t, j, 0 };
					rem[j] = nets[j]->ops[routes[j].op[0]].ms;
				}
			}
			while (arrived[j] && k[j] < routes[j].n && rem[j] <= 0) {
				if (++k[j] < routes[j].n) {
					st[base[j] + k[j]] = (struct start){ t, j, k[j] };
					rem[j] = nets[j]->ops[routes[j].op[k[j]]].ms;
				}
			}
			if (!arrived[j])
				next_arrival = fmin(next_arrival, offsets[j]);
			else if (k[j] < routes[j].n)
				active++;
		}
		if (!active && next_arrival == INFINITY)
			return;
		dt = next_arrival - t;
		for (uint32_t j = 0; j < n; j++)
			if (arrived[j] && k[j] < routes[j].n && rem[j] * active < dt) {
				dt = rem[j] * active;
				fin = (int)j;
			}
		for (uint32_t j = 0; j < n; j++)
			if (arrived[j] && k[j] < routes[j].n)
				rem[j] = (int)j == fin || rem[j] * active <= dt ? 0 : rem[j] - dt / active;
		t = fin >= 0 || next_arrival == INFINITY ? t + dt : next_arrival;
	}
}

/* Job names: the nets' names when they are distinct and not empty, else
 * j0, j1, ...; into names[] (the caller's arena). */
static void job_names(const struct mp_net *const *nets, uint32_t n, struct mp_arena *a, const char **names)
{
	bool distinct = true;
	char buf[32];

	for (uint32_t j = 0; j < n && distinct; j++) {
		distinct = nets[j]->name && nets[j]->name[0] && !strchr(nets[j]->name, '/');
		for (uint32_t i = 0; i < j && distinct; i++)
			distinct = strcmp(nets[i]->name, nets[j]->name) != 0;
	}
	for (uint32_t j = 0; j < n; j++) {
		snprintf(buf, sizeof(buf), "j%u", j);
		names[j] = mp_arena_strdup(a, distinct ? nets[j]->name : buf);
	}
}

static const char *prefixed(struct mp_arena *a, const char *prefix, const char *name)
{
	size_t lp = strlen(prefix), ln = strlen(name);
	char *s = mp_arena_alloc_raw(a, lp + ln + 1);

	memcpy(s, prefix, lp);
	memcpy(s + lp, name, ln + 1);
	return s;
}

static void *arena_copy(struct mp_arena *a, const void *p, size_t bytes)
{
	void *q;

	if (!p || !bytes)
		return NULL;
	q = mp_arena_alloc_raw(a, bytes);
	memcpy(q, p, bytes);
	return q;
}

#define SHIFT(x, by) ((x) >= 0 ? (x) + (int32_t)(by) : (x))

/* Copy job j's ops (ids shifted by the job's ranges, names prefixed). */
static void copy_ops(struct mp_net *m, const struct mp_net *src, const struct mp_job *J)
{
	for (uint32_t o = 0; o < src->n_ops; o++) {
		const struct mp_op *s = &src->ops[o];
		struct mp_op *d = &m->ops[J->op_begin + o];

		*d = *s;
		d->name = prefixed(&m->arena, J->prefix, s->name);
		d->in = arena_copy(&m->arena, s->in, s->n_in * sizeof(*s->in));
		d->out = arena_copy(&m->arena, s->out, s->n_out * sizeof(*s->out));
		for (uint32_t k = 0; k < s->n_in; k++)
			d->in[k] += (int32_t)J->tensor_begin;
		for (uint32_t k = 0; k < s->n_out; k++)
			d->out[k] += (int32_t)J->tensor_begin;
		d->ws = SHIFT(s->ws, J->tensor_begin);
		d->fwd = SHIFT(s->fwd, J->op_begin);
		d->layer = SHIFT(s->layer, J->layer_begin);
		d->index = J->op_begin + s->index;
		d->algos = arena_copy(&m->arena, s->algos, s->n_algos * sizeof(*s->algos));
		for (uint32_t k = 0; k < s->n_algos; k++)
			d->algos[k].name = mp_arena_strdup(&m->arena, s->algos[k].name);
		d->in_json = arena_copy(&m->arena, s->in_json, s->n_in * sizeof(*s->in_json));
	}
}

static void copy_layers(struct mp_net *m, const struct mp_net *src, const struct mp_job *J)
{
	for (uint32_t l = 0; l < src->n_layers; l++) {
		const struct mp_layer *s = &src->layers[l];
		struct mp_layer *d = &m->layers[J->layer_begin + l];

		*d = *s;
		d->name = prefixed(&m->arena, J->prefix, s->name);
		d->inputs = arena_copy(&m->arena, s->inputs, s->n_inputs * sizeof(*s->inputs));
		for (uint32_t k = 0; k < s->n_inputs; k++)
			d->inputs[k] = SHIFT(s->inputs[k], J->layer_begin);
		d->params = arena_copy(&m->arena, s->params, s->n_params * sizeof(*s->params));
		d->out = SHIFT(s->out, J->tensor_begin);
		d->dout = SHIFT(s->dout, J->tensor_begin);
		d->mask = SHIFT(s->mask, J->tensor_begin);
		d->stats = SHIFT(s->stats, J->tensor_begin);
		d->fwd_op = SHIFT(s->fwd_op, J->op_begin);
		d->bwd_op = SHIFT(s->bwd_op, J->op_begin);
		d->upd_op = SHIFT(s->upd_op, J->op_begin);
	}
}

/* The merged net's own fields: job 0's settings, every job's arrays. */
static struct mp_net *merged_new(const struct mp_net *const *nets, uint32_t n, const char **names)
{
	struct mp_net *m = mp_xcalloc(1, sizeof(*m));
	uint32_t nt = 0, no = 0, nl = 0;
	size_t len = 1;
	char *name;

	m->dtype = nets[0]->dtype;
	m->optimizer = nets[0]->optimizer;
	m->grads_keep = nets[0]->grads_keep;
	m->framework = nets[0]->framework;
	m->precision = nets[0]->precision;
	m->has_device = nets[0]->has_device;
	m->device = nets[0]->device;
	m->batch = nets[0]->batch;
	m->time_source = nets[0]->time_source ? mp_arena_strdup(&m->arena, nets[0]->time_source) : NULL;
	for (uint32_t j = 0; j < n; j++) {
		nt += nets[j]->n_tensors;
		no += nets[j]->n_ops;
		nl += nets[j]->n_layers;
		m->n_untimed += nets[j]->n_untimed;
		len += strlen(names[j]) + 1;
	}
	name = mp_arena_alloc(&m->arena, len);
	for (uint32_t j = 0; j < n; j++) {
		if (j)
			strcat(name, "+");
		strcat(name, names[j]);
	}
	m->name = name;
	m->n_tensors = nt;
	m->n_ops = no;
	m->n_layers = nl;
	m->tensors = mp_xmalloc((nt + 1) * sizeof(*m->tensors));
	m->ops = mp_xmalloc((no + 1) * sizeof(*m->ops));
	m->layers = mp_xmalloc((nl + 1) * sizeof(*m->layers));
	m->order = mp_arena_alloc(&m->arena, (no + 1) * sizeof(*m->order));
	m->n_jobs = n;
	m->jobs = mp_arena_alloc(&m->arena, n * sizeof(*m->jobs));
	return m;
}

/* A job alone under liveness on dev: its iteration time, peak and the route
 * step of its peak op (each out pointer may be NULL).  0, or -1 with *err. */
static int liveness_alone(const struct mp_net *net, const struct mp_route *r, const struct mp_device *dev,
			  double *ms, uint64_t *peak, uint32_t *step, struct mp_error *err)
{
	struct mp_policy_opts po;
	struct mp_schedule s;
	struct mp_sim sim;
	int rc;

	policy_opts_default(&po);
	sched_init(&s);
	policy_build(net, r, MP_STRAT_LIVENESS, &po, &s, NULL);
	rc = sim_run(net, dev, &s, &sim, err);
	sched_release(&s);
	if (rc < 0)
		return -1;
	if (ms)
		*ms = sim.time_ms;
	if (peak)
		*peak = sim.peak_bytes;
	if (step)
		*step = sim.n_steps ? r->pos[sim.steps[sim.peak_step].op] : 0;
	sim_release(&sim);
	return 0;
}

static int run_alone(const struct mp_net *net, const struct mp_route *r, const struct mp_device *dev,
		     struct mp_job *J, struct mp_error *err)
{
	return liveness_alone(net, r, dev, &J->alone_ms, &J->alone_peak, NULL, err);
}

/* Route every job: 0, or -1 with *err naming the job. */
static int route_jobs(const struct mp_net *const *nets, uint32_t n, struct mp_route *routes, struct mp_error *err)
{
	for (uint32_t j = 0; j < n; j++)
		if (route_build(nets[j], &routes[j], err) < 0) {
			mp_error_prefix(err, "job %u: ", j);
			while (j-- > 0)
				route_release(&routes[j]);
			return -1;
		}
	return 0;
}

static int check_jobs(uint32_t n, const double *offsets, struct mp_error *err)
{
	if (n < 1 || n > JOBS_MAX) {
		mp_error_set(err, "%u jobs: expected 1 to %u", n, JOBS_MAX);
		return -1;
	}
	for (uint32_t j = 0; j < n; j++)
		if (!(offsets[j] >= 0) || offsets[j] > 1e9) {
			mp_error_set(err, "job %u: offset %g ms: expected 0 to 1e9 ms", j, offsets[j]);
			return -1;
		}
	return 0;
}

struct mp_net *jobs_merge(const struct mp_net *const *nets, uint32_t n, const double *offsets_ms,
			  const char *const *files, const struct mp_device *dev, struct mp_error *err)
{
	struct mp_route routes[JOBS_MAX];
	const char *names[JOBS_MAX];
	struct mp_device dflt;
	struct start *st;
	struct mp_net *m;
	uint32_t total = 0, nt = 0, no = 0, nl = 0;

	if (check_jobs(n, offsets_ms, err) < 0 || route_jobs(nets, n, routes, err) < 0)
		return NULL;
	if (!dev) {
		device_default(&dflt);
		dev = &dflt;
	}
	{
		struct mp_arena tmp = { 0 };

		job_names(nets, n, &tmp, names);
		m = merged_new(nets, n, names);
		for (uint32_t j = 0; j < n; j++)
			names[j] = mp_arena_strdup(&m->arena, names[j]);
		mp_arena_release(&tmp);
	}
	for (uint32_t j = 0; j < n; j++) {
		struct mp_job *J = &m->jobs[j];
		const struct mp_net *s = nets[j];

		J->name = names[j];
		J->prefix = prefixed(&m->arena, names[j], "/");
		J->file = files && files[j] ? mp_arena_strdup(&m->arena, files[j]) : NULL;
		J->offset_ms = offsets_ms[j];
		J->op_begin = no;
		J->op_end = no += s->n_ops;
		J->tensor_begin = nt;
		J->tensor_end = nt += s->n_tensors;
		J->layer_begin = nl;
		J->layer_end = nl += s->n_layers;
		for (uint32_t t = 0; t < s->n_tensors; t++) {
			m->tensors[J->tensor_begin + t] = s->tensors[t];
			m->tensors[J->tensor_begin + t].name = prefixed(&m->arena, J->prefix, s->tensors[t].name);
			m->tensors[J->tensor_begin + t].producer = SHIFT(s->tensors[t].producer, J->op_begin);
			m->tensors[J->tensor_begin + t].layer = SHIFT(s->tensors[t].layer, J->layer_begin);
		}
		copy_ops(m, s, J);
		copy_layers(m, s, J);
		total += routes[j].n;
		if (run_alone(s, &routes[j], dev, J, err) < 0) {
			mp_error_prefix(err, "job %u: ", j);
			net_free(m);
			m = NULL;
			goto out;
		}
	}
	st = mp_xmalloc((total + 1) * sizeof(*st));
	ps_starts(nets, routes, n, offsets_ms, st);
	qsort(st, total, sizeof(*st), cmp_start);
	for (uint32_t i = 0; i < total; i++)
		m->order[i] = (int32_t)m->jobs[st[i].job].op_begin + routes[st[i].job].op[st[i].step];
	free(st);
out:
	for (uint32_t j = 0; j < n; j++)
		route_release(&routes[j]);
	return m;
}

int jobs_liveness_peak(const struct mp_net *net, const struct mp_device *dev, uint64_t *peak,
		       struct mp_error *err)
{
	struct mp_route r;
	struct mp_job J;

	if (route_build(net, &r, err) < 0)
		return -1;
	if (run_alone(net, &r, dev, &J, err) < 0) {
		route_release(&r);
		return -1;
	}
	route_release(&r);
	*peak = J.alone_peak;
	return 0;
}

/* Job j's liveness peak op alone (its route step) into *step. */
static int peak_step(const struct mp_net *net, const struct mp_route *r, const struct mp_device *dev,
		     uint32_t *step, struct mp_error *err)
{
	return liveness_alone(net, r, dev, NULL, NULL, step, err);
}

/* Offsets that make each job's peak step (peak[j], its route step) start
 * together, from the starts st_ms[j] of those steps at offsets cur[]. */
static void align(uint32_t n, const double *cur, const double *st_ms, double *out)
{
	double late = 0, low = INFINITY;

	for (uint32_t j = 0; j < n; j++)
		late = fmax(late, st_ms[j]);
	for (uint32_t j = 0; j < n; j++) {
		out[j] = cur[j] + late - st_ms[j];
		low = fmin(low, out[j]);
	}
	for (uint32_t j = 0; j < n; j++)
		out[j] -= low; /* the earliest job starts at 0 */
}

int jobs_worst_offsets(const struct mp_net *const *nets, uint32_t n, const struct mp_device *dev,
		       double *offsets_ms, uint32_t *tried, struct mp_error *err)
{
	struct mp_route routes[JOBS_MAX];
	uint32_t step[JOBS_MAX], total = 0;
	double cand[3][JOBS_MAX], st_ms[JOBS_MAX] = { 0 };
	uint64_t worst = 0;
	struct mp_device dflt;
	struct start *st;
	int rc = -1;

	*tried = 0;
	memset(cand, 0, sizeof(cand));
	if (check_jobs(n, cand[0], err) < 0 || route_jobs(nets, n, routes, err) < 0)
		return -1;
	if (!dev) {
		device_default(&dflt);
		dev = &dflt;
	}
	for (uint32_t j = 0; j < n; j++) {
		if (peak_step(nets[j], &routes[j], dev, &step[j], err) < 0)
			goto out;
		total += routes[j].n;
		/* alone: the peak op starts after the ops before it */
		st_ms[j] = 0;
		for (uint32_t i = 0; i < step[j]; i++)
			st_ms[j] += nets[j]->ops[routes[j].op[i]].ms;
	}
	align(n, cand[0], st_ms, cand[1]);
	/* on the shared engine: where those ops start at cand[1], aligned again */
	st = mp_xmalloc((total + 1) * sizeof(*st));
	ps_starts(nets, routes, n, cand[1], st);
	for (uint32_t j = 0, b = 0; j < n; b += routes[j].n, j++)
		st_ms[j] = st[b + step[j]].ms;
	free(st);
	align(n, cand[1], st_ms, cand[2]);
	for (uint32_t c = 0; c < 3; c++) {
		struct mp_net *m;
		uint64_t peak;
		bool same = false;

		for (uint32_t p = 0; p < c && !same; p++)
			same = !memcmp(cand[p], cand[c], n * sizeof(double));
		if (same)
			continue;
		if (!(m = jobs_merge(nets, n, cand[c], NULL, dev, err)))
			goto out;
		rc = jobs_liveness_peak(m, dev, &peak, err);
		net_free(m);
		if (rc < 0)
			goto out;
		rc = -1;
		++*tried;
		if (*tried == 1 || peak > worst) {
			worst = peak;
			memcpy(offsets_ms, cand[c], n * sizeof(double));
		}
	}
	rc = 0;
out:
	for (uint32_t j = 0; j < n; j++)
		route_release(&routes[j]);
	return rc;
}

uint32_t jobs_of_op(const struct mp_net *net, int32_t op)
{
	uint32_t lo = 0, hi = net->n_jobs;

	if (!net->n_jobs)
		return 0;
	while (hi - lo > 1) {
		uint32_t mid = (lo + hi) / 2;

		if ((uint32_t)op >= net->jobs[mid].op_begin)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

void jobs_times(const struct mp_net *net, const struct mp_schedule *s, double *ms)
{
	double first[JOBS_MAX], last[JOBS_MAX];

	for (uint32_t j = 0; j < net->n_jobs; j++) {
		first[j] = INFINITY;
		last[j] = 0;
	}
	for (uint32_t i = 0; i < s->n; i++) {
		const struct mp_action *a = &s->a[i];
		uint32_t j;

		if (a->kind != MP_ACT_COMPUTE && a->kind != MP_ACT_RECOMPUTE)
			continue;
		j = jobs_of_op(net, a->op);
		if (a->kind == MP_ACT_COMPUTE)
			first[j] = fmin(first[j], a->start_ms);
		last[j] = fmax(last[j], a->end_ms);
	}
	for (uint32_t j = 0; j < net->n_jobs; j++)
		ms[j] = first[j] == INFINITY ? 0 : last[j] - first[j];
}
