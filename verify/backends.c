/*
 * The backends this memplan was built with: the host backend always, the
 * CUDA backend where the Makefile found nvcc (MEMPLAN_CUDA).  The only place
 * that asks.
 */
#include "backend.h"

#include <string.h>

static const struct backend_i *const backends[] = {
	&backend_host,
#ifdef MEMPLAN_CUDA
	&backend_cuda,
#endif
};

const struct backend_i *backend_find(const char *name)
{
	for (size_t k = 0; k < sizeof(backends) / sizeof(backends[0]); k++)
		if (!strcmp(backends[k]->name, name))
			return backends[k];
	return NULL;
}

int exec_run(const char *backend, const struct mp_net *net, const struct mp_plan_req *req, const struct mp_plan *p,
	     const struct mp_exec_opts *o, struct mp_exec_result *out, struct mp_error *err)
{
	const struct backend_i *be = backend_find(backend);

	if (!be) {
		memset(out, 0, sizeof(*out));
		out->failed_action = UINT32_MAX;
		mp_error_set(err, "this memplan was built without the %s backend", backend);
		return EXEC_NO_BACKEND;
	}
	return replay_run(be, net, req, p, o, out, err);
}
