/*
 * memplan capacity NET.json --gpu NAME|SIZE[,...] [--vary batch|seq|tokens]
 *   [--max-overhead PCT] [--planner auto|NAME|none] [--reserve SIZE]
 *   [--format table|json] [--svg FILE]
 * memplan capacity --model resnet --vary depth --gpu k40c --batch 16
 * memplan capacity --model gpt2 --vary seq --gpu h100-sxm --batch 8
 * The largest batch (or depth, or sequence length) each strategy and planner
 * fits on each GPU.  A sequence length is varied by regenerating the model
 * (--model, or the "generator" of a net memplan gen wrote) at each length.
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

static const char *const vary_names[] = { "batch", "depth", "seq", "tokens", "copies" };

/* The value shown for size n: a depth for n3, tokens for a seq. */
static uint64_t shown(const struct cap_query *q, uint32_t n)
{
	return q->vary == CAP_VARY_DEPTH && n ? cap_resnet_depth(n) : q->vary == CAP_VARY_TOKENS ?
	       (uint64_t)q->zopts.batch * n : n;
}

static json_t *gpu_json(const struct gpu *g)
{
	json_t *o = json_object(), *arr = json_array();

	json_object_set_new(o, "gpu", json_string(g->label));
	json_object_set_new(o, "vary", json_string(vary_names[g->q.vary]));
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
		json_object_set_new(s, "max", json_integer((json_int_t)shown(&g->q, r->max)));
		if (g->q.vary == CAP_VARY_SEQ || g->q.vary == CAP_VARY_TOKENS) {
			json_object_set_new(s, "batch", json_integer(g->q.zopts.batch));
			json_object_set_new(s, "seq", json_integer(r->max));
			json_object_set_new(s, "tokens", json_integer((json_int_t)g->q.zopts.batch * r->max));
		}
		json_object_set_new(s, "time_ms", json_real(r->time_ms));
		json_object_set_new(s, "throughput", json_real(r->throughput));
		json_object_set_new(s, "evaluations", json_integer(r->evals));
		json_object_set_new(s, "at_limit", json_boolean(r->max && r->max == g->q.limit));
		json_array_append_new(arr, s);
	}
	json_object_set_new(o, "strategies", arr);
	return o;
}

/* The rows of --vary tokens: the token count, and the batch and seq that
 * give it. */
static void print_token_rows(const struct gpu *g)
{
	printf("%-17s %11s %6s %8s %12s %14s %6s\n", "strategy", "max tokens", "batch", "seq", "time ms",
	       "tokens/s", "evals");
	for (unsigned row = 0; row < CAP_N_ROWS; row++) {
		const struct cap_result *r = &g->res[row];

		if (!(g->q.rows & (1u << row)))
			continue;
		if (!r->max) {
			printf("%-17s %11s %6u %8s %12s %14s %6u\n", cap_row_name(row), "none", g->q.zopts.batch, "-",
			       "-", "-", r->evals);
			continue;
		}
		printf("%-17s %10llu%c %6u %8u %12.3f %14.1f %6u\n", cap_row_name(row),
		       (unsigned long long)shown(&g->q, r->max), r->max == g->q.limit ? '+' : ' ', g->q.zopts.batch,
		       r->max, r->time_ms, r->throughput, r->evals);
	}
}

/* The rows of the other axes: the size, in the axis' unit. */
static void print_rows(const struct gpu *g)
{
	char head[16];

	snprintf(head, sizeof(head), "max %s", vary_names[g->q.vary]);
	printf("%-17s %10s %12s %14s %6s\n", "strategy", head, "time ms", "samples/s", "evals");
	for (unsigned row = 0; row < CAP_N_ROWS; row++) {
		const struct cap_result *r = &g->res[row];

		if (!(g->q.rows & (1u << row)))
			continue;
		if (!r->max) {
			printf("%-17s %10s %12s %14s %6u\n", cap_row_name(row), "none", "-", "-", r->evals);
			continue;
		}
		printf("%-17s %9llu%c %12.3f %14.1f %6u\n", cap_row_name(row), (unsigned long long)shown(&g->q, r->max),
		       r->max == g->q.limit ? '+' : ' ', r->time_ms, r->throughput, r->evals);
	}
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
	for (unsigned row = 0; row < CAP_N_ROWS; row++)
		at_limit |= (g->q.rows & (1u << row)) && g->res[row].max == g->q.limit;
	if (g->q.vary == CAP_VARY_TOKENS)
		print_token_rows(g);
	else
		print_rows(g);
	if (at_limit && g->q.vary == CAP_VARY_TOKENS)
		printf("+: the search's limit (seq %u, the longest the model builds): fits at every size tried\n",
		       g->q.limit);
	else if (at_limit)
		printf("+: the search's limit (%s %llu%s): fits at every size tried\n", vary_names[g->q.vary],
		       (unsigned long long)shown(&g->q, g->q.limit), g->q.vary == CAP_VARY_SEQ ? ", the longest the model builds" : "");
}

