/*
 * memplan profile NET.json -o FILE [--batches pow2|all|full] [--iters N]
 *   [--warmup N]
 * Measure what plans are built on, on this GPU: each layer's forward and
 * backward with its real kernel (cuDNN/cuBLAS), and every convolution
 * algorithm per phase at micro-batch sizes (mu-cuDNN 3.4); write the net
 * again with those times and "time_source": "measured:<GPU>"
 * (memplan-profile(1)).  The measurement is exec_cuda_profile; the rest is
 * verify/profile.c.
 */
#include <errno.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "../verify/backend.h"
#include "../verify/probe.h"
#include "../verify/profile.h"

/* Refuse an output that cannot be written before minutes of measuring:
 * a directory, or a path whose directory is missing or not writable. */
static int check_output(const char *path)
{
	char *copy = mp_xstrdup(path);
	struct stat st;
	int rc = 0;

	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
		errno = EISDIR;
		rc = -1;
	} else if (access(dirname(copy), W_OK | X_OK) < 0) {
		rc = -1;
	}
	if (rc < 0)
		cli_error(EXIT_BAD_INPUT, "profile: cannot write '%s': %s", path, strerror(errno));
	free(copy);
	return rc;
}

/* The measurement, where this memplan has the CUDA backend. */
static int measure(const struct mp_net *net, const struct mp_prof_opts *o, struct mp_profile *m,
		   struct mp_error *err)
{
	const struct backend_i *be = backend_find("cuda");

	if (be && be->profile)
		return be->profile(net, o, m, err);
	prof_init(m);
	mp_error_set(err, "this memplan was built without the CUDA backend");
	return EXEC_NO_DEVICE;
}

/*
 * This GPU as the net's device: its name and memory, and the link measured
 * as verify --probe measures it (pinned copies of 256 MiB and of 4 KiB, the
 * median of 5: bandwidth each way, latency per copy), so that plans made
 * from the measured net time their copies at this GPU's speed, not at that
 * of the device the times were estimated for; the compute and memory rates
 * stay the old device's (the times kept from the model were estimated with
 * them).  Writes the "link" line into say[n].  Where the link cannot be
 * measured the device stays as it was and the line says why: the layers'
 * times are kept.
 */
static void this_device(json_t *out, const struct mp_net *net, char *say, size_t n)
{
	const struct backend_i *be = backend_find("cuda");
	char source[200];
	struct mp_cuda_link ln;
	struct mp_error err = { "" };
	struct mp_device d;

	if (!be || !be->link || be->link(&ln, &err) < 0 || !(ln.h2d_gbps > 0) || !(ln.d2h_gbps > 0)) {
		snprintf(say, n, "link      not measured (%s): the net's device is unchanged\n",
			 err.msg[0] ? err.msg : "no bandwidth measured");
		return;
	}
	if (net->has_device) {
		d = net->device;
		snprintf(source, sizeof(source), "memplan profile: memory and pinned copies measured on this GPU; "
			 "compute and memory rates of '%s'", d.name);
	} else {
		device_default(&d);
		snprintf(source, sizeof(source), "memplan profile: memory and pinned copies measured on this GPU");
	}
	snprintf(d.name, sizeof(d.name), "%s", ln.name);
	d.memory_bytes = ln.total_bytes;
	d.h2d_gbps = ln.h2d_gbps;
	d.d2h_gbps = ln.d2h_gbps;
	if (ln.latency_us > 0)
		d.latency_us = ln.latency_us;
	d.is_default = d.no_verify = false;
	d.source = source;
	json_object_set_new(out, "device", device_to_json(&d));
	snprintf(say, n, "link      h2d %.2f GB/s, d2h %.2f GB/s, %.1f us per copy (pinned copies, median of 5): "
		 "the net's device is now '%s'\n", d.h2d_gbps, d.d2h_gbps, d.latency_us, d.name);
}

/* "3 layers kept their modelled times: why ('a', 'b'); why ('c')": the
 * reasons in the order they first appear, a few names each. */
static void print_kept(const struct mp_net *net, const char **why, uint32_t n_kept)
{
	enum { MAX_REASONS = 4, MAX_NAMES = 3 };
	uint32_t shown = 0, reasons = 0;
	bool *done = mp_xcalloc(net->n_layers + 1, sizeof(*done));

	printf("kept      %u %s modelled times:", n_kept, n_kept == 1 ? "layer kept its" : "layers kept their");
	for (uint32_t i = 0; i < net->n_layers && reasons < MAX_REASONS; i++) {
		uint32_t names = 0, more = 0;

		if (!why[i] || done[i])
			continue;
		printf("%s %s (", reasons ? ";" : "", why[i]);
		for (uint32_t j = i; j < net->n_layers; j++) {
			if (!why[j] || done[j] || strcmp(why[j], why[i]))
				continue;
			done[j] = true;
			shown++;
			if (names < MAX_NAMES)
				printf("%s'%s'", names++ ? ", " : "", net->layers[j].name);
			else
				more++;
		}
		if (more)
			printf(" and %u more", more);
		printf(")");
		reasons++;
	}
	if (shown < n_kept)
		printf("; %u more for other reasons", n_kept - shown);
	printf("\n");
	free(done);
}

