/*
 * sim: the one simulator that predicts every Schedule.  Three serial engines
 * (compute, host-to-device copy, device-to-host copy); copies overlap compute;
 * compute stalls on a wait for an unfinished swap-in; memory freed by a
 * swap-out is released when the copy ends.  It also checks the schedule: every
 * tensor an op reads is resident, not in flight, and written since it was
 * allocated (or resident from before the iteration); nothing is freed twice.
 * Fills each action's start/end and resident bytes.  Owns struct mp_sim.
 */
#ifndef MP_SIM_H
#define MP_SIM_H

#include <stdint.h>

#include "base/device.h"
#include "net/net.h"
#include "route.h"
#include "sched.h"

struct mp_step {
	uint64_t bytes;   /* most device memory resident inside the step */
	uint32_t live;    /* tensors resident at that moment */
	int32_t op;       /* the op the step computes */
};

struct mp_sim {
	uint64_t peak_bytes;
	uint32_t peak_step;       /* 0-based step index */
	uint32_t live_at_peak;
	uint32_t peak_action;     /* action whose event reached the peak */
	double time_ms;           /* iteration: all engines idle */
	double compute_ms;        /* sum of compute actions (not recompute) */
	double recompute_ms;
	double stall_ms;          /* compute waiting for swap-ins */
	double tail_ms;           /* copies still running after compute's end:
				   * time_ms less the compute stream's end */
	uint64_t h2d_bytes, d2h_bytes;
	uint32_t n_swap_in, n_swap_out, n_recompute;
	uint32_t n_steps;
	struct mp_step *steps;    /* [n_steps], owned */
	uint32_t n_peak_tensors;
	int32_t *peak_tensors;    /* [n_peak_tensors] resident at the peak, owned */
};

/*
 * Simulate s on dev.  Steps are the schedule's compute actions in order; every
 * op must be computed exactly once.  Returns 0, or -1 with *err naming the
 * action ("schedule[12] compute 'fc1.fwd': reads 'pool5.out', which is not
 * resident").  out is filled on success; release with sim_release.
 */
int sim_run(const struct mp_net *net, const struct mp_device *dev,
	    struct mp_schedule *s, struct mp_sim *out, struct mp_error *err);
void sim_release(struct mp_sim *sim);

#endif
