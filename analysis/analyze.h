/*
 * analyze: the analysis pipeline of `memplan analyze` and `memplan check`:
 * route the net, build each fixed strategy's schedule, simulate it, and
 * derive TENSILE's metrics against the baseline.  Owns struct mp_analysis.
 */
#ifndef MP_ANALYZE_H
#define MP_ANALYZE_H

#include <stdint.h>

#include "base/device.h"
#include "net/net.h"
#include "policy.h"
#include "route.h"
#include "sched.h"
#include "sim.h"

struct mp_strategy_result {
	enum mp_strategy strategy;
	struct mp_schedule sched;
	struct mp_sim sim;
	struct mp_recompute_info rinfo;
	double overhead;   /* time / baseline time - 1 */
	double msr;        /* (VMP - EMP) / VMP, TENSILE V-A */
	double eor;        /* ETC / VTC */
	double cbr;        /* MSR / EOR */
};

struct mp_analysis {
	struct mp_route route;
	struct mp_device device;   /* the one the simulator used */
	struct mp_layer_min lmin;
	uint32_t n;                /* strategies computed (baseline first) */
	struct mp_strategy_result r[MP_STRAT__COUNT];
};

/*
 * Build one strategy's schedule and simulate it on dev.  For recompute both
 * rebuild rules (mp_policy_opts.loose_rebuild) are tried and the schedule
 * with the lower peak (then the faster) kept: rebuilding from an offloaded
 * input pays when the prefetch it brings forward is cheap, not otherwise,
 * and only the simulator knows which.  out is initialised by the caller,
 * or NULL when only *sim is wanted: then each schedule is released as soon
 * as it is simulated, and two are never held at once (on 10^5 layers a
 * recompute schedule is 200 MB).  0, or -1 with *err (an internal error)
 * and nothing held in *sim.
 */
int analysis_strategy(const struct mp_net *net, const struct mp_route *r, enum mp_strategy s,
		      const struct mp_policy_opts *o, const struct mp_device *dev,
		      struct mp_schedule *out, struct mp_sim *sim, struct mp_recompute_info *info,
		      struct mp_error *err);

/*
 * Run the pipeline for the strategies in mask (bit per enum mp_strategy; the
 * baseline is always computed, as the reference of the metrics).  dev may be
 * NULL: the net's own device, else the documented default link.
 * 0, or -1 with *err.  Release with analysis_release.
 */
int analysis_run(const struct mp_net *net, const struct mp_device *dev,
		 uint32_t mask, const struct mp_policy_opts *opts,
		 struct mp_analysis *out, struct mp_error *err);
/* As analysis_run; keep_schedules keeps each strategy's schedule (with the
 * simulator's times) in r[i].sched instead of releasing it after simulation. */
int analysis_run_ex(const struct mp_net *net, const struct mp_device *dev,
		    uint32_t mask, const struct mp_policy_opts *opts, int keep_schedules,
		    struct mp_analysis *out, struct mp_error *err);
void analysis_release(struct mp_analysis *a);

#endif
