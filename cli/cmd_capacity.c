/*
 * memplan capacity NET.json --gpu NAME|SIZE[,...] [--vary batch] [--max-overhead PCT]
 *   [--planner auto|NAME|none] [--reserve SIZE]
 *   [--format table|json] [--svg FILE]
 * memplan capacity --model resnet --vary depth --gpu k40c --batch 16
 * The largest batch (or depth) each strategy and planner fits on each GPU.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "../plan/capacity.h"

struct gpu {
	struct mp_device dev;
	uint64_t memory;
	char label[64];
	char times[200];    /* where the times come from */
	struct cap_query q;
	struct cap_result res[CAP_N_ROWS];
};

static int parse_gpu(const char *item, const struct mp_net *net, struct gpu *g)
{
	const struct mp_device *d = device_find(item);
	struct mp_error err;
	uint64_t size;

	memset(g, 0, sizeof(*g));
	if (d) {
		g->dev = *d;
		g->memory = d->memory_bytes;
		snprintf(g->label, sizeof(g->label), "%s", d->name);
		return 0;
	}
	if (mp_parse_size(item, &size, &err) < 0 || size == 0) {
		cli_error(EXIT_BAD_INPUT, "--gpu: '%s' is neither a catalog GPU (see 'memplan devices') nor a memory size", item);
		return -1;
	}
	/* a bare size: the net's link, else the default one */
	if (net && net->has_device)
		g->dev = net->device;
	else
		device_default(&g->dev);
	g->memory = size;
	snprintf(g->label, sizeof(g->label), "%s", item);
	return 0;
}

/* Roofline ratio of a dtype's peak throughput and of memory bandwidth. */
static void time_factors(const struct mp_net *net, const struct mp_device *to, double *cf, double *mf,
			 char *note, size_t n)
{
	const struct mp_device *from = net->has_device ? &net->device : NULL;
	double tf = from ? from->tflops[net->dtype] : 0, tt = to->tflops[net->dtype];

	*cf = *mf = 1.0;
	if (!from || !strcmp(from->name, to->name) || to->is_default) {
		snprintf(note, n, "%s", net->time_source ? net->time_source : "as given in the file");
		return;
	}
	if (tf > 0 && tt > 0 && from->mem_gbps > 0 && to->mem_gbps > 0) {
		*cf = tf / tt;
		*mf = from->mem_gbps / to->mem_gbps;
		snprintf(note, n, "scaled from %s to %s by the roofline ratio (compute x%.3g, memory x%.3g): estimates",
			 from->name, to->name, *cf, *mf);
	} else {
		snprintf(note, n, "as given for %s (no throughput figures to scale them to %s)", from->name, to->name);
	}
}

static int add_planner_rows(const char *arg, uint32_t *rows)
{
	if (!strcmp(arg, "none"))
		return 0;
	if (!strcmp(arg, "auto") || !strcmp(arg, "all")) {
		for (unsigned k = 0; k < MP_PLANNER__COUNT; k++)
			*rows |= 1u << (MP_STRAT__COUNT + k);
		return 0;
	}
	{
		int p = mp_planner_parse(arg);

		if (p < 0 || p >= MP_PLANNER__COUNT)
			return -1;
		*rows |= 1u << (MP_STRAT__COUNT + p);
	}
	return 0;
}

static json_t *gpu_json(const struct gpu *g)
{
	json_t *o = json_object(), *arr = json_array();

	json_object_set_new(o, "gpu", json_string(g->label));
	json_object_set_new(o, "vary", json_string(g->q.vary == CAP_VARY_BATCH ? "batch" : "depth"));
	json_object_set_new(o, "memory_bytes", json_integer((json_int_t)g->memory));
	json_object_set_new(o, "usable_bytes", json_integer((json_int_t)g->q.usable_bytes));
	json_object_set_new(o, "times", json_string(g->times));
	if (g->dev.no_verify)
		json_object_set_new(o, "no_verify", json_true());
	for (unsigned row = 0; row < CAP_N_ROWS; row++) {
		const struct cap_result *r = &g->res[row];
		json_t *s;

		if (!(g->q.rows & (1u << row)))
			continue;
		s = json_object();
		json_object_set_new(s, "name", json_string(cap_row_name(row)));
		json_object_set_new(s, "max", json_integer(g->q.vary == CAP_VARY_DEPTH && r->max ?
							   cap_resnet_depth(r->max) : r->max));
		json_object_set_new(s, "time_ms", json_real(r->time_ms));
		json_object_set_new(s, "throughput", json_real(r->throughput));
		json_object_set_new(s, "evaluations", json_integer(r->evals));
		json_object_set_new(s, "at_limit", json_boolean(r->max && r->max == g->q.limit));
		json_array_append_new(arr, s);
	}
	json_object_set_new(o, "strategies", arr);
	return o;
}

