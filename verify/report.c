/*
 * Predicted vs measured (memplan verify): the plan's simulation (sim_run's
 * per-action times and resident bytes) against an executor's measurement of
 * the same actions, per phase and in total, with the tolerance verdicts, and
 * the --report JSON with per-step and per-action figures.  Both sides are
 * reduced by the same rules so that they compare step by step (DESIGN.md
 * "One pipeline, one schedule, one simulator").  O(actions).
 */
#include "report.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool engine_compute(enum mp_act_kind k)
{
	return k != MP_ACT_SWAP_IN && k != MP_ACT_SWAP_OUT;
}

/* Phase of every action: that of the next compute action, the last
 * compute's for actions after it (sim_run attributes memory events to the
 * step whose compute ends at or after them).  [n] malloc'd. */
static int *action_phases(const struct mp_net *net, const struct mp_schedule *s)
{
	int *ph = mp_xmalloc((s->n + 1) * sizeof(*ph));
	int cur = -1, last = EXEC_ROW_FWD;

	for (uint32_t i = 0; i < s->n; i++)
		if (s->a[i].kind == MP_ACT_COMPUTE)
			last = (int)net->ops[s->a[i].op].phase;
	for (uint32_t i = s->n; i-- > 0;) {
		if (s->a[i].kind == MP_ACT_COMPUTE)
			cur = (int)net->ops[s->a[i].op].phase;
		ph[i] = cur >= 0 ? cur : last;
	}
	return ph;
}

static double gbps(double bytes, double busy_wall_ms, double scale)
{
	/* bytes per model millisecond / 1e6 = GB/s of the modelled link */
	return busy_wall_ms > 0 ? bytes * scale / busy_wall_ms / 1e6 : 0;
}

static double dev(double meas, double pred)
{
	if (pred > 0)
		return meas / pred - 1;
	return meas > 0 ? INFINITY : 0;
}

void exec_compare(const struct mp_net *net, const struct mp_plan *p, const struct mp_exec_result *r,
		  double tol_peak, double tol_time, struct mp_exec_cmp *out)
{
	const struct mp_schedule *s = &p->sched;
	const double sc = r->time_scale;
	int *ph = action_phases(net, s);
	double pend[3] = { 0 }, mend[3] = { 0 }, tc_pred = 0, prev_p = 0, prev_m = 0;
	struct mp_exec_row *T = &out->row[EXEC_ROW_TOTAL];

	memset(out, 0, sizeof(*out));
	for (uint32_t i = 0; i < s->n && i < r->n_act; i++) {
		const struct mp_action *a = &s->a[i];
		const struct mp_exec_act *m = &r->act[i];
		struct mp_exec_row *R = &out->row[ph[i]];
		uint64_t bytes = a->tensor >= 0 ? net->tensors[a->tensor].bytes : 0;

		if (a->kind == MP_ACT_COMPUTE)
			R->present = true;
		if (engine_compute(a->kind)) {
			pend[ph[i]] = fmax(pend[ph[i]], a->end_ms);
			mend[ph[i]] = fmax(mend[ph[i]], m->end_ms);
		}
		R->peak_bytes.pred = fmax(R->peak_bytes.pred, (double)a->resident_bytes);
		R->peak_bytes.meas = fmax(R->peak_bytes.meas, (double)m->resident_bytes);
		switch (a->kind) {
		case MP_ACT_WAIT:
			R->stall_ms.pred += fmax(0, a->end_ms - tc_pred) * sc;
			R->stall_ms.meas += m->stall_ms;
			break;
		case MP_ACT_SWAP_IN:
			R->h2d_bytes.pred += (double)bytes;
			R->h2d_bytes.meas += (double)bytes;
			R->h2d_ms.pred += (a->end_ms - a->start_ms) * sc;
			R->h2d_ms.meas += m->end_ms - m->start_ms;
			break;
		case MP_ACT_SWAP_OUT:
			R->d2h_bytes.pred += (double)bytes;
			R->d2h_bytes.meas += (double)bytes;
			R->d2h_ms.pred += (a->end_ms - a->start_ms) * sc;
			R->d2h_ms.meas += m->end_ms - m->start_ms;
			break;
		default:
			break;
		}
		if (engine_compute(a->kind))
			tc_pred = a->end_ms;
	}
	for (int k = EXEC_ROW_FWD; k <= EXEC_ROW_OPT; k++) {
		struct mp_exec_row *R = &out->row[k];

		if (!R->present)
			continue;
		R->time_ms.pred = (pend[k] - prev_p) * sc;
		R->time_ms.meas = mend[k] - prev_m;
		prev_p = pend[k];
		prev_m = mend[k];
		T->h2d_bytes.pred += R->h2d_bytes.pred;
		T->h2d_bytes.meas += R->h2d_bytes.meas;
		T->d2h_bytes.pred += R->d2h_bytes.pred;
		T->d2h_bytes.meas += R->d2h_bytes.meas;
		T->h2d_ms.pred += R->h2d_ms.pred;
		T->h2d_ms.meas += R->h2d_ms.meas;
		T->d2h_ms.pred += R->d2h_ms.pred;
		T->d2h_ms.meas += R->d2h_ms.meas;
	}
	T->present = true;
	T->time_ms = (struct mp_exec_pair){ p->sim.time_ms * sc, r->time_ms };
	T->peak_bytes = (struct mp_exec_pair){ (double)p->sim.peak_bytes, (double)r->peak_bytes };
	T->stall_ms = (struct mp_exec_pair){ p->sim.stall_ms * sc, r->stall_ms };
	for (int k = 0; k < EXEC_ROWS; k++) {
		struct mp_exec_row *R = &out->row[k];

		R->h2d_gbps = (struct mp_exec_pair){ gbps(R->h2d_bytes.pred, R->h2d_ms.pred, sc),
						     gbps(R->h2d_bytes.meas, R->h2d_ms.meas, sc) };
		R->d2h_gbps = (struct mp_exec_pair){ gbps(R->d2h_bytes.pred, R->d2h_ms.pred, sc),
						     gbps(R->d2h_bytes.meas, R->d2h_ms.meas, sc) };
	}
	out->tol_peak = tol_peak;
	out->tol_time = tol_time;
	out->peak_dev = dev(T->peak_bytes.meas, T->peak_bytes.pred);
	out->peak_ok = fabs(out->peak_dev) <= tol_peak + 1e-12;
	out->time_checked = T->time_ms.pred > 0;
	out->time_dev = dev(T->time_ms.meas, T->time_ms.pred);
	out->time_judged = out->time_checked && tol_time >= 0;
	out->time_ok = !out->time_judged || fabs(out->time_dev) <= tol_time + 1e-12;
	free(ph);
}

