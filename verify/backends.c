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
