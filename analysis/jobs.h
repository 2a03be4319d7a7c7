/*
 * jobs: several training jobs sharing one GPU (TENSILE I and III-A).  The
 * jobs run asynchronously, so their peaks may coincide and what must fit is
 * the global peak.  jobs_merge makes one Net of them whose fixed execution
 * order interleaves their ops as a time-sliced compute engine starts them;
 * route, policies, planners, simulator, plan file and verify then handle it
 * as any net.  Owns the merge model and the search for the worst offsets.
 */
#ifndef MP_JOBS_H
#define MP_JOBS_H

#include <stdint.h>

#include "base/device.h"
#include "net/net.h"
#include "sched.h"

/* The most jobs one merged net holds. */
#define JOBS_MAX 64

/*
 * One Net of n jobs (n >= 1) that start at offsets_ms[j] (>= 0) on one
 * compute engine shared by processor sharing: while k jobs have an op
 * running each progresses at 1/k of its speed.  Every tensor, op and layer
 * of job j is renamed with its prefix ("j0/", or its net's name and "/"
 * when the nets' names are distinct) and the merged order is the ops by
 * their start times under that model, ties by job index, then by each job's
 * own route.  Each op keeps its own time: the simulator's one compute
 * engine runs the interleaved ops one after the other.  files[j] (or files
 * NULL) is recorded as the job's source; dev (NULL: the default link) runs
 * each job alone for its alone_ms and alone_peak.  The new Net owns copies
 * of everything (free with net_free; the inputs may be freed first).  NULL
 * with *err naming the job (a net that does not route, too many jobs, a
 * bad offset).
 */
struct mp_net *jobs_merge(const struct mp_net *const *nets, uint32_t n, const double *offsets_ms,
			  const char *const *files, const struct mp_device *dev, struct mp_error *err);

/*
 * The worst offsets found for n jobs (the highest global liveness peak of
 * the merged net): among all jobs at 0 and each job shifted so that its
 * liveness peak op starts when the others' do (alone, then on the
 * time-sliced engine).  Fills offsets_ms[n]; *tried: candidates simulated.
 * 0, or -1 with *err.
 */
int jobs_worst_offsets(const struct mp_net *const *nets, uint32_t n, const struct mp_device *dev,
		       double *offsets_ms, uint32_t *tried, struct mp_error *err);

/* The liveness peak of a net (routed here) on dev: 0 and *peak, or -1. */
int jobs_liveness_peak(const struct mp_net *net, const struct mp_device *dev, uint64_t *peak,
		       struct mp_error *err);

/*
 * Each job's iteration in a simulated schedule of a merged net: from the
 * start of its first compute action to the end of its last compute or
 * recompute action (ms[net->n_jobs], the caller's).  The engine is shared,
 * so this span holds the other jobs' ops run in between.
 */
void jobs_times(const struct mp_net *net, const struct mp_schedule *s, double *ms);

/* The job an op belongs to (0 for a net of one job). */
uint32_t jobs_of_op(const struct mp_net *net, int32_t op);

#endif