static json_t *pair_json(const struct mp_exec_pair *x, bool bytes)
{
	json_t *o = json_object();

	if (bytes) {
		json_object_set_new(o, "predicted", json_integer((json_int_t)x->pred));
		json_object_set_new(o, "measured", json_integer((json_int_t)x->meas));
	} else {
		json_object_set_new(o, "predicted", json_real(x->pred));
		json_object_set_new(o, "measured", json_real(x->meas));
	}
	json_object_set_new(o, "ratio", x->pred > 0 ? json_real(x->meas / x->pred) : json_null());
	return o;
}

static json_t *row_json(const struct mp_exec_row *R)
{
	json_t *o = json_object();

	json_object_set_new(o, "time_ms", pair_json(&R->time_ms, false));
	json_object_set_new(o, "peak_bytes", pair_json(&R->peak_bytes, true));
	json_object_set_new(o, "stall_ms", pair_json(&R->stall_ms, false));
	json_object_set_new(o, "h2d_bytes", pair_json(&R->h2d_bytes, true));
	json_object_set_new(o, "d2h_bytes", pair_json(&R->d2h_bytes, true));
	json_object_set_new(o, "h2d_busy_ms", pair_json(&R->h2d_ms, false));
	json_object_set_new(o, "d2h_busy_ms", pair_json(&R->d2h_ms, false));
	json_object_set_new(o, "h2d_gbps", pair_json(&R->h2d_gbps, false));
	json_object_set_new(o, "d2h_gbps", pair_json(&R->d2h_gbps, false));
	return o;
}

/* "<what>_high_water_bytes" and "<what>_vs_arena": an allocator's
 * high-water mark, and against the plan's arena. */
static void high_water_json(json_t *o, const char *what, uint64_t bytes, uint64_t arena)
{
	char key[64];

	snprintf(key, sizeof(key), "%s_high_water_bytes", what);
	json_object_set_new(o, key, json_integer((json_int_t)bytes));
	snprintf(key, sizeof(key), "%s_vs_arena", what);
	json_object_set_new(o, key, arena ? json_real((double)bytes / (double)arena) : json_null());
}

