/*
 * convconf (internal to plan/): the convolution configurations of
 * --workspace wr and wd, after mu-cuDNN (convconf.c, over ucudnn.h).
 */
#ifndef MP_PLAN_CONVCONF_H
#define MP_PLAN_CONVCONF_H

#include <stdint.h>

#include "plan.h"

/*
 * Convolution configurations for --workspace wr|wd (mu-cuDNN): for every op
 * with algorithm alternatives, the algorithm (algo[op]) or micro-batch list
 * (micro_n[op] > 1, micro[op] malloc'd) chosen under ws_limit_bytes (per
 * kernel for wr, in total for wd).  0, or -1 with *err when no configuration
 * fits the limit.
 */
int plan_conv_configs(const struct mp_net *net, const struct mp_plan_req *req, int32_t *algo,
		      uint32_t *micro_n, struct mp_micro **micro, struct mp_error *err);

#endif
