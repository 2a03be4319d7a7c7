/*
 * Device model and built-in GPU catalog.  Figures and their sources are listed
 * in memplan-devices(1); summary:
 *  memory      total device memory as nvidia-smi reports it for the board (MiB)
 *  h2d/d2h     achieved cudaMemcpyAsync bandwidth from/to pinned host memory,
 *              typical of the board's host link (PCIe 3.0 x16 ~12 GB/s,
 *              PCIe 4.0 x16 ~24 GB/s, PCIe 5.0 x16 ~50 GB/s), not the bus's
 *              nominal figure
 *              (an estimate from the link generation where nobody measured)
 *  tflops      vendor datasheet peak dense throughput (no sparsity); float16,
 *              bfloat16 and float8 use tensor cores where the board has them
 *  mem_gbps    vendor datasheet memory bandwidth
 * AMD entries (memory as rocm-smi reports it) are for capacity planning
 * only: no backend of memplan runs on them (no_verify).
 */
#include "device.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "jget.h"

static const struct {
	const char *name;
	enum mp_dtype dt;
	unsigned bytes;
} dtypes[] = {
	{ "float32", MP_DT_FLOAT32, 4 }, { "fp32", MP_DT_FLOAT32, 4 },
	{ "f32", MP_DT_FLOAT32, 4 },     { "float", MP_DT_FLOAT32, 4 },
	{ "float16", MP_DT_FLOAT16, 2 }, { "fp16", MP_DT_FLOAT16, 2 },
	{ "f16", MP_DT_FLOAT16, 2 },     { "half", MP_DT_FLOAT16, 2 },
	{ "bfloat16", MP_DT_BFLOAT16, 2 }, { "bf16", MP_DT_BFLOAT16, 2 },
	{ "float64", MP_DT_FLOAT64, 8 }, { "fp64", MP_DT_FLOAT64, 8 },
	{ "double", MP_DT_FLOAT64, 8 },  { "float8", MP_DT_FLOAT8, 1 },
	{ "fp8", MP_DT_FLOAT8, 1 },      { "int8", MP_DT_INT8, 1 },
	{ "uint8", MP_DT_UINT8, 1 },     { "int32", MP_DT_INT32, 4 },
	{ "int64", MP_DT_INT64, 8 },     { "bool", MP_DT_BOOL, 1 },
};

int mp_dtype_parse(const char *s)
{
	for (size_t i = 0; i < sizeof(dtypes) / sizeof(dtypes[0]); i++)
		if (!strcasecmp(s, dtypes[i].name))
			return (int)dtypes[i].dt;
	return -1;
}

const char *mp_dtype_name(enum mp_dtype d)
{
	for (size_t i = 0; i < sizeof(dtypes) / sizeof(dtypes[0]); i++)
		if (dtypes[i].dt == d)
			return dtypes[i].name;
	return "?";
}

unsigned mp_dtype_bytes(enum mp_dtype d)
{
	for (size_t i = 0; i < sizeof(dtypes) / sizeof(dtypes[0]); i++)
		if (dtypes[i].dt == d)
			return dtypes[i].bytes;
	return 0;
}

#define MIB(x) ((uint64_t)(x) << 20)
#define PCIE3 "link: PCIe 3.0 x16 pinned, achieved"
#define PCIE4 "link: PCIe 4.0 x16 pinned, achieved"
#define PCIE5 "link: PCIe 5.0 x16 pinned, achieved"
#define DS "; memory: nvidia-smi total; throughput and memory bandwidth: NVIDIA datasheet, dense"
#define PCIE4_EST "link: PCIe 4.0 x16 pinned, estimated from the link generation, not measured"
#define PCIE5_EST "link: PCIe 5.0 x16 pinned, estimated from the link generation, not measured"
#define C2C_EST "link: NVLink-C2C to the Grace CPU, estimated from the link, not measured"
#define DERIVED "; figures derived or not published: see memplan-devices(1)"
#define AMD_DS "; memory: rocm-smi total; throughput and memory bandwidth: AMD datasheet, dense" \
	"; capacity planning only: no verify backend"