/* Throughput against the size varied (batch, seq, tokens), one line per
 * row, for the first GPU (one chart). */
static int write_svg(FILE *f, const struct gpu *g, const char *title, struct mp_error *err)
{
	const double W = 960, H = 540, L = 90, R = 30, T = 56, B = 64, pw = W - L - R, ph = H - T - B;
	static const char *const colors[CAP_N_ROWS] = { "#7f7f7f", "#1f77b4", "#2ca02c", "#d62728",
		"#9467bd", "#8c564b", "#e377c2", "#bcbd22", "#17becf", "#ff7f0e", "#393b79" };
	uint32_t nmax = 1;
	double tmax = 0, pts[CAP_N_ROWS][16], xs[CAP_N_ROWS][16];
	unsigned np[CAP_N_ROWS] = { 0 };
	struct cap_cache cache = { 0 }; /* this chart's nets by size */
	bool by_seq = g->q.vary == CAP_VARY_SEQ || g->q.vary == CAP_VARY_TOKENS;
	const char *xname = g->q.vary == CAP_VARY_SEQ ? "sequence length" : g->q.vary == CAP_VARY_TOKENS ?
			    "tokens per step" : g->q.vary == CAP_VARY_COPIES ? "copies" : "batch";
	double xmax;

	for (unsigned row = 0; row < CAP_N_ROWS; row++)
		if ((g->q.rows & (1u << row)) && g->res[row].max > nmax)
			nmax = g->res[row].max;
	xmax = by_seq ? (double)shown(&g->q, nmax) : nmax;
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
			xs[row][np[row]] = by_seq ? (double)shown(&g->q, n) : n;
			pts[row][np[row]] = (by_seq || g->q.vary == CAP_VARY_COPIES ? cap_per_step(&g->q, n) : n) /
					    (ms / 1000.0);
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
	fprintf(f, "<text x=\"%.0f\" y=\"28\" font-size=\"18\" font-weight=\"bold\">Throughput against %s: ", L, xname);
	out_xml_text(f, title);
	fputs(" on ", f);
	out_xml_text(f, g->label);
	fputs("</text>\n", f);
	fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" stroke=\"#333\"/>\n", L, T, pw, ph);
	for (int k = 0; k <= 5; k++) {
		double y = T + ph * (1 - k / 5.0);

		fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%.0f</text>\n", L - 8, y + 4, tmax * k / 5.0);
		fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%.0f</text>\n", L + pw * k / 5.0, T + ph + 18, xmax * k / 5.0);
	}
	fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n", L + pw / 2, H - 18, xname);
	fprintf(f, "<text transform=\"translate(24 %.1f) rotate(-90)\" text-anchor=\"middle\">%s per second</text>\n", T + ph / 2,
		g->q.vary == CAP_VARY_TOKENS ? "tokens" : "samples");
	for (unsigned row = 0, li = 0; row < CAP_N_ROWS; row++) {
		if (!np[row])
			continue;
		fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"", colors[row]);
		for (unsigned k = 0; k < np[row]; k++)
			fprintf(f, "%.1f,%.1f ", L + pw * xs[row][k] / xmax, T + ph * (1 - pts[row][k] / tmax));
		fprintf(f, "\"/>\n");
		fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" fill=\"%s\">%s: max %llu</text>\n", L + 12, T + 18 + 16.0 * li++,
			colors[row], cap_row_name(row), by_seq ? (unsigned long long)shown(&g->q, g->res[row].max) :
			(unsigned long long)g->res[row].max);
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

/* --depth, --hidden, --heads, --seq: a whole number; the model checks its
 * own range. */
