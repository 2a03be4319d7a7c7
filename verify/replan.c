/*
 * Re-planning from measured op times (TENSILE IV-E): per op, an
 * exponentially weighted moving average of the measured and the predicted
 * time, written back into the net file's times, and the plan's planner run
 * again on the corrected net under the plan's request; then what changed
 * between the two schedules.  O(ops + algorithms) for the correction,
 * the planner's cost for the plan, O(s log s) over swaps and recomputes for
 * the difference.
 */
#include "replan.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../analysis/base/jget.h"
#include "../analysis/jobs.h"
#include "../plan/arena.h"

double replan_ewma(double alpha, double measured, double predicted)
{
	return alpha * measured + (1 - alpha) * predicted;
}

void replan_factors(const struct mp_net *net, const struct mp_exec_op_time *t, double alpha, double *factor)
{
	for (uint32_t k = 0; k < net->n_ops; k++)
		/* f + alpha (m - f p) / p: exactly f when the measurement is the
		 * estimate, which (alpha m + (1 - alpha) f p) / p need not be */
		if (t[k].runs && t[k].pred_ms > 0)
			factor[k] += alpha * (t[k].meas_ms - factor[k] * t[k].pred_ms) / t[k].pred_ms;
}

double replan_change(const struct mp_net *net, const double *factor)
{
	double was = 0, now = 0;

	for (uint32_t k = 0; k < net->n_ops; k++) {
		was += net->ops[k].ms;
		now += factor[k] * net->ops[k].ms;
	}
	return was > 0 ? fabs(now - was) / was : 0;
}

/* A string key of the report that must be there and be `want`. */
static int report_string(const json_t *report, const char *key, const char **out, struct mp_error *err)
{
	json_t *v = json_object_get(report, key);

	if (!v) {
		mp_error_set(err, "%s: missing", key);
		return -1;
	}
	return jget_string(v, key, out, err);
}

/* One entry of "ops" into t. */
static int report_op(const json_t *x, const char *path, const struct mp_net *net, struct mp_exec_op_time *t,
		     struct mp_error *err)
{
	static const char *const keys[] = { "op", "phase", "runs", "predicted_ms", "measured_ms", NULL };
	char p[256];
	const char *name;
	int64_t runs;
	int32_t k;
	double pred, meas;

	if (jget_object(x, path, err) < 0 || jget_check_keys(x, path, keys, err) < 0)
		return -1;
	if (jget_string(json_object_get(x, "op"), jget_path(p, sizeof(p), path, "op"), &name, err) < 0)
		return -1;
	if ((k = net_find_op(net, name)) < 0) {
		mp_error_set(err, "%s: no op named '%s' in the plan's net", p, name);
		return -1;
	}
	if (t[k].runs) {
		mp_error_set(err, "%s: op '%s' listed twice", p, name);
		return -1;
	}
	if (jget_int(json_object_get(x, "runs"), jget_path(p, sizeof(p), path, "runs"), 1, UINT32_MAX, &runs, err) < 0 ||
	    jget_ms(json_object_get(x, "predicted_ms"), jget_path(p, sizeof(p), path, "predicted_ms"), &pred, err) < 0 ||
	    jget_ms(json_object_get(x, "measured_ms"), jget_path(p, sizeof(p), path, "measured_ms"), &meas, err) < 0)
		return -1;
	t[k] = (struct mp_exec_op_time){ (uint32_t)runs, pred, meas };
	return 0;
}

/* OBJ.KEY.SUB, in ms */
static int report_ms(const json_t *report, const char *obj, const char *key, const char *sub, double *out,
		     struct mp_error *err)
{
	char p[64];
	json_t *v = json_object_get(json_object_get(report, obj), key);

	if (sub)
		v = json_object_get(v, sub);
	snprintf(p, sizeof(p), "%s.%s%s%s", obj, key, sub ? "." : "", sub ? sub : "");
	if (!v) {
		mp_error_set(err, "%s: missing", p);
		return -1;
	}
	return jget_ms(v, p, out, err);
}

int replan_read_report(const json_t *report, const struct mp_net *net, const char *net_sha256,
		       struct mp_exec_op_time *t, struct mp_replan_report *rep, struct mp_error *err)
{
	const char *s;
	json_t *ops;
	char p[64];