/*                                    fp32   fp16   bf16  fp64   fp8   int8 */
#define TF(f32, f16, bf16, f64, f8, i8) \
	{ [MP_DT_FLOAT32] = f32, [MP_DT_FLOAT16] = f16, [MP_DT_BFLOAT16] = bf16, \
	  [MP_DT_FLOAT64] = f64, [MP_DT_FLOAT8] = f8, [MP_DT_INT8] = i8 }

static const struct mp_device catalog[] = {
	{ "k40c", MIB(11441), 10.0, 10.0, 10.0, TF(4.29, 4.29, 0, 1.43, 0, 0), 288,
	  PCIE3 " (K40c measures 10 GB/s; SuperNeurons 3.3.2 quotes 8)" DS, false, false },
	{ "titan-xp", MIB(12196), 12.0, 12.0, 10.0, TF(12.1, 0.19, 0, 0.38, 0, 48.6), 548, PCIE3 DS, false, false },
	{ "p100", MIB(16280), 12.0, 12.0, 10.0, TF(9.3, 18.7, 0, 4.7, 0, 0), 732, PCIE3 " (P100 PCIe 16 GB)" DS, false, false },
	{ "v100-16g", MIB(16160), 12.0, 12.0, 10.0, TF(15.7, 125, 0, 7.8, 0, 62), 900, PCIE3 " (V100 SXM2 16 GB)" DS, false, false },
	{ "v100-32g", MIB(32510), 12.0, 12.0, 10.0, TF(15.7, 125, 0, 7.8, 0, 62), 900, PCIE3 " (V100 SXM2 32 GB)" DS, false, false },
	{ "a100-40g", MIB(40536), 24.0, 24.0, 8.0, TF(19.5, 312, 312, 19.5, 0, 624), 1555, PCIE4 " (A100 SXM4 40 GB)" DS, false, false },
	{ "a100-80g", MIB(81920), 24.0, 24.0, 8.0, TF(19.5, 312, 312, 19.5, 0, 624), 2039, PCIE4 " (A100 SXM4 80 GB)" DS, false, false },
	{ "l4", MIB(23034), 24.0, 24.0, 8.0, TF(30.3, 121, 121, 0.49, 242, 242), 300, PCIE4 DS, false, false },
	{ "rtx-3090", MIB(24576), 24.0, 24.0, 8.0, TF(35.6, 71, 71, 0.56, 0, 142), 936, PCIE4 DS, false, false },
	{ "rtx-4090", MIB(24564), 24.0, 24.0, 8.0, TF(82.6, 165, 165, 1.29, 330, 330), 1008, PCIE4 DS, false, false },
	{ "h100-pcie", MIB(81559), 50.0, 50.0, 6.0, TF(51.2, 756, 756, 25.6, 1513, 1513), 2000, PCIE5 DS, false, false },
	{ "h100-sxm", MIB(81559), 50.0, 50.0, 6.0, TF(67, 989, 989, 34, 1979, 1979), 3350, PCIE5 DS, false, false },
	{ "h200", MIB(143771), 50.0, 50.0, 6.0, TF(67, 989, 989, 34, 1979, 1979), 4800, PCIE5 " (H200 SXM)" DS, false, false },
	{ "b200", MIB(183359), 50.0, 50.0, 6.0, TF(75, 2250, 2250, 37, 4500, 4500), 7700,
	  PCIE5_EST " (HGX B200)" DS, false, false },
	{ "gb200", MIB(189471), 180.0, 180.0, 6.0, TF(80, 2500, 2500, 40, 5000, 5000), 8000,
	  C2C_EST " (GB200 NVL72, per GPU)" DS, false, false },
	{ "rtx-5090", MIB(32607), 50.0, 50.0, 6.0, TF(104.8, 209.6, 209.6, 0, 419.2, 0), 1792,
	  PCIE5_EST DS DERIVED, false, false },
	{ "rtx-6000-ada", MIB(49140), 24.0, 24.0, 8.0, TF(91.1, 360.1, 360.1, 0, 729, 729), 960,
	  PCIE4_EST DS DERIVED, false, false },
	{ "l40s", MIB(46068), 24.0, 24.0, 8.0, TF(91.6, 362.05, 362.05, 0, 733, 733), 864,
	  PCIE4_EST DS DERIVED, false, false },
	{ "a10", MIB(23028), 24.0, 24.0, 8.0, TF(31.2, 125, 125, 0, 0, 0), 600, PCIE4_EST DS DERIVED, false, false },
	{ "h20", MIB(97871), 50.0, 50.0, 6.0, TF(44, 148, 148, 1, 296, 296), 4000,
	  PCIE5_EST "; memory: nvidia-smi total; throughput and memory bandwidth: NVIDIA figures as"
	  " published by resellers, dense (no public datasheet)" DERIVED, false, false },
	{ "mi300x", MIB(196592), 50.0, 50.0, 6.0, TF(163.4, 1307.4, 1307.4, 81.7, 2614.9, 2614.9), 5300,
	  PCIE5_EST AMD_DS, false, true },
	{ "mi325x", MIB(262128), 50.0, 50.0, 6.0, TF(163.4, 1307.4, 1307.4, 81.7, 2614.9, 2614.9), 6000,
	  PCIE5_EST "; memory: estimated, 256 GiB (ROCm GPU specifications) less the 16 MiB rocm-smi withholds"
	  " on the MI300X; throughput and memory bandwidth: AMD datasheet, dense"
	  "; capacity planning only: no verify backend", false, true },
};

