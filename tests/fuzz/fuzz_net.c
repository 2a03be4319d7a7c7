/*
 * libFuzzer target for the loader and the analysis pipeline: bytes ->
 * mp_json_load_buffer -> net_load_json -> route_build -> analysis_run
 * (every fixed strategy), freeing everything.  Any crash, sanitizer
 * report, leak, timeout or out-of-memory here is a bug: DESIGN.md says no
 * input may crash or hang.  Also checked: a failure always comes with a
 * message (cli prints it).  Seeds: tests/bad/ and examples/.  Run with
 * `make fuzz [FUZZ_NET_SECONDS=60]`;
 * a crashing input is written to build-fuzz/crash-*; keep it as
 * tests/bad/fuzz-NAME.json with its expected message in t0100-bad-input.sh.
 */
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../analysis/analyze.h"
#include "../../analysis/base/jget.h"
#include "../../plan/plan.h"

/* A failed call must say why: an empty message would print "memplan: FILE: ". */
static void need_message(const struct mp_error *err)
{
	if (!err->msg[0])
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mp_error err = { "" };
	struct mp_policy_opts opts;
	struct mp_analysis a;
	struct mp_route route;
	struct mp_net *net;
	json_t *root;

	/* the parse net_load_file runs */
	root = mp_json_load_buffer((const char *)data, size, &err);
	if (!root)
		return 0;
	net = net_load_json(root, &err);
	json_decref(root);
	if (!net) {
		need_message(&err);
		return 0;
	}
	if (route_build(net, &route, &err) < 0) {
		need_message(&err);
		net_free(net);
		return 0;
	}
	route_release(&route);
	policy_opts_default(&opts);
	err.msg[0] = '\0';
	if (analysis_run(net, NULL, (1u << MP_STRAT__COUNT) - 1, &opts, &a, &err) == 0) {
		/* every planner at 70% of the liveness peak: an internal error
		 * (a schedule the simulator refuses) is a bug */
		struct mp_plan_req req = { 0 };
		uint64_t live = a.r[1].sim.peak_bytes;

		req.budget_bytes = live / 10 * 7;
		req.device = a.device;
		req.ws_mode = (enum mp_ws_mode)(size % 4);
		req.popts = opts;
		if (route_build(net, &route, &err) == 0) {
			for (int k = 0; k < MP_PLANNER__COUNT; k++) {
				struct mp_plan p;

				plan_init(&p);
				err.msg[0] = '\0';
				if (plan_run(net, &route, (enum mp_planner)k, &req, &p, &err) < 0 &&
				    !strncmp(err.msg, "internal", 8))
					abort();
				plan_release(&p);
			}
			route_release(&route);
		}
		analysis_release(&a);
	} else {
		need_message(&err);
	}
	net_free(net);
	return 0;
}