	memset(t, 0, net->n_ops * sizeof(*t));
	memset(rep, 0, sizeof(*rep));
	if (jget_object(report, "(top level)", err) < 0 || report_string(report, "format", &s, err) < 0)
		return -1;
	if (strcmp(s, "memplan-verify/1")) {
		mp_error_set(err, "format: '%s', expected \"memplan-verify/1\" (a memplan verify --report)", s);
		return -1;
	}
	if (json_object_get(report, "violation") || json_object_get(report, "error")) {
		mp_error_set(err, "%s: the run stopped before it measured anything",
			     json_object_get(report, "violation") ? "violation" : "error");
		return -1;
	}
	if (!json_object_get(report, "net_sha256")) {
		mp_error_set(err, "net_sha256: missing (a report without per-op times: run memplan verify --report again)");
		return -1;
	}
	if (report_string(report, "net_sha256", &s, err) < 0)
		return -1;
	if (strcmp(s, net_sha256)) {
		mp_error_set(err, "net_sha256: the report measured another net than the plan's (%.12s..., the plan's %.12s...)",
			     s, net_sha256);
		return -1;
	}
	if (!json_object_get(report, "time_scale")) {
		mp_error_set(err, "time_scale: missing");
		return -1;
	}
	if (jget_positive(json_object_get(report, "time_scale"), "time_scale", &rep->time_scale, err) < 0 ||
	    report_ms(report, "timing", "timeline_ms", NULL, &rep->time_ms, err) < 0 ||
	    report_ms(report, "total", "stall_ms", "measured", &rep->stall_ms, err) < 0)
		return -1;
	rep->time_ms /= rep->time_scale;
	rep->stall_ms /= rep->time_scale;
	if (!(ops = json_object_get(report, "ops"))) {
		mp_error_set(err, "ops: missing");
		return -1;
	}
	if (!json_is_array(ops)) {
		mp_error_set(err, "ops: expected an array, got %s", jget_type(ops));
		return -1;
	}
	for (size_t i = 0; i < json_array_size(ops); i++)
		if (report_op(json_array_get(ops, i), jget_index(p, sizeof(p), "ops", i), net, t, err) < 0)
			return -1;
	rep->n_ops = (uint32_t)json_array_size(ops);
	return 0;
}

/* Multiply the number at obj[key], where there is one. */
static void scale_key(json_t *obj, const char *key, double f)
{
	json_t *v = json_object_get(obj, key);

	if (json_is_number(v))
		json_object_set_new(obj, key, json_real(json_number_value(v) * f));
}

/* A layer's phase: its "time" and its algorithms' times of that phase. */
static void scale_layer(json_t *layer, const char *phase, double f)
{
	json_t *algos = json_object_get(layer, "algos");

	scale_key(json_object_get(layer, "time"), phase, f);
	for (size_t k = 0; k < json_array_size(algos); k++)
		scale_key(json_object_get(json_array_get(algos, k), "time"), phase, f);
}

/* An explicit op: its "time" and its algorithms'. */
static void scale_op(json_t *op, double f)
{
	json_t *algos = json_object_get(op, "algos");

	scale_key(op, "time", f);
	for (size_t k = 0; k < json_array_size(algos); k++)
		scale_key(json_array_get(algos, k), "time", f);
}

/* "replan (alpha A) of SOURCE", SOURCE without a replan's own prefix. */
static json_t *time_source_json(const json_t *root, double alpha)
{
	const char *old = json_string_value(json_object_get(root, "time_source")), *of;
	char buf[512];

	if (old && !strncmp(old, "replan (", 8) && (of = strstr(old, ") of ")))
		old = of + 5;
	snprintf(buf, sizeof(buf), "replan (alpha %g) of %s", alpha, old ? old : "the net's times");
	return json_string(buf);
}

json_t *replan_net_json(const json_t *net_root, const struct mp_net *net, const double *factor, double alpha,
			struct mp_error *err)
{
	json_t *root, *layers, *ops;

	if (json_array_size(json_object_get(net_root, "layers")) != net->n_layers) {
		mp_error_set(err, "the net file has %zu layers, the net %u", json_array_size(json_object_get(net_root, "layers")),
			     net->n_layers);
		return NULL;
	}
	root = json_deep_copy(net_root);
	layers = json_object_get(root, "layers");
	ops = json_object_get(root, "ops");
	for (uint32_t k = 0; k < net->n_ops; k++) {
		const struct mp_op *op = &net->ops[k];

		if (factor[k] == 1)
			continue;
		if (op->json_index >= 0) {
			json_t *o = json_array_get(ops, (size_t)op->json_index);

			if (!o) {
				mp_error_set(err, "ops[%d]: not in the net file", op->json_index);
				json_decref(root);
				return NULL;
			}
			scale_op(o, factor[k]);
		} else if (op->layer >= 0) {
			const struct mp_layer *ly = &net->layers[op->layer];
			json_t *o = json_array_get(layers, (size_t)op->layer);

			if ((int32_t)k == ly->fwd_op)
				scale_layer(o, "fwd", factor[k]);
			else if ((int32_t)k == ly->bwd_op)
				scale_layer(o, "bwd", factor[k]);
			else if ((int32_t)k == ly->upd_op)
				scale_key(json_object_get(o, "time"), "update", factor[k]);
		}
	}
	json_object_set_new(root, "time_source", time_source_json(net_root, alpha));
	return root;
}