static json_t *times_json(double start, double end, uint64_t bytes, const char *bytes_key)
{
	json_t *o = json_object();

	json_object_set_new(o, "start_ms", json_real(start));
	json_object_set_new(o, "end_ms", json_real(end));
	json_object_set_new(o, bytes_key, json_integer((json_int_t)bytes));
	return o;
}

/* The verdicts: tolerances, peak and time deviations, and the rows. */
static void add_verdicts(json_t *root, const struct mp_exec_cmp *c)
{
	static const char *const row_name[EXEC_ROWS] = { "forward", "backward", "optimizer", "total" };
	json_t *o = json_object();

	json_object_set_new(o, "peak", json_real(c->tol_peak));
	json_object_set_new(o, "time", c->time_judged ? json_real(c->tol_time) : json_null());
	json_object_set_new(root, "tolerance", o);
	o = json_object();
	json_object_set_new(o, "deviation", isfinite(c->peak_dev) ? json_real(c->peak_dev) : json_null());
	json_object_set_new(o, "ok", json_boolean(c->peak_ok));
	json_object_set_new(root, "peak", o);
	o = json_object();
	json_object_set_new(o, "deviation", c->time_checked && isfinite(c->time_dev) ? json_real(c->time_dev) : json_null());
	json_object_set_new(o, "checked", json_boolean(c->time_checked));
	json_object_set_new(o, "judged", json_boolean(c->time_judged));
	json_object_set_new(o, "ok", json_boolean(c->time_ok));
	json_object_set_new(root, "time", o);
	json_object_set_new(root, "total", row_json(&c->row[EXEC_ROW_TOTAL]));
	o = json_object();
	for (int k = EXEC_ROW_FWD; k <= EXEC_ROW_OPT; k++)
		if (c->row[k].present)
			json_object_set_new(o, row_name[k], row_json(&c->row[k]));
	json_object_set_new(root, "phases", o);
}

static json_t *memory_json(const struct mp_plan *p, const struct mp_exec_result *r)
{
	json_t *o = json_object();

	if (r->alloc != MP_EXEC_ASYNC) /* the arena, or the pool's range; async has neither */
		json_object_set_new(o, r->cuda.present ? "device_arena_bytes" : "host_bytes",
				    json_integer((json_int_t)r->mem_bytes));
	json_object_set_new(o, "plan_arena_bytes", json_integer((json_int_t)p->arena_bytes));
	json_object_set_new(o, "live_peak_bytes", json_integer((json_int_t)r->live_peak_bytes));
	json_object_set_new(o, "live_peak_action", json_integer(r->live_peak_action));
	json_object_set_new(o, "live_peak_max_bytes", json_integer((json_int_t)r->live_peak_max_bytes));
	if (r->alloc == MP_EXEC_POOL) {
		high_water_json(o, "pool", r->pool_high_bytes, p->arena_bytes);
	} else if (r->alloc == MP_EXEC_ASYNC) {
		high_water_json(o, "reserved", r->cuda.reserved_high_bytes, p->arena_bytes);
		json_object_set_new(o, "used_high_water_bytes", json_integer((json_int_t)r->cuda.used_high_bytes));
	} else {
		json_object_set_new(o, "arena_high_water_bytes", json_integer((json_int_t)r->arena_high_bytes));
	}
	return o;
}

/* The CUDA backend: the device as the driver reports it. */
static json_t *cuda_json(const struct mp_exec_cuda *d)
{
	json_t *o = json_object();

	json_object_set_new(o, "name", json_string(d->name));
	json_object_set_new(o, "total_bytes", json_integer((json_int_t)d->total_bytes));
	json_object_set_new(o, "used_before_arena_bytes", json_integer((json_int_t)d->used_before_bytes));
	json_object_set_new(o, "used_after_alloc_bytes", json_integer((json_int_t)d->used_alloc_bytes));
	json_object_set_new(o, "used_peak_bytes", json_integer((json_int_t)d->used_peak_bytes));
	json_object_set_new(o, "pinned_host_bytes", json_integer((json_int_t)d->pinned_bytes));
	json_object_set_new(o, "timer_ratio", json_real(d->timer_ratio));
	json_object_set_new(o, "launches_per_iteration", json_integer((json_int_t)d->launches));
	json_object_set_new(o, "libraries", json_string(d->libraries));
	json_object_set_new(o, "ops_real", json_integer(d->ops_real));
	json_object_set_new(o, "ops_timed", json_integer(d->ops_timed));
	json_object_set_new(o, "algos_substituted", json_integer(d->algos_substituted));
	json_object_set_new(o, "first_timed", json_string(d->timed_why));
	json_object_set_new(o, "library_bytes", json_integer((json_int_t)d->library_bytes));
	json_object_set_new(o, "checked_iterations", json_integer(d->checked_iterations));
	return o;
}

