/*
 * device: the GPU a net runs on, as far as memplan's model needs it: memory,
 * the host link (achieved pinned bandwidth and latency per direction), peak
 * dense throughput per dtype and memory bandwidth (for roofline estimates).
 * Owns the built-in catalog (memplan-devices(1) says where figures come from).
 */
#ifndef MP_DEVICE_H
#define MP_DEVICE_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "util.h"

enum mp_dtype {
	MP_DT_FLOAT32, MP_DT_FLOAT16, MP_DT_BFLOAT16, MP_DT_FLOAT64, MP_DT_FLOAT8,
	MP_DT_INT8, MP_DT_UINT8, MP_DT_INT32, MP_DT_INT64, MP_DT_BOOL,
	MP_DT__COUNT
};
/* "float32" -> MP_DT_FLOAT32 (aliases: fp32, f32, half, fp16, bf16, ...); -1. */
int mp_dtype_parse(const char *s);
const char *mp_dtype_name(enum mp_dtype d);
unsigned mp_dtype_bytes(enum mp_dtype d);

struct mp_device {
	char name[48];
	uint64_t memory_bytes;     /* 0: unlimited (no device given) */
	double h2d_gbps, d2h_gbps; /* achieved with pinned memory, GB/s = 1e9 B/s */
	double latency_us;         /* per copy, each direction */
	double tflops[MP_DT__COUNT]; /* peak dense, 0 = unknown */
	double mem_gbps;           /* device memory bandwidth, GB/s */
	const char *source;        /* where the figures come from (static) */
	bool is_default;           /* the documented default link, not a real GPU */
	bool no_verify;            /* capacity planning only: no backend of memplan
				    * runs on it (verify --device cuda, profile) */
};

/* The link memplan assumes when a net names no device: PCIe 3.0 x16 pinned. */
void device_default(struct mp_device *d);

/* Catalog: number of entries and entry i (static storage). */
unsigned device_catalog_count(void);
const struct mp_device *device_catalog(unsigned i);
/* Look a catalog name up, case-insensitively ("h100-sxm", "V100-16G"). */
const struct mp_device *device_find(const char *name);

/* 0 when a backend of memplan can run on d (verify --device cuda, profile);
 * -1 with *err saying why not: a device for capacity planning only (an AMD
 * GPU: memplan's backends are the host's and CUDA's). */
int device_check_runnable(const struct mp_device *d, struct mp_error *err);

/*
 * Fill *d from a JSON device object {name?, memory, h2d_gbps, d2h_gbps,
 * latency_us?, mem_gbps?, tflops?: {float32: .., ...}, no_verify?}.  path
 * names the object for errors ("device").  0, or -1 with *err.
 */
int device_from_json(json_t *obj, const char *path, struct mp_device *d,
		     struct mp_error *err);

/* d as the JSON object device_from_json reads (name, memory, h2d_gbps,
 * d2h_gbps, latency_us, and mem_gbps, tflops, no_verify and source where
 * known): what
 * nets, plans and `memplan devices --format json` write, so that any of
 * them can be given back as a device file.  A new reference. */
json_t *device_to_json(const struct mp_device *d);

/* Resolve a --device argument: a catalog name, or a JSON file holding a device
 * object.  0, or -1 with *err naming what was tried. */
int device_resolve(const char *arg, struct mp_device *d, struct mp_error *err);

/* Seconds a copy of bytes takes in one direction: latency + bytes / bandwidth. */
double device_copy_ms(const struct mp_device *d, uint64_t bytes, bool to_device);

#endif
