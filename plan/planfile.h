/*
 * planfile: the plan file, memplan-plan(5): writing a plan with the net it
 * was made for, and reading one back into a net, a request and a
 * re-simulated plan (planfile.c).
 */
#ifndef MP_PLAN_PLANFILE_H
#define MP_PLAN_PLANFILE_H

#include <jansson.h>

#include "plan.h"

/* The plan file (memplan-plan(5)). net_json is the net as loaded (embedded
 * verbatim with its SHA-256), or for a net of several jobs (net->n_jobs) an
 * array of the jobs' nets in order, written in "jobs" with each job's
 * offset, prefix and times; budget and planner are recorded.  p's arena is
 * assigned here if plan_assign_arena has not run.  A new reference, owned by
 * the caller.  Dump it with jansson's full real precision (no
 * JSON_REAL_PRECISION flag): the digest covers the net's numbers as
 * jansson's default writes them, and a rounded net no longer matches it. */
json_t *plan_to_json(const struct mp_net *net, json_t *net_json, const struct mp_plan_req *req,
		     const struct mp_plan *p);

/*
 * Read a plan file: validate it, load the embedded net (checking its SHA-256;
 * a plan of several jobs: every job's, merged again at their offsets),
 * rebuild the schedule, re-simulate it and check the arena offsets against
 * the new lifetimes.  p_out is initialised here (plan_init).  Returns 0 with
 * *net_out (free with net_free), *req_out and *p_out (plan_release) filled:
 * the simulation and derived figures are recomputed, the offsets, arena size,
 * baselines and note come from the file.  Or -1 with *net_out NULL, *p_out
 * empty and *err naming the JSON path ("schedule[12].tensor: no tensor named
 * 'x'"); as with net_load_file, the caller prefixes the file name.
 */
int plan_read_file(const char *path, struct mp_net **net_out, struct mp_plan_req *req_out,
		   struct mp_plan *p_out, struct mp_error *err);
/* The same for a plan already parsed (root borrowed, not modified):
 * plan_read_file is mp_json_load_file and this. */
int plan_read_json(json_t *root, struct mp_net **net_out, struct mp_plan_req *req_out,
		   struct mp_plan *p_out, struct mp_error *err);
/* The digest a plan records for its net (net_sha256): the SHA-256 of v's
 * values serialized canonically, as 64 lowercase hex digits into hex.  0, or
 * -1 if v cannot be serialized. */
int plan_net_sha256(const json_t *v, char hex[65]);

#endif
