/*
 * memplan devices [NAME|FILE ...] [--format table|json]
 * The built-in GPU catalog (analysis/base/device.c), or the devices named (catalog
 * names or JSON device files): memory, achieved pinned host-link bandwidth
 * per direction, copy latency, peak dense throughput per dtype, memory
 * bandwidth, and where the figures come from (memplan-devices(1)); a "*"
 * marks a GPU for capacity planning only (no_verify: the AMD entries).
 */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "../analysis/zoo/zoo.h"

static void tf_cell(double v)
{
	if (v > 0)
		printf(" %8.4g", v);
	else
		printf(" %8s", "-");
}

static void device_row(const struct mp_device *d)
{
	char b[32];

	printf("%-12s %10s %8.1f %8.1f %7.1f", d->name, mp_fmt_bytes(d->memory_bytes, b, sizeof(b)),
	       d->h2d_gbps, d->d2h_gbps, d->latency_us);
	tf_cell(d->tflops[MP_DT_FLOAT32]);
	tf_cell(d->tflops[MP_DT_FLOAT16]);
	tf_cell(d->tflops[MP_DT_BFLOAT16]);
	tf_cell(d->tflops[MP_DT_FLOAT8]);
	if (d->mem_gbps > 0)
		printf(" %8.0f", d->mem_gbps);
	else
		printf(" %8s", "-");
	printf("%s\n", d->no_verify ? "  *" : "");
}

int cmd_devices(int argc, char **argv)
{
	int fmt = FMT_TABLE, rc, at;
	const struct cli_opt opts[] = {
		OPT_FORMAT("format", "table|json", 0, &fmt, 0),
		OPT_END(),
	};
	const struct cli_cmd cmd = { "devices", "[NAME|FILE ...]", opts, NULL, NULL, 0 };
	struct mp_error err = { "" };
	struct mp_device *devs;
	bool no_verify = false;
	unsigned n;

	if ((rc = cli_parse(&cmd, argc, argv, &at)) != CLI_GO)
		return rc;
	n = argc > at ? (unsigned)(argc - at) : device_catalog_count();
	devs = mp_xcalloc(n, sizeof(*devs));
	for (unsigned i = 0; i < n; i++) {
		if (argc <= at) {
			devs[i] = *device_catalog(i);
		} else if (device_resolve(argv[at + (int)i], &devs[i], &err) < 0) {
			free(devs);
			return cli_error(EXIT_BAD_INPUT, "devices: %s", err.msg);
		}
	}
	if (fmt == FMT_JSON) {
		json_t *root = json_object(), *arr = json_array();

		for (unsigned i = 0; i < n; i++)
			json_array_append_new(arr, device_to_json(&devs[i]));
		json_object_set_new(root, "devices", arr);
		json_object_set_new(root, "gen_default", json_string(ZOO_DEFAULT_DEVICE));
		out_json(stdout, root);
	} else {
		printf("%-12s %10s %8s %8s %7s %8s %8s %8s %8s %8s\n", "device", "memory", "h2d", "d2h",
		       "latency", "fp32", "fp16", "bf16", "fp8", "mem bw");
		printf("%-12s %10s %8s %8s %7s %8s %8s %8s %8s %8s\n", "", "", "GB/s", "GB/s", "us",
		       "TFLOPS", "TFLOPS", "TFLOPS", "TFLOPS", "GB/s");
		for (unsigned i = 0; i < n; i++) {
			device_row(&devs[i]);
			no_verify |= devs[i].no_verify;
		}
		if (no_verify)
			printf("*: AMD, for capacity planning only: no verify backend; memory as rocm-smi reports it\n");
		printf("\nh2d/d2h: achieved cudaMemcpyAsync bandwidth with pinned host memory, not the\n"
		       "bus's nominal figure; TFLOPS: datasheet peak dense (float16, bfloat16 and fp8 on\n"
		       "tensor cores where present); memory: as nvidia-smi reports it; GB = 1e9 B.\n"
		       "Sources per device: --format json, and memplan-devices(1).  'memplan gen'\n"
		       "estimates times for %s unless given --device.\n", ZOO_DEFAULT_DEVICE);
	}
	free(devs);
	return EXIT_OK;
}
