/*
 * memplan analyze NET.json [--steps] [--format table|csv|json] [--svg FILE]
 *   [--strategy LIST] [--device NAME|FILE] [--checkpoints TYPES]
 * Per-strategy peak memory, where it occurs, predicted time and TENSILE's
 * metrics; with --steps the per-step curves of SuperNeurons Fig. 10.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"


static int add_strategy(const char *item, void *ctx)
{
	int s = mp_strategy_parse(item);

	if (s < 0) {
		cli_error(EXIT_BAD_INPUT, "--strategy: unknown strategy '%s' (baseline, liveness, offload, recompute)", item);
		return -1;
	}
	*(uint32_t *)ctx |= 1u << s;
	return 0;
}

static const char *op_name(const struct mp_net *net, int32_t op)
{
	return op >= 0 ? net->ops[op].name : "-";
}

/* Is tensor a before b: larger first, then lower id. */
static int bigger(const struct mp_net *net, int32_t a, int32_t b)
{
	uint64_t x = net->tensors[a].bytes, y = net->tensors[b].bytes;

	return x != y ? x > y : a < b;
}

/* The k largest of the tensors at s's peak, largest first, into top[k]
 * (insertion into a k-long list: O(n k), no sort of all n). */
static uint32_t top_tensors(const struct mp_net *net, const struct mp_sim *s, int32_t *top, uint32_t k)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < s->n_peak_tensors; i++) {
		int32_t t = s->peak_tensors[i];
		uint32_t j;

		if (n == k && !bigger(net, t, top[k - 1]))
			continue;
		j = n < k ? n++ : k - 1;
		while (j > 0 && bigger(net, t, top[j - 1])) {
			top[j] = top[j - 1];
			j--;
		}
		top[j] = t;
	}
	return n;
}

static json_t *strategy_json(const struct mp_net *net, const struct mp_strategy_result *r)
{
	const struct mp_sim *s = &r->sim;
	json_t *o = json_object(), *pt = json_array();

	json_object_set_new(o, "name", json_string(mp_strategy_name(r->strategy)));
	json_object_set_new(o, "peak_bytes", json_integer((json_int_t)s->peak_bytes));
	json_object_set_new(o, "peak_step", json_integer(s->peak_step + 1));
	json_object_set_new(o, "peak_op", json_string(op_name(net, s->steps[s->peak_step].op)));
	json_object_set_new(o, "live_tensors_at_peak", json_integer(s->live_at_peak));
	json_object_set_new(o, "time_ms", json_real(s->time_ms));
	json_object_set_new(o, "overhead", json_real(r->overhead));
	json_object_set_new(o, "msr", json_real(r->msr));
	json_object_set_new(o, "eor", json_real(r->eor));
	json_object_set_new(o, "cbr", json_real(r->cbr));
	json_object_set_new(o, "stall_ms", json_real(s->stall_ms));
	json_object_set_new(o, "swap_out_bytes", json_integer((json_int_t)s->d2h_bytes));
	json_object_set_new(o, "swap_in_bytes", json_integer((json_int_t)s->h2d_bytes));
	json_object_set_new(o, "recomputed_ops", json_integer(s->n_recompute));
	json_object_set_new(o, "recompute_ms", json_real(s->recompute_ms));
	if (r->strategy == MP_STRAT_RECOMPUTE) {
		json_object_set_new(o, "speed_centric_segments", json_integer(r->rinfo.segments_speed));
		json_object_set_new(o, "memory_centric_segments", json_integer(r->rinfo.segments_memory));
	}
	{
		/* the largest 32, largest first: the baseline holds every tensor */
		int32_t top[32];
		uint32_t n = top_tensors(net, s, top, 32);

		for (uint32_t i = 0; i < n; i++)
			json_array_append_new(pt, json_string(net->tensors[top[i]].name));
	}
	json_object_set_new(o, "tensors_at_peak", pt);
	return o;
}