/*
 * A plan of several jobs (jobs: its "jobs" array, or the array of their net
 * files that an earlier re-plan made; net: their merge): each job's net file
 * corrected by the factors of its ops (the merge's ops op_begin..op_end,
 * renamed with the job's prefix), the corrected nets merged again at the
 * recorded offsets, and each job planned alone under planner for the alone
 * time its overhead is measured against, as memplan plan does.  *arr the
 * corrected net files, *merged their merge.  0, or -1 with *err naming the
 * job.
 */
static int corrected_jobs(const json_t *jobs, const struct mp_net *net, const struct mp_plan_req *req,
			  enum mp_planner planner, const double *factor, double alpha, json_t **arr,
			  struct mp_net **merged, struct mp_error *err)
{
	struct mp_net *nets[JOBS_MAX] = { NULL };
	const char *files[JOBS_MAX];
	double offsets[JOBS_MAX];
	uint32_t n = net->n_jobs, failed;
	int rc = -1;

	*arr = json_array();
	*merged = NULL;
	if (json_array_size(jobs) != n) {
		mp_error_set(err, "the plan has %zu jobs, its merged net %u", json_array_size(jobs), n);
		goto out;
	}
	for (uint32_t j = 0; j < n; j++) {
		const struct mp_job *J = &net->jobs[j];
		json_t *x = json_array_get(jobs, j), *nj = json_object_get(x, "format") ? x : json_object_get(x, "net");
		struct mp_net *job = nj ? net_load_json(nj, err) : NULL;
		double *fj;
		json_t *cj;

		if (!nj)
			mp_error_set(err, "expected a job with its \"net\", or a net file");
		if (!job) {
			mp_error_prefix(err, "jobs[%u]: ", j);
			goto out;
		}
		if (J->op_end - J->op_begin != job->n_ops) {
			mp_error_set(err, "jobs[%u]: %u ops, the merge holds %u of them", j, job->n_ops, J->op_end - J->op_begin);
			net_free(job);
			goto out;
		}
		fj = mp_xmalloc((job->n_ops + 1) * sizeof(*fj));
		for (uint32_t k = 0; k < job->n_ops; k++)
			fj[k] = factor[J->op_begin + k];
		cj = replan_net_json(nj, job, fj, alpha, err);
		free(fj);
		net_free(job);
		if (!cj) {
			mp_error_prefix(err, "jobs[%u]: ", j);
			goto out;
		}
		json_array_append_new(*arr, cj);
		if (!(nets[j] = net_load_json(cj, err))) {
			mp_error_prefix(err, "jobs[%u], corrected: ", j);
			goto out;
		}
		offsets[j] = J->offset_ms;
		files[j] = J->file;
	}
	if (!(*merged = jobs_merge((const struct mp_net *const *)nets, n, offsets, files, NULL, err)))
		goto out;
	if (plan_jobs_alone(*merged, nets, planner, req, &failed, err) < 0) {
		/* "internal ..." stays first: the caller's exit status */
		size_t len = strlen(err->msg);

		snprintf(err->msg + len, sizeof(err->msg) - len, " (%s, planned alone)", (*merged)->jobs[failed].name);
		goto out;
	}
	rc = 0;
out:
	for (uint32_t j = 0; j < n && j < JOBS_MAX; j++)
		net_free(nets[j]);
	if (rc < 0) {
		net_free(*merged);
		*merged = NULL;
		json_decref(*arr);
		*arr = NULL;
	}
	return rc;
}

int replan_run(const json_t *net_json, const struct mp_net *net, const struct mp_plan_req *req,
	       enum mp_planner planner, const double *factor, double alpha, struct mp_replan *out,
	       struct mp_error *err)
{
	struct mp_route route;

	memset(out, 0, sizeof(*out));
	plan_init(&out->plan);
	if (net->n_jobs) {
		if (corrected_jobs(net_json, net, req, planner, factor, alpha, &out->net_json, &out->net, err) < 0)
			return -1;
	} else {
		if (!(out->net_json = replan_net_json(net_json, net, factor, alpha, err)))
			return -1;
		if (!(out->net = net_load_json(out->net_json, err))) {
			mp_error_prefix(err, "the corrected net: ");
			goto fail;
		}
	}
	if (route_build(out->net, &route, err) < 0)
		goto fail;
	if (plan_run(out->net, &route, planner, req, &out->plan, err) < 0) {
		route_release(&route);
		goto fail;
	}
	route_release(&route);
	if (out->plan.fits && out->plan.arena_bytes > out->plan.max_live_bytes)
		plan_smallest_arena(out->net, &out->plan, req->budget_bytes);
	return 0;
fail:
	replan_release(out);
	return -1;
}