static void print_gpu(const struct gpu *g, const char *what, uint64_t reserve)
{
	char b1[32], b2[32], b3[32];
	bool at_limit = false;

	printf("%s on %s: %s usable (%s less a %s reserve for the CUDA context and libraries)\n", what, g->label,
	       mp_fmt_bytes(g->q.usable_bytes, b1, sizeof(b1)), mp_fmt_bytes(g->memory, b2, sizeof(b2)),
	       mp_fmt_bytes(reserve, b3, sizeof(b3)));
	printf("times: %s\n", g->times);
	if (g->dev.no_verify)
		printf("note: %s is in the catalog for capacity planning only: memplan has no verify backend for it\n",
		       g->dev.name);
	if (g->q.max_overhead >= 0)
		printf("largest size whose slowdown stays within %.1f%% of the unconstrained run\n", 100 * g->q.max_overhead);
	printf("%-17s %10s %12s %14s %6s\n", "strategy", g->q.vary == CAP_VARY_BATCH ? "max batch" : "max depth",
	       "time ms", "samples/s", "evals");
	for (unsigned row = 0; row < CAP_N_ROWS; row++) {
		const struct cap_result *r = &g->res[row];

		if (!(g->q.rows & (1u << row)))
			continue;
		if (!r->max) {
			printf("%-17s %10s %12s %14s %6u\n", cap_row_name(row), "none", "-", "-", r->evals);
			continue;
		}
		printf("%-17s %9u%c %12.3f %14.1f %6u\n", cap_row_name(row),
		       g->q.vary == CAP_VARY_DEPTH ? cap_resnet_depth(r->max) : r->max, r->max == g->q.limit ? '+' : ' ',
		       r->time_ms, r->throughput, r->evals);
		at_limit |= r->max == g->q.limit;
	}
	if (at_limit)
		printf("+: the search's limit (%s %u): fits at every size tried\n",
		       g->q.vary == CAP_VARY_DEPTH ? "depth" : "batch",
		       g->q.vary == CAP_VARY_DEPTH ? cap_resnet_depth(g->q.limit) : g->q.limit);
}

/* Throughput against batch, one line per row, for every GPU's first... the
 * first GPU (one chart). */