void device_default(struct mp_device *d)
{
	memset(d, 0, sizeof(*d));
	snprintf(d->name, sizeof(d->name), "default-link");
	d->memory_bytes = 0;
	d->h2d_gbps = 12.0;
	d->d2h_gbps = 12.0;
	d->latency_us = 10.0;
	d->source = "no device given: PCIe 3.0 x16 pinned, 12 GB/s each way, 10 us per copy, memory unlimited";
	d->is_default = true;
}

unsigned device_catalog_count(void)
{
	return sizeof(catalog) / sizeof(catalog[0]);
}

const struct mp_device *device_catalog(unsigned i)
{
	return i < device_catalog_count() ? &catalog[i] : NULL;
}

const struct mp_device *device_find(const char *name)
{
	for (unsigned i = 0; i < device_catalog_count(); i++)
		if (!strcasecmp(catalog[i].name, name))
			return &catalog[i];
	return NULL;
}

int device_check_runnable(const struct mp_device *d, struct mp_error *err)
{
	if (!d->no_verify)
		return 0;
	mp_error_set(err, "'%s' is a GPU for capacity planning only: memplan has no verify backend for it "
		     "(verify and profile run on CUDA GPUs)", d->name);
	return -1;
}

int device_from_json(json_t *obj, const char *path, struct mp_device *d,
		     struct mp_error *err)
{
	static const char *const keys[] = { "name", "memory", "h2d_gbps", "d2h_gbps",
		"latency_us", "mem_gbps", "tflops", "no_verify", "source", NULL };
	char p[256];
	json_t *v;

