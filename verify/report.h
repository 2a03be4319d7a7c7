/*
 * report: holding a measured run to account (memplan verify): the
 * comparison of an exec result with the plan's simulation, per phase and in
 * total, within tolerances, and the --report JSON (report.c).  Owns struct
 * mp_exec_cmp.
 */
#ifndef MP_VERIFY_REPORT_H
#define MP_VERIFY_REPORT_H

#include <jansson.h>
#include <stdbool.h>

#include "exec.h"

/*
 * Predicted vs measured, per phase (forward, backward, optimizer) and in
 * total.  Actions belong to the phase of the next compute action (the last
 * one's after it), as sim_run attributes memory events to steps.  Phase time
 * is the compute engine's span in the phase; the total time is the iteration.
 * Predicted times are the plan's simulation times time_scale.
 */
enum { EXEC_ROW_FWD, EXEC_ROW_BWD, EXEC_ROW_OPT, EXEC_ROW_TOTAL, EXEC_ROWS };

struct mp_exec_pair {
	double pred, meas;
};

struct mp_exec_row {
	bool present;             /* a phase with at least one step */
	struct mp_exec_pair time_ms, peak_bytes, stall_ms;
	struct mp_exec_pair h2d_bytes, d2h_bytes;
	struct mp_exec_pair h2d_ms, d2h_ms;      /* copy engine busy, wall ms */
	struct mp_exec_pair h2d_gbps, d2h_gbps;  /* achieved link bandwidth in model
						  * time (bytes / busy / time_scale); 0: no copies */
};

struct mp_exec_cmp {
	struct mp_exec_row row[EXEC_ROWS];
	double tol_peak, tol_time;    /* fractions: 0.02 = 2% */
	double peak_dev, time_dev;    /* measured / predicted - 1 */
	bool peak_ok, time_ok;
	bool time_checked;            /* false when the prediction is 0 ms */
	bool time_judged;             /* false: time is information (tol_time < 0), always ok */
};

/* Compare r with p's simulation; tolerances are fractions.  A negative
 * tol_time reports the time without judging it (the host backend's default). */
void exec_compare(const struct mp_net *net, const struct mp_plan *p, const struct mp_exec_result *r,
		  double tol_peak, double tol_time, struct mp_exec_cmp *out);

/* One op's compute and recompute actions in an iteration: how many ran, the
 * time they were predicted to take (the plan's simulation times time_scale)
 * and what they took in the median measured iteration (wall ms). */
struct mp_exec_op_time {
	uint32_t runs;
	double pred_ms, meas_ms;
};

/* Fill out[net->n_ops] (the caller's array) from p's schedule and r's median
 * iteration; ops that did not run have runs 0.  O(actions + ops). */
void exec_op_times(const struct mp_net *net, const struct mp_plan *p, const struct mp_exec_result *r,
		   struct mp_exec_op_time *out);

/* The verify report (memplan-verify(1) --report): the comparison, the
 * measurement and the per-step and per-action predicted and measured times
 * and bytes, and per op ("ops": exec_op_times, what memplan replan reads).
 * The caller adds what it knows (file names, device, the net's digest). */
json_t *exec_report_json(const struct mp_net *net, const struct mp_plan *p,
			 const struct mp_exec_result *r, const struct mp_exec_cmp *c);

#endif