static int set_size_opt(const char *name, const char *arg, void *dst)
{
	char *end;
	unsigned long v = strtoul(arg, &end, 10);

	if (*arg < '0' || *arg > '9' || *end || v == 0 || v > CAP_MAX_SEQ) {
		cli_error(EXIT_BAD_INPUT, "%s: '%s' is not a whole number from 1 to %u", name, arg, CAP_MAX_SEQ);
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
	uint32_t depth, hidden, heads, seq; /* --model's; 0: the model's */
	int copies;             /* --copies: copies of the net as jobs on one GPU */
	enum mp_ws_mode ws;
	struct mp_policy_opts popts;
	/* resolved: the model and options regenerated at each size (--model,
	 * or a net's "generator" for --vary seq|tokens); NULL: a net scaled */
	const char *zmodel;
	struct zoo_opts zo;
};

static bool by_seq(const struct cap_args *A)
{
	return !strcmp(A->vary, "seq") || !strcmp(A->vary, "tokens");
}

/* The models that take a seq, for messages ("gpt2, bert, seq2seq"). */
static const char *seq_models(char *buf, size_t n)
{
	size_t k = 0;

	buf[0] = 0;
	for (unsigned i = 0; i < zoo_model_count() && k < n; i++)
		if (zoo_model_at(i)->options & ZOO_OPT_SEQ)
			k += (size_t)snprintf(buf + k, n - k, "%s%s", k ? ", " : "", zoo_model_at(i)->name);
	return buf;
}

/* The options that need or exclude one another.  EXIT_OK, or the error's
 * exit status. */
static int check_args(const struct cap_args *A)
{
	const struct zoo_model *zm = A->model ? zoo_model_find(A->model, NULL) : NULL;
	char names[128];

	if (!A->gpu)
		return cli_error(EXIT_BAD_INPUT, "capacity: --gpu is required (a catalog name such as k40c, or a size such as 12G)");
	if (strcmp(A->vary, "batch") && strcmp(A->vary, "depth") && !by_seq(A))
		return cli_error(EXIT_BAD_INPUT, "--vary: unknown dimension '%s' (batch, depth, seq or tokens)", A->vary);
	if (!strcmp(A->vary, "depth") && (!A->model || strcmp(A->model, "resnet")))
		return cli_error(EXIT_BAD_INPUT, "--vary depth: only for --model resnet (SuperNeurons' family, depth = 3 * (6 + 32 + n + 6) + 2)");
	if (A->model && !zm)
		return cli_error(EXIT_BAD_INPUT, "--model: unknown model '%s' (see 'memplan gen --help')", A->model);
	if (zm && by_seq(A) && !(zm->options & ZOO_OPT_SEQ))
		return cli_error(EXIT_BAD_INPUT, "--vary %s: '%s' has no sequence length (models with one: %s)", A->vary,
				 A->model, seq_models(names, sizeof(names)));
	if (!A->model && A->batch)
		return cli_error(EXIT_BAD_INPUT, "--batch: only with --model (a net file has its own batch)");
	if (!A->model && (A->depth || A->hidden || A->heads || A->seq))
		return cli_error(EXIT_BAD_INPUT, "--%s: only with --model (a net file fixes it)",
				 A->depth ? "depth" : A->hidden ? "hidden" : A->heads ? "heads" : "seq");
	if (A->depth && !strcmp(A->vary, "depth"))
		return cli_error(EXIT_BAD_INPUT, "--depth: not with --vary depth (the depth is what is varied)");
	if (A->seq && by_seq(A))
		return cli_error(EXIT_BAD_INPUT, "--seq: not with --vary %s (the seq is what is varied)", A->vary);
	if (A->copies && A->model)
		return cli_error(EXIT_BAD_INPUT, "--copies: only with a net file (the job to copy)");
	if (A->copies && strcmp(A->vary, "batch"))
		return cli_error(EXIT_BAD_INPUT, "--copies: not with --vary %s (the number of copies is what is varied)",
				 A->vary);
	return EXIT_OK;
}

/* For --vary seq|tokens on a net file: the model and options its
 * "generator" records, into A->zmodel and A->zo.  EXIT_OK, or the error's
 * exit status. */
static int net_generator(const char *path, json_t *root, const struct mp_net *net, struct cap_args *A)
{
	json_t *gen = json_object_get(root, "generator");
	const char *name = json_string_value(json_object_get(gen, "model"));
	const struct zoo_model *zm = name ? zoo_model_find(name, NULL) : NULL;
	struct mp_error err = { "" };
	char names[128];

	if (!gen)
		return cli_error(EXIT_BAD_INPUT, "%s: --vary %s: the net has no \"generator\" (only a net that memplan gen "
				 "wrote can be regenerated at each sequence length)", path, A->vary);
	if (zm && !(zm->options & ZOO_OPT_SEQ))
		return cli_error(EXIT_BAD_INPUT, "%s: --vary %s: its model '%s' has no sequence length (models with one: %s)",
				 path, A->vary, name, seq_models(names, sizeof(names)));
	if (zoo_opts_from_net(root, net, &A->zmodel, &A->zo, &err) < 0)
		return cli_error(EXIT_BAD_INPUT, "%s: --vary %s: %s", path, A->vary, err.msg);
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

	q->model = A->zmodel;
	q->zopts = A->zo;
	if (q->vary == CAP_VARY_DEPTH && !q->zopts.batch)
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

	for (unsigned k = 0; k < sizeof(vary_names) / sizeof(vary_names[0]); k++)
		if (!strcmp(A->vary, vary_names[k]))
			q->vary = (enum cap_vary)k;
	q->device = g->dev;
	q->usable_bytes = g->memory > A->reserve ? g->memory - A->reserve : 0;
	q->popts = A->popts;
	q->ws_mode = A->ws;
	q->max_overhead = A->max_overhead;
	q->rows = (1u << MP_STRAT__COUNT) - 1;
	if (add_planner_rows(A->planner, &q->rows) < 0)
		return cli_error(EXIT_BAD_INPUT, "--planner: unknown planner '%s' (auto, %s, none)", A->planner,
				 mp_planner_list(names, sizeof(names), ", ", MP_PLANNER__COUNT));
	q->limit = q->vary == CAP_VARY_BATCH ? CAP_MAX_BATCH : q->vary == CAP_VARY_COPIES ? CAP_MAX_COPIES : CAP_MAX_N3;
	if (A->zmodel) {
		struct mp_error err = { "" };

		model_query(g, A);
		if (by_seq(A) && cap_seq_resolve(q, &err) < 0)
			return cli_error(EXIT_BAD_INPUT, "capacity: %s", err.msg);
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

	if (by_seq(A))
		snprintf(what, sizeof(what), "%s%s%s%s (%s varied at batch %u)", net ? "'" : "", net ? net->name : A->model,
			 net ? "' regenerated as " : "", net ? A->zmodel : "",
			 !strcmp(A->vary, "seq") ? "sequence length" : "tokens per step, batch x seq, with the seq",
			 gpus[0].q.zopts.batch);
	else if (A->model)
		snprintf(what, sizeof(what), "%s%s", A->model,
			 !strcmp(A->vary, "depth") ? " (depth varied, SuperNeurons' family)" : " (batch varied)");
	else if (A->copies)
		snprintf(what, sizeof(what), "copies of '%s' as jobs sharing the GPU, started together so that "
			 "their peaks coincide (compute time-sliced)", net->name);
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
		OPT_STRING("vary", 0, "batch|seq|tokens", 0, &A.vary),
		OPT_FLAG("copies", 0, &A.copies),
		OPT_CALL("max-overhead", 0, "PCT", CLI_NEWLINE, &A.max_overhead, set_overhead),
		OPT_STRING("planner", 0, "auto|NAME|none", 0, &A.planner),
		OPT_SIZE("reserve", "SIZE", 0, &A.reserve),
		OPT_CHOICE("workspace", "none|dynamic", CLI_NEWLINE, &A.ws, ws_modes, "mode", "none or dynamic"),
		OPT_FORMAT("format", "table|json", 0, &A.fmt, 0),
		OPT_STRING("svg", 0, "FILE", 0, &A.svg),
		OPT_STRING("model", 0, "NAME", CLI_HIDDEN, &A.model),
		OPT_CALL("batch", 0, "N", CLI_HIDDEN, &A.batch, set_batch),
		OPT_CALL("depth", 0, "N", CLI_HIDDEN, &A.depth, set_size_opt),
		OPT_CALL("hidden", 0, "N", CLI_HIDDEN, &A.hidden, set_size_opt),
		OPT_CALL("heads", 0, "N", CLI_HIDDEN, &A.heads, set_size_opt),
		OPT_CALL("seq", 0, "N", CLI_HIDDEN, &A.seq, set_size_opt),
		OPT_CALL("checkpoints", 0, "conv,fc,...", CLI_HIDDEN, &A.popts.checkpoints, cli_set_checkpoints),
		OPT_END(),
	};
	const struct cli_cmd cmd = {
		"capacity", "NET.json", opts,
		"       memplan capacity --model NAME --gpu NAME[,...] [--vary batch|depth|seq|tokens]\n"
		"                        [--batch N] [--depth N] [--hidden N] [--heads N] [--seq N] ...\n", planners_help, 0,
	};
	struct mp_error err = { "" };
	struct mp_net *net = NULL;
	json_t *root = NULL;
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
	if (!A.model && !(net = cli_load_net_json(argv[at], &root)))
		return EXIT_BAD_INPUT;
	if (A.copies)
		A.vary = "copies";
	if (A.model) {
		A.zmodel = A.model;
		zoo_opts_init(&A.zo);
		A.zo.batch = A.batch;
		A.zo.depth = A.depth;
		A.zo.hidden = A.hidden;
		A.zo.heads = A.heads;
		A.zo.seq = A.seq;
	} else if (by_seq(&A) && (rc = net_generator(argv[at], root, net, &A)) != EXIT_OK) {
		goto out;
	}
	if (net && !net->batch && !by_seq(&A) && !A.copies) {
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
			rc = cli_lib_error("capacity", &err);
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
	json_decref(root);
	return rc;
}