static void print_json(const struct mp_net *net, const struct mp_analysis *a, uint32_t show, int steps)
{
	json_t *root = json_object(), *arr = json_array(), *dev = json_object();

	json_object_set_new(root, "net", json_string(net->name));
	json_object_set_new(root, "steps", json_integer(a->route.n));
	json_object_set_new(root, "forward_steps", json_integer(a->route.n_fwd));
	json_object_set_new(root, "backward_steps", json_integer(a->route.n_bwd));
	json_object_set_new(root, "optimizer_steps", json_integer(a->route.n_opt));
	json_object_set_new(root, "layer_min_bytes", json_integer((json_int_t)a->lmin.bytes));
	json_object_set_new(root, "layer_min_step", json_integer(a->lmin.step + 1));
	json_object_set_new(root, "layer_min_op", json_string(op_name(net, a->lmin.op)));
	json_object_set_new(dev, "name", json_string(a->device.name));
	json_object_set_new(dev, "h2d_gbps", json_real(a->device.h2d_gbps));
	json_object_set_new(dev, "d2h_gbps", json_real(a->device.d2h_gbps));
	json_object_set_new(dev, "latency_us", json_real(a->device.latency_us));
	json_object_set_new(dev, "memory_bytes", json_integer((json_int_t)a->device.memory_bytes));
	json_object_set_new(dev, "default", json_boolean(a->device.is_default));
	if (a->device.no_verify)
		json_object_set_new(dev, "no_verify", json_true());
	json_object_set_new(root, "device", dev);
	json_object_set_new(root, "time_source", net->time_source ? json_string(net->time_source) : json_null());
	for (uint32_t i = 0; i < a->n; i++)
		if (show & (1u << a->r[i].strategy))
			json_array_append_new(arr, strategy_json(net, &a->r[i]));
	json_object_set_new(root, "strategies", arr);
	if (steps) {
		json_t *ps = json_array();

		for (uint32_t k = 0; k < a->route.n; k++) {
			json_t *row = json_object(), *bytes = json_object(), *live = json_object();

			json_object_set_new(row, "step", json_integer(k + 1));
			json_object_set_new(row, "phase", json_string(out_step_phase(net, a, k)));
			json_object_set_new(row, "op", json_string(net->ops[a->route.op[k]].name));
			for (uint32_t i = 0; i < a->n; i++) {
				if (!(show & (1u << a->r[i].strategy)))
					continue;
				json_object_set_new(bytes, mp_strategy_name(a->r[i].strategy),
						    json_integer((json_int_t)a->r[i].sim.steps[k].bytes));
				json_object_set_new(live, mp_strategy_name(a->r[i].strategy),
						    json_integer(a->r[i].sim.steps[k].live));
			}
			json_object_set_new(row, "bytes", bytes);
			json_object_set_new(row, "live_tensors", live);
			json_array_append_new(ps, row);
		}
		json_object_set_new(root, "per_step", ps);
	}
	out_json(stdout, root);
}

static void print_csv(const struct mp_net *net, const struct mp_analysis *a, uint32_t show, int steps)
{
	if (steps) {
		printf("step,phase,op");
		for (uint32_t i = 0; i < a->n; i++)
			if (show & (1u << a->r[i].strategy))
				printf(",%s_bytes,%s_live", mp_strategy_name(a->r[i].strategy),
				       mp_strategy_name(a->r[i].strategy));
		printf("\n");
		for (uint32_t k = 0; k < a->route.n; k++) {
			printf("%u,%s,", k + 1, out_step_phase(net, a, k));
			out_csv_field(stdout, net->ops[a->route.op[k]].name);
			for (uint32_t i = 0; i < a->n; i++)
				if (show & (1u << a->r[i].strategy))
					printf(",%llu,%u", (unsigned long long)a->r[i].sim.steps[k].bytes,
					       a->r[i].sim.steps[k].live);
			printf("\n");
		}
		return;
	}
	printf("strategy,peak_bytes,peak_step,peak_op,live_tensors_at_peak,time_ms,overhead,msr,eor,cbr,swap_out_bytes,swap_in_bytes,recomputed_ops\n");
	for (uint32_t i = 0; i < a->n; i++) {
		const struct mp_strategy_result *r = &a->r[i];

		if (!(show & (1u << r->strategy)))
			continue;
		printf("%s,%llu,%u,", mp_strategy_name(r->strategy), (unsigned long long)r->sim.peak_bytes,
		       r->sim.peak_step + 1);
		out_csv_field(stdout, op_name(net, r->sim.steps[r->sim.peak_step].op));
		printf(",%u,%.6g,%.6g,%.6g,%.6g,%.6g,%llu,%llu,%u\n", r->sim.live_at_peak,
		       r->sim.time_ms, r->overhead, r->msr, r->eor, r->cbr,
		       (unsigned long long)r->sim.d2h_bytes, (unsigned long long)r->sim.h2d_bytes,
		       r->sim.n_recompute);
	}
}