static int write_svg(FILE *f, const struct gpu *g, const char *title, struct mp_error *err)
{
	const double W = 960, H = 540, L = 90, R = 30, T = 56, B = 64, pw = W - L - R, ph = H - T - B;
	static const char *const colors[CAP_N_ROWS] = { "#7f7f7f", "#1f77b4", "#2ca02c", "#d62728",
		"#9467bd", "#8c564b", "#e377c2", "#bcbd22", "#17becf", "#ff7f0e", "#393b79" };
	uint32_t nmax = 1;
	double tmax = 0, pts[CAP_N_ROWS][16], xs[CAP_N_ROWS][16];
	unsigned np[CAP_N_ROWS] = { 0 };
	struct cap_cache cache = { 0 }; /* this chart's nets by size */

	for (unsigned row = 0; row < CAP_N_ROWS; row++)
		if ((g->q.rows & (1u << row)) && g->res[row].max > nmax)
			nmax = g->res[row].max;
	/* up to 16 sizes per row, geometric from 1 to its max */
	for (unsigned row = 0; row < CAP_N_ROWS; row++) {
		uint32_t last = 0;

		if (!(g->q.rows & (1u << row)) || !g->res[row].max)
			continue;
		for (unsigned k = 0; k < 16; k++) {
			uint32_t n = (uint32_t)llround(pow((double)g->res[row].max, k / 15.0));
			bool fits;
			double ms;

			if (n <= last)
				continue;
			last = n;
			if (cap_eval(&cache, &g->q, row, n, &fits, &ms, err) < 0) {
				cap_cache_release(&cache);
				return -1;
			}
			if (!fits || ms <= 0)
				continue;
			xs[row][np[row]] = n;
			pts[row][np[row]] = n / (ms / 1000.0);
			if (pts[row][np[row]] > tmax)
				tmax = pts[row][np[row]];
			np[row]++;
		}
	}
	cap_cache_release(&cache);
	if (tmax <= 0)
		tmax = 1;
	fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" font-family=\"Helvetica, Arial, sans-serif\" font-size=\"13\">\n", W, H);
	fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n");
	fprintf(f, "<text x=\"%.0f\" y=\"28\" font-size=\"18\" font-weight=\"bold\">Throughput against batch: ", L);
	out_xml_text(f, title);
	fputs(" on ", f);
	out_xml_text(f, g->label);
	fputs("</text>\n", f);
	fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" stroke=\"#333\"/>\n", L, T, pw, ph);
	for (int k = 0; k <= 5; k++) {
		double y = T + ph * (1 - k / 5.0);

		fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%.0f</text>\n", L - 8, y + 4, tmax * k / 5.0);
		fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%.0f</text>\n", L + pw * k / 5.0, T + ph + 18, nmax * k / 5.0);
	}
	fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">batch</text>\n", L + pw / 2, H - 18);
	fprintf(f, "<text transform=\"translate(24 %.1f) rotate(-90)\" text-anchor=\"middle\">samples per second</text>\n", T + ph / 2);
	for (unsigned row = 0, li = 0; row < CAP_N_ROWS; row++) {
		if (!np[row])
			continue;
		fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"", colors[row]);
		for (unsigned k = 0; k < np[row]; k++)
			fprintf(f, "%.1f,%.1f ", L + pw * xs[row][k] / nmax, T + ph * (1 - pts[row][k] / tmax));
		fprintf(f, "\"/>\n");
		fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" fill=\"%s\">%s: max %u</text>\n", L + 12, T + 18 + 16.0 * li++,
			colors[row], cap_row_name(row), g->res[row].max);
	}
	fprintf(f, "</svg>\n");
	return 0;
}

static int set_overhead(const char *name, const char *arg, void *dst)
{
	double *x = dst;
	char *end;

	*x = strtod(arg, &end) / 100.0;
	if (*end == '%')
		end++;
	if (*end || !(*x >= 0) || *x > 1e6) {
		cli_error(EXIT_BAD_INPUT, "%s: '%s' is not a percentage (for example 10 or 10%%)", name, arg);
		return -1;
	}
	return 0;
}

static const struct cli_choice ws_modes[] = { { "none", MP_WS_NONE }, { "dynamic", MP_WS_DYNAMIC }, { NULL, 0 } };

static int set_batch(const char *name, const char *arg, void *dst)
{
	char *end;
	unsigned long v = strtoul(arg, &end, 10);

	if (*end || v == 0 || v > (1u << 24)) {
		cli_error(EXIT_BAD_INPUT, "%s: '%s' is not a batch size (1 to 16777216)", name, arg);
		return -1;
	}
	*(uint32_t *)dst = (uint32_t)v;
	return 0;
}

static void planners_help(void)
{
	char names[256];

	printf("planners: %s (memplan-plan(1))\n", mp_planner_list(names, sizeof(names), ", ", MP_PLANNER__COUNT));
}

/* The options of memplan capacity. */
struct cap_args {
	const char *gpu, *model, *svg, *vary, *planner;
	int fmt;
	double max_overhead;    /* -1: not given */
	uint64_t reserve;
	uint32_t batch;         /* --model's batch; 0: the model's */
	enum mp_ws_mode ws;
	struct mp_policy_opts popts;
};

/* The options that need or exclude one another.  EXIT_OK, or the error's
 * exit status. */
static int check_args(const struct cap_args *A)
{
	if (!A->gpu)
		return cli_error(EXIT_BAD_INPUT, "capacity: --gpu is required (a catalog name such as k40c, or a size such as 12G)");
	if (strcmp(A->vary, "batch") && strcmp(A->vary, "depth"))
		return cli_error(EXIT_BAD_INPUT, "--vary: unknown dimension '%s' (batch or depth)", A->vary);
	if (!strcmp(A->vary, "depth") && (!A->model || strcmp(A->model, "resnet")))
		return cli_error(EXIT_BAD_INPUT, "--vary depth: only for --model resnet (SuperNeurons' family, depth = 3 * (6 + 32 + n + 6) + 2)");
	if (A->model && !zoo_model_find(A->model, NULL))
		return cli_error(EXIT_BAD_INPUT, "--model: unknown model '%s' (see 'memplan gen --help')", A->model);
	if (!A->model && A->batch)
		return cli_error(EXIT_BAD_INPUT, "--batch: only with --model (a net file has its own batch)");
	return EXIT_OK;
}

