/*
 * trace: a plan's predicted timeline as Chrome trace event JSON (trace.c).
 */
#ifndef MP_PLAN_TRACE_H
#define MP_PLAN_TRACE_H

#include <jansson.h>

#include "plan.h"

/* Chrome trace event JSON of p's predicted timeline: one track per engine,
 * a counter of resident bytes.  A new reference, owned by the caller. */
json_t *plan_trace_json(const struct mp_net *net, const struct mp_plan *p);

#endif