/* The five largest tensors resident at the peak, largest first. */
static void print_top_tensors(const struct mp_net *net, const struct mp_sim *s)
{
	int32_t top[5];
	uint32_t n = top_tensors(net, s, top, 5);
	char b1[32];

	for (uint32_t k = 0; k < n; k++)
		printf("%s%s %s", k ? ", " : "", net->tensors[top[k]].name,
		       mp_fmt_bytes(net->tensors[top[k]].bytes, b1, sizeof(b1)));
	if (s->n_peak_tensors > 5)
		printf(", and %u more", s->n_peak_tensors - 5);
}

static void print_table(const struct mp_net *net, const struct mp_analysis *a, uint32_t show, int steps)
{
	char b1[32], b2[32];

	printf("net '%s': %u layers, %u ops, %u steps (%u forward, %u backward, %u optimizer)\n",
	       net->name, net->n_layers, net->n_ops, a->route.n, a->route.n_fwd, a->route.n_bwd, a->route.n_opt);
	if (a->device.is_default)
		printf("device: none given; default link %.0f GB/s each way, %.0f us per copy (PCIe 3.0 x16 pinned)\n",
		       a->device.h2d_gbps, a->device.latency_us);
	else
		printf("device: %s, link %.1f GB/s to device, %.1f GB/s to host, %s memory%s\n", a->device.name,
		       a->device.h2d_gbps, a->device.d2h_gbps, mp_fmt_bytes(a->device.memory_bytes, b1, sizeof(b1)),
		       cli_device_note(&a->device));
	printf("times: %s\n", net->time_source ? net->time_source : "as given in the file");
	if (net->n_untimed)
		printf("note: %u layers or ops give no time; 0 ms assumed\n", net->n_untimed);
	printf("layer-wise minimum (l_peak): %s at step %u (%s)\n\n",
	       mp_fmt_bytes(a->lmin.bytes, b1, sizeof(b1)), a->lmin.step + 1, op_name(net, a->lmin.op));
	printf("%-10s %10s %14s %6s  %-20s %5s %10s %9s %6s %6s %6s\n", "strategy", "peak", "peak bytes",
	       "step", "peak op", "live", "time ms", "overhead", "MSR", "EOR", "CBR");
	for (uint32_t i = 0; i < a->n; i++) {
		const struct mp_strategy_result *r = &a->r[i];

		if (!(show & (1u << r->strategy)))
			continue;
		printf("%-10s %10s %14llu %6u  %-20s %5u %10.3f %8.1f%% %6.3f %6.3f %6.3f\n",
		       mp_strategy_name(r->strategy), mp_fmt_bytes(r->sim.peak_bytes, b1, sizeof(b1)),
		       (unsigned long long)r->sim.peak_bytes, r->sim.peak_step + 1, op_name(net, r->sim.steps[r->sim.peak_step].op),
		       r->sim.live_at_peak, r->sim.time_ms, 100.0 * r->overhead, r->msr, r->eor, r->cbr);
	}
	printf("\nlargest tensors live at each peak:");
	for (uint32_t i = 0; i < a->n; i++) {
		const struct mp_strategy_result *r = &a->r[i];

		if (!(show & (1u << r->strategy)))
			continue;
		printf("\n  %-10s ", mp_strategy_name(r->strategy));
		print_top_tensors(net, &r->sim);
	}
	for (uint32_t i = 0; i < a->n; i++) {
		const struct mp_strategy_result *r = &a->r[i];

		if (!(show & (1u << r->strategy)))
			continue;
		if (r->strategy == MP_STRAT_OFFLOAD)
			printf("\n");
		if (r->strategy == MP_STRAT_OFFLOAD || r->strategy == MP_STRAT_RECOMPUTE)
			printf("\n%s: swapped %s out and %s in, compute stalled %.3f ms", mp_strategy_name(r->strategy),
			       mp_fmt_bytes(r->sim.d2h_bytes, b1, sizeof(b1)), mp_fmt_bytes(r->sim.h2d_bytes, b2, sizeof(b2)),
			       r->sim.stall_ms);
		if (r->strategy == MP_STRAT_RECOMPUTE)
			printf("; %u extra forward ops (%.3f ms), %u speed-centric and %u memory-centric segments",
			       r->sim.n_recompute, r->sim.recompute_ms, r->rinfo.segments_speed, r->rinfo.segments_memory);
	}
	printf("\n");
	if (!steps)
		return;
	printf("\n%5s %-9s %-22s", "step", "phase", "op");
	for (uint32_t i = 0; i < a->n; i++)
		if (show & (1u << a->r[i].strategy))
			printf(" %11s %4s", mp_strategy_name(a->r[i].strategy), "live");
	printf("\n");
	for (uint32_t k = 0; k < a->route.n; k++) {
		printf("%5u %-9s %-22s", k + 1, out_step_phase(net, a, k), net->ops[a->route.op[k]].name);
		for (uint32_t i = 0; i < a->n; i++)
			if (show & (1u << a->r[i].strategy))
				printf(" %11s %4u", mp_fmt_bytes(a->r[i].sim.steps[k].bytes, b1, sizeof(b1)),
				       a->r[i].sim.steps[k].live);
		printf("\n");
	}
}