/* --gpu's comma-separated list into *gpus (malloc'd, even on error).
 * EXIT_OK, or the error's exit status. */
static int parse_gpus(const char *arg, const struct mp_net *net, struct gpu **gpus, uint32_t *n_gpus)
{
	char *copy = mp_xstrdup(arg), *save = NULL;
	uint32_t cap_gpus = 0;

	for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		mp_grow((void **)gpus, &cap_gpus, *n_gpus + 1, sizeof(**gpus));
		if (parse_gpu(tok, net, &(*gpus)[*n_gpus]) < 0) {
			free(copy);
			return EXIT_BAD_INPUT;
		}
		(*n_gpus)++;
	}
	free(copy);
	if (!*n_gpus) /* "--gpu ," names none */
		return cli_error(EXIT_BAD_INPUT, "--gpu: '%s' names no GPU (a catalog name such as k40c, or a "
				 "size such as 12G, comma-separated)", arg);
	return EXIT_OK;
}

/* A zoo model's query: its batch, and times from the roofline of g's
 * device, or for a bare size of the default device's with g's link. */
static void model_query(struct gpu *g, const struct cap_args *A)
{
	struct cap_query *q = &g->q;

	q->model = A->model;
	zoo_opts_init(&q->zopts);
	q->zopts.batch = A->batch;
	if (q->vary == CAP_VARY_DEPTH && !A->batch)
		q->zopts.batch = 16;
	snprintf(g->times, sizeof(g->times), "roofline:%s (estimates from the device catalog, not measurements)",
		 g->dev.is_default ? ZOO_DEFAULT_DEVICE : g->dev.name);
	if (g->dev.is_default) {
		const struct mp_device *d = device_find(ZOO_DEFAULT_DEVICE);

		if (d) {
			struct mp_device keep = g->dev;

			q->device = *d;
			q->device.h2d_gbps = keep.h2d_gbps;
			q->device.d2h_gbps = keep.d2h_gbps;
			q->device.latency_us = keep.latency_us;
		}
	}
}

/* g's query from the options: the net (or model), its device, what it
 * varies and the rows (strategies and planners).  EXIT_OK, or the error's
 * exit status (an unknown planner). */
static int gpu_query(struct gpu *g, const struct cap_args *A, const struct mp_net *net)
{
	struct cap_query *q = &g->q;
	char names[256];

	q->vary = strcmp(A->vary, "batch") ? CAP_VARY_DEPTH : CAP_VARY_BATCH;
	q->device = g->dev;
	q->usable_bytes = g->memory > A->reserve ? g->memory - A->reserve : 0;
	q->popts = A->popts;
	q->ws_mode = A->ws;
	q->max_overhead = A->max_overhead;
	q->rows = (1u << MP_STRAT__COUNT) - 1;
	if (add_planner_rows(A->planner, &q->rows) < 0)
		return cli_error(EXIT_BAD_INPUT, "--planner: unknown planner '%s' (auto, %s, none)", A->planner,
				 mp_planner_list(names, sizeof(names), ", ", MP_PLANNER__COUNT));
	q->limit = q->vary == CAP_VARY_BATCH ? CAP_MAX_BATCH : CAP_MAX_N3;
	if (A->model) {
		model_query(g, A);
	} else {
		q->base = net;
		time_factors(net, &g->dev, &q->compute_factor, &q->memory_factor, g->times, sizeof(g->times));
	}
	return EXIT_OK;
}