static void print_summary(const char *out_path, const struct mp_net *net, const struct mp_profile *m,
			  const char **why, uint32_t n_kept)
{
	uint32_t convs = 0, algos = 0;

	for (uint32_t i = 0; i < m->n_layers; i++)
		if (m->layers[i].measured && m->layers[i].n_algos) {
			convs++;
			algos += m->layers[i].n_algos;
		}
	printf("device    %s: %u warm-up and %u measured runs of each kernel, median\n", m->device, m->warmup,
	       m->iters);
	printf("measured  %u of %u layers: forward and backward (cuDNN/cuBLAS); %u algorithm timings of %u "
	       "convolution%s at micro-batches %s\n",
	       net->n_layers - n_kept, net->n_layers, algos, convs, convs == 1 ? "" : "s",
	       prof_batches_name(m->batches));
	if (n_kept)
		print_kept(net, why, n_kept);
	printf("wrote     %s: time_source \"measured:%s\"\n", out_path, m->device);
}

static const struct cli_choice batch_policies[] = {
	{ "pow2", PROF_BATCH_POW2 }, { "all", PROF_BATCH_ALL }, { "full", PROF_BATCH_FULL }, { NULL, 0 },
};

int cmd_profile(int argc, char **argv)
{
	struct mp_prof_opts o;
	const char *out_path = NULL, *path, **why = NULL;
	const struct cli_opt opts[] = {
		OPT_STRING("output", 'o', "FILE", CLI_LETTER | CLI_REQUIRED, &out_path),
		OPT_CHOICE("batches", "pow2|all|full", 0, &o.batches, batch_policies, "policy", "pow2, all or full"),
		OPT_COUNT("iters", "N", 0, &o.iters, 1),
		OPT_COUNT("warmup", "N", 0, &o.warmup, 0),
		OPT_END(),
	};
	const struct cli_cmd cmd = { "profile", "NET.json", opts, NULL, NULL, 0 };
	struct mp_profile m;
	struct mp_cuda_probe pr;
	struct mp_error err = { "" };
	char link[512];
	struct mp_net *net;
	json_t *root = NULL, *out = NULL;
	uint32_t n_kept = 0;
	int rc, at;

	prof_opts_default(&o);
	if ((rc = cli_parse(&cmd, argc, argv, &at)) != CLI_GO)
		return rc;
	if (argc - at != 1)
		return cli_usage_error(&cmd);
	path = argv[at];
	if (!out_path)
		return cli_error(EXIT_BAD_INPUT, "profile: -o FILE is required (where the measured net is written)");
	if (check_output(out_path) < 0)
		return EXIT_BAD_INPUT;
	if (!(net = cli_load_net_json(path, &root)))
		return EXIT_BAD_INPUT;
	prof_init(&m);
	/* measured times for one GPU under a device name of another */
	if (net->has_device && device_check_runnable(&net->device, &err) < 0) {
		rc = cli_error(EXIT_BAD_INPUT, "profile: %s: %s", path, err.msg);
		goto out;
	}
	if (exec_cuda_probe(&pr, &err) < 0) {
		rc = cli_error(EXIT_NO_GPU, "profile: no CUDA device: %s", err.msg);
		goto out;
	}
	rc = measure(net, &o, &m, &err);
	if (rc == EXEC_NO_DEVICE) {
		rc = cli_error(EXIT_NO_GPU, "profile: %s", err.msg);
		goto out;
	}
	if (rc < 0) {
		rc = cli_error(EXIT_INTERNAL, "profile: %s", err.msg);
		goto out;
	}
	why = mp_xcalloc(net->n_layers + 1, sizeof(*why));
	if (!(out = prof_apply(root, net, &m, why, &n_kept, &err))) {
		rc = cli_error(EXIT_INTERNAL, "profile: the measurement does not fit '%s': %s", path, err.msg);
		goto out;
	}
	/* after the layers, so that its copies disturb none of their runs */
	this_device(out, net, link, sizeof(link));
	/* 9 significant digits: the measured medians, and the file's kept times
	 * as written (gen writes 6) */
	if ((rc = out_net_file(out_path, out, 9, "profile")) == EXIT_OK) {
		print_summary(out_path, net, &m, why, n_kept);
		fputs(link, stdout);
	}
out:
	json_decref(out);
	free(why);
	prof_release(&m);
	net_free(net);
	json_decref(root);
	return rc;
}