/* --strategy: repeated lists add up */
static int set_strategies(const char *name, const char *arg, void *dst)
{
	(void)name;
	return cli_each_item(arg, add_strategy, dst) < 0 ? -1 : 0;
}

/* --checkpoints: repeated lists add up */
struct ckpt_arg {
	uint32_t mask;
	bool given;
};

static int set_checkpoints(const char *name, const char *arg, void *dst)
{
	struct ckpt_arg *c = dst;
	uint32_t m;

	(void)name;
	if (cli_parse_checkpoints(arg, &m) < 0)
		return -1;
	c->mask |= m;
	c->given = true;
	return 0;
}

int cmd_analyze(int argc, char **argv)
{
	int fmt = FMT_TABLE, steps = 0, rc, at;
	const char *svg = NULL, *device_arg = NULL;
	uint32_t show = 0;
	struct ckpt_arg ckpt = { 0, false };
	const struct cli_opt opts[] = {
		OPT_FLAG("steps", 0, &steps),
		OPT_FORMAT("format", "table|csv|json", 0, &fmt, 1),
		OPT_STRING("svg", 0, "FILE", 0, &svg),
		OPT_CALL("strategy", 0, "baseline,liveness,offload,recompute", CLI_NEWLINE, &show, set_strategies),
		OPT_STRING("device", 0, "NAME|FILE", CLI_NEWLINE, &device_arg),
		OPT_CALL("checkpoints", 0, "conv,fc,...", 0, &ckpt, set_checkpoints),
		OPT_END(),
	};
	const struct cli_cmd cmd = { "analyze", "NET.json", opts, NULL, NULL, 24 };
	struct mp_policy_opts popts;
	struct out_file svgf;
	struct mp_device dev;
	struct mp_error err = { "" };
	struct mp_analysis a;
	struct mp_net *net;

	if ((rc = cli_parse(&cmd, argc, argv, &at)) != CLI_GO)
		return rc;
	rc = EXIT_OK;
	policy_opts_default(&popts);
	if (ckpt.given)
		popts.checkpoints = ckpt.mask;
	if (argc - at != 1)
		return cli_usage_error(&cmd);
	if (!show)
		show = (1u << MP_STRAT__COUNT) - 1;
	if (device_arg && device_resolve(device_arg, &dev, &err) < 0)
		return cli_error(EXIT_BAD_INPUT, "--device: %s", err.msg);
	if (!(net = cli_load_net(argv[at])))
		return EXIT_BAD_INPUT;
	if (analysis_run(net, device_arg ? &dev : NULL, show, &popts, &a, &err) < 0) {
		rc = cli_lib_error(argv[at], &err);
		net_free(net);
		return rc;
	}
	/* open the chart before printing anything: no partial output */
	if (svg && (rc = out_open(&svgf, svg, "--svg")) != EXIT_OK) {
		analysis_release(&a);
		net_free(net);
		return rc;
	}
	if (fmt == FMT_JSON)
		print_json(net, &a, show, steps);
	else if (fmt == FMT_CSV)
		print_csv(net, &a, show, steps);
	else
		print_table(net, &a, show, steps);
	if (svg) {
		out_svg_curves(svgf.f, net, &a, show);
		rc = out_commit(&svgf, false);
	}
	analysis_release(&a);
	net_free(net);
	return rc;
}