	if (jget_object(obj, path, err) < 0 || jget_check_keys(obj, path, keys, err) < 0)
		return -1;
	memset(d, 0, sizeof(*d));
	snprintf(d->name, sizeof(d->name), "custom");
	d->latency_us = 10.0;
	d->source = "user-supplied device description";
	if ((v = json_object_get(obj, "name"))) {
		const char *s;

		jget_path(p, sizeof(p), path, "name");
		if (jget_string(v, p, &s, err) < 0)
			return -1;
		snprintf(d->name, sizeof(d->name), "%s", s);
	}
	static const char *const req[] = { "memory", "h2d_gbps", "d2h_gbps" };
	for (unsigned i = 0; i < 3; i++)
		if (!json_object_get(obj, req[i])) {
			mp_error_set(err, "%s%smissing \"%s\"", path, *path ? ": " : "", req[i]);
			return -1;
		}
	jget_path(p, sizeof(p), path, "memory");
	if (jget_size(json_object_get(obj, "memory"), p, &d->memory_bytes, err) < 0)
		return -1;
	if (d->memory_bytes == 0) {
		mp_error_set(err, "%s: device memory must be positive", p);
		return -1;
	}
	jget_path(p, sizeof(p), path, "h2d_gbps");
	if (jget_range(json_object_get(obj, "h2d_gbps"), p, 1e-6, 1e6, "GB/s", &d->h2d_gbps, err) < 0)
		return -1;
	jget_path(p, sizeof(p), path, "d2h_gbps");
	if (jget_range(json_object_get(obj, "d2h_gbps"), p, 1e-6, 1e6, "GB/s", &d->d2h_gbps, err) < 0)
		return -1;
	if ((v = json_object_get(obj, "latency_us"))) {
		jget_path(p, sizeof(p), path, "latency_us");
		if (jget_range(v, p, 0, 1e9, "us", &d->latency_us, err) < 0)
			return -1;
	}
	if ((v = json_object_get(obj, "mem_gbps"))) {
		jget_path(p, sizeof(p), path, "mem_gbps");
		if (jget_range(v, p, 1e-6, 1e9, "GB/s", &d->mem_gbps, err) < 0)
			return -1;
	}
	if ((v = json_object_get(obj, "no_verify"))) {
		int b;

		jget_path(p, sizeof(p), path, "no_verify");
		if (jget_bool(v, p, &b, err) < 0)
			return -1;
		d->no_verify = b;
	}
	if ((v = json_object_get(obj, "tflops"))) {
		const char *key;
		json_t *t;

		jget_path(p, sizeof(p), path, "tflops");
		if (jget_object(v, p, err) < 0)
			return -1;
		json_object_foreach(v, key, t) {
			int dt = mp_dtype_parse(key);

			{ char q[200]; jget_path(q, sizeof(q), path, "tflops"); jget_path(p, sizeof(p), q, key); }
			if (dt < 0) {
				mp_error_set(err, "%s: unknown dtype", p);
				return -1;
			}
			if (jget_range(t, p, 0, 1e9, "TFLOPS", &d->tflops[dt], err) < 0)
				return -1;
		}
	}
	return 0;
}

int device_resolve(const char *arg, struct mp_device *d, struct mp_error *err)
{
	const struct mp_device *c = device_find(arg);
	json_t *root;
	int rc;

	if (c) {
		*d = *c;
		return 0;
	}
	if (!strchr(arg, '/') && !strstr(arg, ".json")) {
		mp_error_set(err, "unknown device '%s' (see 'memplan devices', or give a JSON file)", arg);
		return -1;
	}
	root = mp_json_load_file(arg, err);
	if (!root) {
		mp_error_prefix(err, "%s: ", arg);
		return -1;
	}
	rc = device_from_json(root, "", d, err);
	if (rc < 0)
		mp_error_prefix(err, "%s: ", arg);
	json_decref(root);
	return rc;
}

double device_copy_ms(const struct mp_device *d, uint64_t bytes, bool to_device)
{
	double gbps = to_device ? d->h2d_gbps : d->d2h_gbps;

	return d->latency_us * 1e-3 + (double)bytes / (gbps * 1e6);
}

json_t *device_to_json(const struct mp_device *d)
{
	json_t *o = json_object(), *tf = json_object();

	json_object_set_new(o, "name", json_string(d->name));
	json_object_set_new(o, "memory", json_integer((json_int_t)d->memory_bytes));
	json_object_set_new(o, "h2d_gbps", json_real(d->h2d_gbps));
	json_object_set_new(o, "d2h_gbps", json_real(d->d2h_gbps));
	json_object_set_new(o, "latency_us", json_real(d->latency_us));
	if (d->mem_gbps > 0)
		json_object_set_new(o, "mem_gbps", json_real(d->mem_gbps));
	for (int k = 0; k < MP_DT__COUNT; k++)
		if (d->tflops[k] > 0)
			json_object_set_new(tf, mp_dtype_name((enum mp_dtype)k), json_real(d->tflops[k]));
	if (json_object_size(tf))
		json_object_set_new(o, "tflops", tf);
	else
		json_decref(tf);
	if (d->no_verify)
		json_object_set_new(o, "no_verify", json_true());
	if (d->source)
		json_object_set_new(o, "source", json_string(d->source));
	return o;
}
