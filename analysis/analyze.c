/*
 * The analysis pipeline: route, policies, simulation, metrics.  O(ops + tensor
 * uses) per strategy.
 */
#include "analyze.h"

#include <string.h>

int analysis_strategy(const struct mp_net *net, const struct mp_route *r, enum mp_strategy s,
		      const struct mp_policy_opts *o, const struct mp_device *dev,
		      struct mp_schedule *out, struct mp_sim *sim, struct mp_recompute_info *info,
		      struct mp_error *err)
{
	struct mp_policy_opts alt = *o;
	struct mp_schedule s1, s2;
	struct mp_sim sim2;
	struct mp_recompute_info info1, info2;
	int rc;

	if (!out) {
		sched_init(&s1);
		out = &s1;
	}
	policy_build(net, r, s, o, out, &info1);
	if (info)
		*info = info1;
	rc = sim_run(net, dev, out, sim, err);
	if (out == &s1)
		sched_release(&s1);
	if (rc < 0)
		return -1;
	/* the other rule only when it would drop something else */
	if (s != MP_STRAT_RECOMPUTE || (!o->loose_rebuild && info1.rule_blocked == 0))
		return 0;
	alt.loose_rebuild = !o->loose_rebuild;
	sched_init(&s2);
	policy_build(net, r, s, &alt, &s2, &info2);
	if (sim_run(net, dev, &s2, &sim2, err) < 0) {
		sched_release(&s2);
		sim_release(sim);
		return -1;
	}
	if (sim2.peak_bytes < sim->peak_bytes ||
	    (sim2.peak_bytes == sim->peak_bytes && sim2.time_ms < sim->time_ms)) {
		sim_release(sim);
		*sim = sim2;
		if (info)
			*info = info2;
		if (out != &s1) {
			sched_release(out);
			*out = s2;
			return 0;
		}
	} else {
		sim_release(&sim2);
	}
	sched_release(&s2);
	return 0;
}

int analysis_run(const struct mp_net *net, const struct mp_device *dev,
		 uint32_t mask, const struct mp_policy_opts *opts,
		 struct mp_analysis *out, struct mp_error *err)
{
	return analysis_run_ex(net, dev, mask, opts, 0, out, err);
}

int analysis_run_ex(const struct mp_net *net, const struct mp_device *dev,
		    uint32_t mask, const struct mp_policy_opts *opts, int keep_schedules,
		    struct mp_analysis *out, struct mp_error *err)
{
	memset(out, 0, sizeof(*out));
	if (dev)
		out->device = *dev;
	else if (net->has_device)
		out->device = net->device;
	else
		device_default(&out->device);
	if (route_build(net, &out->route, err) < 0)
		return -1;
	policy_layer_min(net, &out->route, &out->lmin);
	mask |= 1u << MP_STRAT_BASELINE;
	for (int s = 0; s < MP_STRAT__COUNT; s++) {
		struct mp_strategy_result *r = &out->r[out->n];

		if (!(mask & (1u << s)))
			continue;
		r->strategy = (enum mp_strategy)s;
		sched_init(&r->sched);
		out->n++;
		if (analysis_strategy(net, &out->route, r->strategy, opts, &out->device,
				      keep_schedules ? &r->sched : NULL, &r->sim, &r->rinfo, err) < 0) {
			mp_error_prefix(err, "internal error: %s schedule: ", mp_strategy_name(r->strategy));
			analysis_release(out);
			return -1;
		}
	}
	for (uint32_t i = 0; i < out->n; i++) {
		struct mp_strategy_result *r = &out->r[i];
		double vmp = (double)out->r[0].sim.peak_bytes, vtc = out->r[0].sim.time_ms;

		r->msr = vmp > 0 ? (vmp - (double)r->sim.peak_bytes) / vmp : 0;
		r->eor = vtc > 0 ? r->sim.time_ms / vtc : 1.0;
		r->overhead = r->eor - 1.0;
		r->cbr = r->eor > 0 ? r->msr / r->eor : 0;
	}
	return 0;
}

void analysis_release(struct mp_analysis *a)
{
	for (uint32_t i = 0; i < a->n; i++) {
		sched_release(&a->r[i].sched);
		sim_release(&a->r[i].sim);
	}
	route_release(&a->route);
	memset(a, 0, sizeof(*a));
}
