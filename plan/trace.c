/*
 * The predicted timeline of a plan as Chrome trace event JSON (the "JSON
 * Object Format" of the Trace Event Format document, read by Perfetto and
 * chrome://tracing): one process, three threads for the simulator's engines
 * (compute, host-to-device, device-to-host), a complete event ("X") per
 * compute, recompute, swap and stalling wait, and a counter ("C") of the
 * resident bytes after every memory event.  Times are microseconds.
 * O(n log n) in the schedule's actions (memory events are sorted by time).
 */
#include "trace.h"

#include <stdlib.h>
#include <string.h>

enum { PID = 1, TID_COMPUTE = 1, TID_H2D = 2, TID_D2H = 3 };

static json_t *meta(const char *what, int tid, const char *key, json_t *val)
{
	json_t *e = json_pack("{s:s, s:s, s:i}", "name", what, "ph", "M", "pid", PID);

	if (tid)
		json_object_set_new(e, "tid", json_integer(tid));
	json_object_set_new(e, "args", json_pack("{s:o}", key, val));
	return e;
}

static json_t *complete(const char *name, const char *cat, int tid, double start_ms,
			double end_ms, json_t *args)
{
	double dur = end_ms - start_ms;

	return json_pack("{s:s, s:s, s:s, s:f, s:f, s:i, s:i, s:o}", "name", name, "cat", cat,
			 "ph", "X", "ts", start_ms * 1000.0, "dur", dur > 0 ? dur * 1000.0 : 0.0,
			 "pid", PID, "tid", tid, "args", args);
}

static const char *algo_name(const struct mp_op *op, int32_t algo)
{
	return algo >= 0 ? op->algos[algo].name : "default";
}

struct mem_ev {
	double t;
	uint32_t act;
};

static int mem_ev_cmp(const void *pa, const void *pb)
{
	const struct mem_ev *a = pa, *b = pb;

	if (a->t != b->t)
		return a->t < b->t ? -1 : 1;
	return a->act < b->act ? -1 : a->act > b->act;
}

json_t *plan_trace_json(const struct mp_net *net, const struct mp_plan *p)
{
	const struct mp_schedule *s = &p->sched;
	json_t *ev = json_array(), *root;
	struct mem_ev *mem = mp_xmalloc((s->n + 1) * sizeof(*mem));
	uint32_t n_mem = 0;
	double tc = 0;       /* when the compute engine became free */
	char name[600];

	json_array_append_new(ev, meta("process_name", 0, "name", json_sprintf("memplan: %s (%s)",
				       net->name, mp_planner_name(p->planner))));
	json_array_append_new(ev, meta("thread_name", TID_COMPUTE, "name", json_string("compute")));
	json_array_append_new(ev, meta("thread_name", TID_H2D, "name", json_string("host-to-device")));
	json_array_append_new(ev, meta("thread_name", TID_D2H, "name", json_string("device-to-host")));
	for (int tid = TID_COMPUTE; tid <= TID_D2H; tid++)
		json_array_append_new(ev, meta("thread_sort_index", tid, "sort_index", json_integer(tid)));
	for (uint32_t i = 0; i < s->n; i++) {
		const struct mp_action *a = &s->a[i];

		switch (a->kind) {
		case MP_ACT_COMPUTE:
		case MP_ACT_RECOMPUTE: {
			const struct mp_op *op = &net->ops[a->op];
			json_t *micro = json_array(), *args;

			if (a->micro > 1) {
				for (uint32_t k = 0; k < a->micro; k++) {
					const struct mp_micro *m = &s->micro[a->micro_at + k];

					json_array_append_new(micro, json_pack("[I, s]", (json_int_t)m->batch,
									       algo_name(op, m->algo)));
				}
			} else {
				json_array_append_new(micro, json_pack("[I, s]", (json_int_t)op->batch,
								       algo_name(op, a->algo)));
			}
			args = json_pack("{s:s, s:s, s:o, s:b}", "phase", mp_phase_name(op->phase),
					 "algorithm", a->micro > 1 ? "micro-batched" : algo_name(op, a->algo),
					 "micro_batches", micro, "recompute", a->kind == MP_ACT_RECOMPUTE);
			json_array_append_new(ev, complete(op->name, a->kind == MP_ACT_RECOMPUTE ? "recompute" : "compute",
							   TID_COMPUTE, a->start_ms, a->end_ms, args));
			tc = a->end_ms;
			break;
		}
		case MP_ACT_SWAP_IN:
		case MP_ACT_SWAP_OUT: {
			const struct mp_tensor *t = &net->tensors[a->tensor];
			bool in = a->kind == MP_ACT_SWAP_IN;

			json_array_append_new(ev, complete(t->name, in ? "swap_in" : "swap_out",
							   in ? TID_H2D : TID_D2H, a->start_ms, a->end_ms,
							   json_pack("{s:s, s:I}", "tensor", t->name, "bytes", (json_int_t)t->bytes)));
			break;
		}
		case MP_ACT_WAIT:
			/* the compute engine was free at tc and resumed at the wait's time */
			if (a->start_ms > tc) {
				const struct mp_tensor *t = &net->tensors[a->tensor];

				snprintf(name, sizeof(name), "wait %s", t->name);
				json_array_append_new(ev, complete(name, "stall", TID_COMPUTE, tc, a->start_ms,
								   json_pack("{s:s, s:I, s:f}", "tensor", t->name,
									     "bytes", (json_int_t)t->bytes,
									     "stall_ms", a->start_ms - tc)));
			}
			tc = a->end_ms;
			break;
		case MP_ACT_ALLOC:
		case MP_ACT_FREE:
			tc = a->end_ms;
			break;
		}
		if (a->kind == MP_ACT_ALLOC || a->kind == MP_ACT_FREE ||
		    a->kind == MP_ACT_SWAP_IN || a->kind == MP_ACT_SWAP_OUT)
			mem[n_mem++] = (struct mem_ev){ a->kind == MP_ACT_SWAP_OUT ? a->end_ms : a->start_ms, i };
	}
	/* the counter in the simulator's event order; of several events at one
	 * instant, only the last value is shown */
	qsort(mem, n_mem, sizeof(*mem), mem_ev_cmp);
	if (n_mem == 0 || mem[0].t > 0)
		json_array_append_new(ev, json_pack("{s:s, s:s, s:f, s:i, s:{s:i}}", "name", "resident bytes",
						    "ph", "C", "ts", 0.0, "pid", PID, "args", "bytes", 0));
	for (uint32_t k = 0; k < n_mem; k++) {
		if (k + 1 < n_mem && mem[k + 1].t == mem[k].t)
			continue;
		json_array_append_new(ev, json_pack("{s:s, s:s, s:f, s:i, s:{s:I}}", "name", "resident bytes",
						    "ph", "C", "ts", mem[k].t * 1000.0, "pid", PID, "args", "bytes",
						    (json_int_t)s->a[mem[k].act].resident_bytes));
	}
	free(mem);
	root = json_pack("{s:o, s:s}", "traceEvents", ev, "displayTimeUnit", "ms");
	json_object_set_new(root, "otherData", json_pack("{s:s, s:s, s:I, s:I, s:f}", "net", net->name,
							 "planner", mp_planner_name(p->planner),
							 "peak_bytes", (json_int_t)p->sim.peak_bytes,
							 "arena_bytes", (json_int_t)p->arena_bytes,
							 "time_ms", p->sim.time_ms));
	return root;
}