/* Every GPU's answers, as JSON or as tables. */
static void print_gpus(const struct gpu *gpus, uint32_t n_gpus, const struct cap_args *A, const struct mp_net *net)
{
	char what[256];

	if (A->model)
		snprintf(what, sizeof(what), "%s%s", A->model,
			 !strcmp(A->vary, "depth") ? " (depth varied, SuperNeurons' family)" : " (batch varied)");
	else
		snprintf(what, sizeof(what), "'%s' (batch varied from %u)", net->name, net->batch);
	if (A->fmt == FMT_JSON) {
		json_t *root;

		if (n_gpus == 1) {
			root = gpu_json(&gpus[0]);
		} else {
			root = json_array();
			for (uint32_t i = 0; i < n_gpus; i++)
				json_array_append_new(root, gpu_json(&gpus[i]));
		}
		out_json(stdout, root);
	} else {
		for (uint32_t i = 0; i < n_gpus; i++) {
			if (i)
				printf("\n");
			print_gpu(&gpus[i], what, A->reserve);
		}
	}
}

int cmd_capacity(int argc, char **argv)
{
	struct cap_args A = {
		.vary = "batch", .planner = "auto", .fmt = FMT_TABLE, .max_overhead = -1,
		.reserve = CAP_DEFAULT_RESERVE, .ws = MP_WS_NONE,
	};
	int rc, at;
	const struct cli_opt opts[] = {
		OPT_STRING("gpu", 0, "NAME|SIZE[,...]", CLI_REQUIRED, &A.gpu),
		OPT_STRING("vary", 0, "batch", 0, &A.vary),
		OPT_CALL("max-overhead", 0, "PCT", 0, &A.max_overhead, set_overhead),
		OPT_STRING("planner", 0, "auto|NAME|none", CLI_NEWLINE, &A.planner),
		OPT_SIZE("reserve", "SIZE", 0, &A.reserve),
		OPT_CHOICE("workspace", "none|dynamic", CLI_NEWLINE, &A.ws, ws_modes, "mode", "none or dynamic"),
		OPT_FORMAT("format", "table|json", 0, &A.fmt, 0),
		OPT_STRING("svg", 0, "FILE", 0, &A.svg),
		OPT_STRING("model", 0, "NAME", CLI_HIDDEN, &A.model),
		OPT_CALL("batch", 0, "N", CLI_HIDDEN, &A.batch, set_batch),
		OPT_CALL("checkpoints", 0, "conv,fc,...", CLI_HIDDEN, &A.popts.checkpoints, cli_set_checkpoints),
		OPT_END(),
	};
	const struct cli_cmd cmd = {
		"capacity", "NET.json", opts,
		"       memplan capacity --model NAME --gpu NAME[,...] [--vary batch|depth] [--batch N] ...\n", planners_help, 0,
	};
	struct mp_error err = { "" };
	struct mp_net *net = NULL;
	struct gpu *gpus = NULL;
	uint32_t n_gpus = 0;
	struct out_file svgf;

	policy_opts_default(&A.popts);
	memset(&svgf, 0, sizeof(svgf));
	if ((rc = cli_parse(&cmd, argc, argv, &at)) != CLI_GO)
		return rc;
	if ((A.model && argc - at != 0) || (!A.model && argc - at != 1))
		return cli_usage_error(&cmd);
	if ((rc = check_args(&A)) != EXIT_OK)
		return rc;
	if (!A.model && !(net = cli_load_net(argv[at])))
		return EXIT_BAD_INPUT;
	if (net && !net->batch) {
		rc = cli_error(EXIT_BAD_INPUT, "%s: the net has no batch to vary (no data layer with a shape)", argv[at]);
		goto out;
	}
	if ((rc = parse_gpus(A.gpu, net, &gpus, &n_gpus)) != EXIT_OK)
		goto out;
	if (A.svg && (rc = out_open(&svgf, A.svg, "--svg")) != EXIT_OK)
		goto out;
	for (uint32_t i = 0; i < n_gpus; i++) {
		if ((rc = gpu_query(&gpus[i], &A, net)) != EXIT_OK)
			goto out;
		if (cap_run(&gpus[i].q, gpus[i].res, &err) < 0) {
			rc = cli_error(strncmp(err.msg, "internal", 8) ? EXIT_BAD_INPUT : EXIT_INTERNAL, "capacity: %s", err.msg);
			goto out;
		}
	}
	print_gpus(gpus, n_gpus, &A, net);
	if (A.svg && write_svg(svgf.f, &gpus[0], A.model ? A.model : net->name, &err) < 0) {
		rc = cli_error(EXIT_INTERNAL, "--svg: %s", err.msg);
	} else if (A.svg) {
		rc = out_commit(&svgf, false);
	}
out:
	if (svgf.f)
		out_abort(&svgf);
	free(gpus);
	net_free(net);
	return rc;
}
