/*
 * fakecuda's driver: the CUDA driver API calls memplan verify --probe makes
 * (verify/probe.c, through libcuda.so.1): one device, "fakecuda", with the
 * fake runtime's 80 GiB.  Built as $(BUILD)/gpu-dry/lib/libcuda.so.1 for
 * the gpu-dry memplan only (tests/cli/t0604-gpu-bench-dry.sh), apart from
 * the other fakes, so that the unit tests still find no driver.
 */
#include <cuda.h>
#include <stdio.h>

CUresult cuInit(unsigned int flags)
{
	return flags == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuDriverGetVersion(int *version)
{
	*version = 13000;
	return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int *count)
{
	*count = 1;
	return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice *device, int ordinal)
{
	if (ordinal != 0)
		return CUDA_ERROR_INVALID_DEVICE;
	*device = 0;
	return CUDA_SUCCESS;
}

CUresult cuDeviceGetName(char *name, int len, CUdevice device)
{
	if (device != 0 || len <= 0)
		return CUDA_ERROR_INVALID_VALUE;
	snprintf(name, (size_t)len, "fakecuda");
	return CUDA_SUCCESS;
}

/* (cuda.h names it cuDeviceTotalMem_v2) */
CUresult cuDeviceTotalMem(size_t *bytes, CUdevice device)
{
	if (device != 0)
		return CUDA_ERROR_INVALID_DEVICE;
	*bytes = (size_t)80 << 30;
	return CUDA_SUCCESS;
}