static json_t *timing_json(const struct mp_exec_result *r)
{
	json_t *o = json_object(), *arr = json_array();

	json_object_set_new(o, "wall_ms", json_real(r->time_ms));
	json_object_set_new(o, "timeline_ms", json_real(r->timeline_ms));
	json_object_set_new(o, "alloc_wait_ms", json_real(r->alloc_wait_ms));
	json_object_set_new(o, "overruns", json_integer(r->overruns));
	json_object_set_new(o, "overrun_ms", json_real(r->overrun_ms));
	json_object_set_new(o, "work_scale", json_real(r->work_scale));
	for (uint32_t k = 0; k < r->iters; k++)
		json_array_append_new(arr, json_real(r->iter_ms[k]));
	json_object_set_new(o, "iterations_ms", arr);
	return o;
}

static json_t *checks_json(const struct mp_exec_result *r)
{
	json_t *o = json_object();

	json_object_set_new(o, "reads", json_integer((json_int_t)r->reads_checked));
	json_object_set_new(o, "swaps", json_integer((json_int_t)r->swaps_checked));
	json_object_set_new(o, "recomputes", json_integer((json_int_t)r->recomputes_checked));
	json_object_set_new(o, "bytes_hashed", json_integer((json_int_t)r->bytes_hashed));
	return o;
}

/* Per step: the compute actions, with the copies issued in the step. */
static json_t *steps_json(const struct mp_net *net, const struct mp_plan *p, const struct mp_exec_result *r)
{
	const struct mp_schedule *s = &p->sched;
	const double sc = r->time_scale;
	json_t *arr = json_array();
	uint64_t in_b = 0, out_b = 0;
	uint32_t step = 0;

	for (uint32_t i = 0; i < s->n && i < r->n_act; i++) {
		const struct mp_action *a = &s->a[i];
		const struct mp_exec_act *m = &r->act[i];
		json_t *x;

		if (a->kind == MP_ACT_SWAP_IN)
			in_b += net->tensors[a->tensor].bytes;
		if (a->kind == MP_ACT_SWAP_OUT)
			out_b += net->tensors[a->tensor].bytes;
		if (a->kind != MP_ACT_COMPUTE)
			continue;
		x = json_object();
		json_object_set_new(x, "step", json_integer(step + 1));
		json_object_set_new(x, "action", json_integer(i));
		json_object_set_new(x, "op", json_string(net->ops[a->op].name));
		json_object_set_new(x, "phase", json_string(mp_phase_name(net->ops[a->op].phase)));
		json_object_set_new(x, "predicted", times_json(a->start_ms * sc, a->end_ms * sc,
			step < p->sim.n_steps ? p->sim.steps[step].bytes : 0, "bytes"));
		json_object_set_new(x, "measured", times_json(m->start_ms, m->end_ms,
			step < r->n_steps ? r->step_bytes[step] : 0, "bytes"));
		json_object_set_new(x, "swap_in_bytes", json_integer((json_int_t)in_b));
		json_object_set_new(x, "swap_out_bytes", json_integer((json_int_t)out_b));
		json_array_append_new(arr, x);
		in_b = out_b = 0;
		step++;
	}
	return arr;
}

