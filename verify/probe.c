/*
 * Is there a CUDA device?  Asks the CUDA driver API (cuInit,
 * cuDeviceGetCount, cuDeviceGetName, cuDeviceTotalMem) through libcuda.so.1
 * loaded at run time, so memplan starts and its host backend runs on machines
 * without a driver; `memplan verify --device cuda` and `--probe` then exit 3.
 * Whether this memplan has the CUDA backend is backends.c's to say.  O(1).
 */
#include "probe.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

typedef int (*cu_init_fn)(unsigned);
typedef int (*cu_count_fn)(int *);
typedef int (*cu_get_fn)(int *, int);
typedef int (*cu_name_fn)(char *, int, int);
typedef int (*cu_mem_fn)(size_t *, int);
typedef int (*cu_version_fn)(int *);

/* dlsym hands back an object pointer; copy it into a function pointer. */
static void *sym(void *lib, const char *name, void *fn, size_t size)
{
	void *p = dlsym(lib, name);

	if (p)
		memcpy(fn, &p, size);
	return p;
}

int exec_cuda_probe(struct mp_cuda_probe *out, struct mp_error *err)
{
	cu_init_fn init;
	cu_count_fn count;
	cu_get_fn get;
	cu_name_fn name;
	cu_mem_fn mem;
	cu_version_fn version;
	void *lib;
	int rc, dev = 0, n = 0;
	size_t bytes = 0;

	memset(out, 0, sizeof(*out));
	if (!(lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL))) {
		const char *why = dlerror();

		mp_error_set(err, "no CUDA driver (%s)", why ? why : "libcuda.so.1 cannot be loaded");
		return -1;
	}
	if (!sym(lib, "cuInit", &init, sizeof(init)) || !sym(lib, "cuDeviceGetCount", &count, sizeof(count)) ||
	    !sym(lib, "cuDeviceGet", &get, sizeof(get)) || !sym(lib, "cuDeviceGetName", &name, sizeof(name)) ||
	    !sym(lib, "cuDeviceTotalMem_v2", &mem, sizeof(mem)) ||
	    !sym(lib, "cuDriverGetVersion", &version, sizeof(version))) {
		mp_error_set(err, "the CUDA driver (libcuda.so.1) lacks the functions memplan asks for");
		dlclose(lib);
		return -1;
	}
	if ((rc = init(0)) != 0) {
		mp_error_set(err, "the CUDA driver does not start (cuInit error %d)", rc);
		dlclose(lib);
		return -1;
	}
	if ((rc = count(&n)) != 0 || n < 1) {
		mp_error_set(err, "the CUDA driver reports no device");
		dlclose(lib);
		return -1;
	}
	out->devices = n;
	if (get(&dev, 0) == 0) {
		if (name(out->name, (int)sizeof(out->name), dev) != 0)
			snprintf(out->name, sizeof(out->name), "CUDA device 0");
		if (mem(&bytes, dev) == 0)
			out->memory_bytes = bytes;
	}
	version(&out->driver_version);
	dlclose(lib);
	return 0;
}
