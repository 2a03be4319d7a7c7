/*
 * libFuzzer target for the plan reader, memplan-plan(5): bytes ->
 * mp_json_load_buffer -> plan_read_json (the path memplan verify reads a
 * plan by: digest, embedded net, schedule, re-simulation, arena check) ->
 * plan_to_json and plan_trace_json of what it accepted -> plan_read_json of
 * that again, freeing everything.  Any crash, sanitizer report, leak,
 * timeout or out-of-memory is a bug: a bad plan is refused with a message
 * naming the JSON path, never a crash.  Also checked: a refusal comes with a
 * message, and an accepted plan written back is accepted with the same
 * schedule, offsets and simulated peak and time (the writer's round trip).
 *
 * The digest stops almost every mutation of the embedded net at
 * "net_sha256: does not match": for inputs of odd size the target writes the
 * true digest first, so the net and the schedule that names its tensors
 * are fuzzed together; even sizes keep the digest check itself in play.
 * Seeds: tests/fuzz/plan-seeds/.  Run with `make fuzz`; a crashing input is
 * written to build-fuzz/plan-crash-*; keep it as a test of the message
 * memplan verify gives instead (tests/cli/t0601-verify-errors.sh).
 */
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../analysis/base/jget.h"
#include "../../plan/plan.h"
#include "../../plan/planfile.h"
#include "../../plan/trace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The same plan, action by action, as the writer's round trip promises. */
static int same_plan(const struct mp_plan *a, const struct mp_plan *b)
{
	if (a->sched.n != b->sched.n || a->arena_bytes != b->arena_bytes ||
	    a->sim.peak_bytes != b->sim.peak_bytes || a->sim.time_ms != b->sim.time_ms)
		return 0;
	for (uint32_t i = 0; i < a->sched.n; i++) {
		const struct mp_action *x = &a->sched.a[i], *y = &b->sched.a[i];

		if (x->kind != y->kind || x->op != y->op || x->tensor != y->tensor ||
		    x->bytes != y->bytes || x->algo != y->algo || x->micro != y->micro ||
		    a->offset[i] != b->offset[i])
			return 0;
		for (uint32_t k = 0; x->micro > 1 && k < x->micro; k++) {
			const struct mp_micro *m = &a->sched.micro[x->micro_at + k];
			const struct mp_micro *n = &b->sched.micro[y->micro_at + k];

			if (m->batch != n->batch || m->algo != n->algo)
				return 0;
		}
	}
	return 1;
}

/* Write what was accepted, as memplan plan -o would, and read it again. */
static void round_trip(json_t *root, const struct mp_net *net, const struct mp_plan_req *req,
		       const struct mp_plan *p)
{
	struct mp_error err = { "" };
	struct mp_plan_req req2;
	struct mp_plan p2;
	struct mp_net *net2;
	json_t *out, *trace;

	out = plan_to_json(net, json_object_get(root, "net"), req, p);
	trace = plan_trace_json(net, p);
	json_decref(trace);
	if (plan_read_json(out, &net2, &req2, &p2, &err) < 0 || !same_plan(p, &p2))
		abort();
	plan_release(&p2);
	net_free(net2);
	json_decref(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mp_error err = { "" };
	struct mp_plan_req req;
	struct mp_plan p;
	struct mp_net *net;
	json_t *root, *net_json;
	char hex[65];

	if (!(root = mp_json_load_buffer((const char *)data, size, &err)))
		return 0;
	net_json = json_is_object(root) ? json_object_get(root, "net") : NULL;
	if ((size & 1) && net_json && plan_net_sha256(net_json, hex) == 0)
		json_object_set_new(root, "net_sha256", json_string(hex));
	if (plan_read_json(root, &net, &req, &p, &err) < 0) {
		/* an empty message would print "memplan: FILE: " */
		if (!err.msg[0] || net)
			abort();
	} else {
		round_trip(root, net, &req, &p);
		plan_release(&p);
		net_free(net);
	}
	json_decref(root);
	return 0;
}