/* Every action, predicted and measured. */
static json_t *actions_json(const struct mp_net *net, const struct mp_plan *p, const struct mp_exec_result *r)
{
	const struct mp_schedule *s = &p->sched;
	const double sc = r->time_scale;
	json_t *arr = json_array();
	int *ph = action_phases(net, s);

	for (uint32_t i = 0; i < s->n && i < r->n_act; i++) {
		const struct mp_action *a = &s->a[i];
		const struct mp_exec_act *m = &r->act[i];
		json_t *x = json_object();

		json_object_set_new(x, "index", json_integer(i));
		json_object_set_new(x, "action", json_string(mp_act_name(a->kind)));
		if (a->op >= 0)
			json_object_set_new(x, "op", json_string(net->ops[a->op].name));
		else
			json_object_set_new(x, "tensor", json_string(net->tensors[a->tensor].name));
		json_object_set_new(x, "phase", json_string(mp_phase_name((enum mp_phase)ph[i])));
		json_object_set_new(x, "predicted", times_json(a->start_ms * sc, a->end_ms * sc, a->resident_bytes,
							       "resident_bytes"));
		json_object_set_new(x, "measured", times_json(m->start_ms, m->end_ms, m->resident_bytes,
							      "resident_bytes"));
		if (a->kind == MP_ACT_WAIT)
			json_object_set_new(x, "stall_ms", json_real(m->stall_ms));
		json_array_append_new(arr, x);
	}
	free(ph);
	return arr;
}

void exec_op_times(const struct mp_net *net, const struct mp_plan *p, const struct mp_exec_result *r,
		   struct mp_exec_op_time *out)
{
	const struct mp_schedule *s = &p->sched;
	const double sc = r->time_scale;

	memset(out, 0, net->n_ops * sizeof(*out));
	for (uint32_t i = 0; i < s->n && i < r->n_act; i++) {
		const struct mp_action *a = &s->a[i];
		struct mp_exec_op_time *t;

		if (a->kind != MP_ACT_COMPUTE && a->kind != MP_ACT_RECOMPUTE)
			continue;
		t = &out[a->op];
		t->runs++;
		t->pred_ms += (a->end_ms - a->start_ms) * sc;
		t->meas_ms += r->act[i].end_ms - r->act[i].start_ms;
	}
}

/* Per op that ran: its runs, predicted and measured time per iteration. */
static json_t *ops_json(const struct mp_net *net, const struct mp_plan *p, const struct mp_exec_result *r)
{
	struct mp_exec_op_time *t = mp_xmalloc((net->n_ops + 1) * sizeof(*t));
	json_t *arr = json_array();

	exec_op_times(net, p, r, t);
	for (uint32_t k = 0; k < net->n_ops; k++) {
		json_t *x;

		if (!t[k].runs)
			continue;
		x = json_object();
		json_object_set_new(x, "op", json_string(net->ops[k].name));
		json_object_set_new(x, "phase", json_string(mp_phase_name(net->ops[k].phase)));
		json_object_set_new(x, "runs", json_integer(t[k].runs));
		json_object_set_new(x, "predicted_ms", json_real(t[k].pred_ms));
		json_object_set_new(x, "measured_ms", json_real(t[k].meas_ms));
		json_array_append_new(arr, x);
	}
	free(t);
	return arr;
}

json_t *exec_report_json(const struct mp_net *net, const struct mp_plan *p,
			 const struct mp_exec_result *r, const struct mp_exec_cmp *c)
{
	json_t *root = json_object();

	json_object_set_new(root, "format", json_string("memplan-verify/1"));
	json_object_set_new(root, "net", json_string(net->name ? net->name : ""));
	json_object_set_new(root, "planner", json_string(mp_planner_name(p->planner)));
	json_object_set_new(root, "alloc", json_string(mp_exec_alloc_name(r->alloc)));
	json_object_set_new(root, "clock", json_string(mp_exec_clock_name(r->clock)));
	json_object_set_new(root, "time_scale", json_real(r->time_scale));
	json_object_set_new(root, "iterations", json_integer(r->iters));
	json_object_set_new(root, "warmup", json_integer(r->warmup));
	json_object_set_new(root, "ok", json_boolean(c->peak_ok && c->time_ok));
	add_verdicts(root, c);
	json_object_set_new(root, "memory", memory_json(p, r));
	if (r->cuda.present)
		json_object_set_new(root, "cuda", cuda_json(&r->cuda));
	json_object_set_new(root, "timing", timing_json(r));
	json_object_set_new(root, "checks", checks_json(r));
	json_object_set_new(root, "ops", ops_json(net, p, r));
	json_object_set_new(root, "steps", steps_json(net, p, r));
	json_object_set_new(root, "actions", actions_json(net, p, r));
	return root;
}
