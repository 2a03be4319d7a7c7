/*
 * probe: is there a CUDA device?  Answered in every build, with or without
 * the CUDA backend (probe.c).
 */
#ifndef MP_VERIFY_PROBE_H
#define MP_VERIFY_PROBE_H

#include <stdint.h>

#include "../analysis/base/util.h"

/* What exec_cuda_probe finds. */
struct mp_cuda_probe {
	int devices;              /* CUDA devices the driver reports */
	char name[128];           /* device 0 */
	uint64_t memory_bytes;    /* device 0 total memory */
	int driver_version;       /* e.g. 13000 */
};

/*
 * Is a CUDA device here?  Asks the driver (libcuda.so.1, loaded at run time
 * so that memplan needs no CUDA library to start).  Returns 0 with *out
 * filled when at least one device is present, else -1 with *err saying why
 * ("no CUDA driver (libcuda.so.1: ...)", "the CUDA driver reports no device").
 */
int exec_cuda_probe(struct mp_cuda_probe *out, struct mp_error *err);

#endif