void replan_release(struct mp_replan *r)
{
	plan_release(&r->plan);
	net_free(r->net);
	json_decref(r->net_json);
	r->net = NULL;
	r->net_json = NULL;
}

/* ---- what changed ---- */

/* A swap or recompute of one plan: its kind, name, occurrence, the compute
 * issued before it, and its action. */
struct event {
	enum mp_act_kind kind;
	const char *name, *trigger;
	uint32_t occ, pos;
};

/* By kind and name, then by x and y (both of a and b's own field). */
static int event_key_cmp(const struct event *a, const struct event *b, uint32_t x, uint32_t y)
{
	int c;

	if (a->kind != b->kind)
		return a->kind < b->kind ? -1 : 1;
	if ((c = strcmp(a->name, b->name)))
		return c;
	return x < y ? -1 : x > y;
}

/* By kind, name and position: the order that numbers occurrences. */
static int event_pos_cmp(const void *pa, const void *pb)
{
	const struct event *a = pa, *b = pb;

	return event_key_cmp(a, b, a->pos, b->pos);
}

static int event_cmp(const void *pa, const void *pb)
{
	const struct event *a = pa, *b = pb;

	return event_key_cmp(a, b, a->occ, b->occ);
}

/* The swaps and recomputes of p, sorted by event_cmp; *n of them. */
static struct event *events(const struct mp_net *net, const struct mp_plan *p, uint32_t *n)
{
	const struct mp_schedule *s = &p->sched;
	struct event *e = mp_xmalloc((s->n + 1) * sizeof(*e));
	const char *trigger = "";

	*n = 0;
	for (uint32_t i = 0; i < s->n; i++) {
		const struct mp_action *a = &s->a[i];

		if (a->kind == MP_ACT_SWAP_OUT || a->kind == MP_ACT_SWAP_IN)
			e[(*n)++] = (struct event){ a->kind, net->tensors[a->tensor].name, trigger, 0, i };
		else if (a->kind == MP_ACT_RECOMPUTE)
			e[(*n)++] = (struct event){ a->kind, net->ops[a->op].name, trigger, 0, i };
		if (a->kind == MP_ACT_COMPUTE || a->kind == MP_ACT_RECOMPUTE)
			trigger = net->ops[a->op].name;
	}
	qsort(e, *n, sizeof(*e), event_pos_cmp);
	for (uint32_t i = 1; i < *n; i++)
		if (e[i].kind == e[i - 1].kind && !strcmp(e[i].name, e[i - 1].name))
			e[i].occ = e[i - 1].occ + 1;
	return e;
}

static void add_change(struct mp_replan_diff *d, enum mp_replan_what what, const struct event *e, const char *from,
		       const char *to)
{
	d->c[d->n++] = (struct mp_replan_change){ what, e->kind, e->name, from, to };
}

void replan_diff(const struct mp_net *na, const struct mp_plan *a, const struct mp_net *nb,
		 const struct mp_plan *b, struct mp_replan_diff *out)
{
	uint32_t n_a, n_b, i = 0, j = 0;
	struct event *ea = events(na, a, &n_a), *eb = events(nb, b, &n_b);

	memset(out, 0, sizeof(*out));
	out->c = mp_xmalloc((n_a + n_b + 1) * sizeof(*out->c));
	while (i < n_a || j < n_b) {
		int c = i == n_a ? 1 : j == n_b ? -1 : event_cmp(&ea[i], &eb[j]);
		const struct event *e = c <= 0 ? &ea[i] : &eb[j];
		bool swap = e->kind != MP_ACT_RECOMPUTE;

		if (c == 0) {
			if (!swap)
				out->recomputes_kept++;
			else if (strcmp(ea[i].trigger, eb[j].trigger))
				out->swaps_moved++, add_change(out, REPLAN_SWAP_MOVED, e, ea[i].trigger, eb[j].trigger);
			else
				out->swaps_kept++;
			i++, j++;
		} else if (c < 0) {
			if (swap)
				out->swaps_removed++, add_change(out, REPLAN_SWAP_REMOVED, e, e->trigger, NULL);
			else
				out->recomputes_removed++, add_change(out, REPLAN_RECOMPUTE_REMOVED, e, e->trigger, NULL);
			i++;
		} else {
			if (swap)
				out->swaps_added++, add_change(out, REPLAN_SWAP_ADDED, e, NULL, e->trigger);
			else
				out->recomputes_added++, add_change(out, REPLAN_RECOMPUTE_ADDED, e, NULL, e->trigger);
			j++;
		}
	}
	free(ea);
	free(eb);
}

void replan_diff_release(struct mp_replan_diff *d)
{
	free(d->c);
	d->c = NULL;
	d->n = 0;
}
