/*
 * memplan verify PLAN.json [--device host|cuda] [--iters N] [--warmup N]
 *   [--alloc arena|pool|async] [--compute real|timed] [--time-scale X]
 *   [--clock virtual|wall] [--tolerance-peak PCT] [--tolerance-time PCT] [--report FILE]
 *   [--op-times NET.json[,NET.json...]] [--adapt N [--alpha A] [--adapt-threshold PCT]]
 * memplan verify --probe
 * Run a plan, check that it loses no data, and hold the prediction to
 * account: predicted vs measured per phase and in total; exit 1 outside the
 * tolerances (memplan-verify(1)).  --adapt re-plans every N iterations from
 * the op times measured (TENSILE IV-E, verify/replan.h).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "../analysis/base/jget.h"
#include "../analysis/jobs.h"
#include "../plan/planfile.h"
#include "../verify/backend.h"
#include "../verify/probe.h"
#include "../verify/replan.h"
#include "../verify/report.h"

/* A number > 0 (time scale) or >= 0 with an optional % (tolerances). */
static int parse_real(const char *name, const char *s, int percent, double max, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (percent && *end == '%')
		end++;
	if (!*s || *end || errno || !isfinite(v) || (percent ? v < 0 : v <= 0) || v > max) {
		if (percent)
			cli_error(EXIT_BAD_INPUT, "%s: expected a percentage from 0 to %g, got '%s'", name, max, s);
		else
			cli_error(EXIT_BAD_INPUT, "%s: expected a number above 0 and at most %g, got '%s'", name, max, s);
		return -1;
	}
	*out = v;
	return 0;
}

/* A deviation as a percentage: "+0.25%", or in three significant digits
 * past a million percent ("+4.61e+298%": a time scale of 1e-300), so that a
 * line stays a line.  sign: a + for positive values. */
static const char *pct(double dev, bool sign, char *buf, size_t n)
{
	double p = 100 * dev;

	if (fabs(p) < 1e6)
		snprintf(buf, n, sign ? "%+.2f%%" : "%.2f%%", p);
	else
		snprintf(buf, n, sign ? "%+.3g%%" : "%.3g%%", p);
	return buf;
}

static const char *ratio(const struct mp_exec_pair *x, char *buf, size_t n)
{
	if (x->pred > 0)
		snprintf(buf, n, "%.3f", x->meas / x->pred);
	else
		snprintf(buf, n, "-");
	return buf;
}

static void row_ms(const char *phase, const char *what, const struct mp_exec_pair *x)
{
	char r[32];

	printf("%-10s %-10s %12.3f ms %12.3f ms %8s\n", phase, what, x->pred, x->meas, ratio(x, r, sizeof(r)));
}

static void row_bytes(const char *phase, const char *what, const struct mp_exec_pair *x)
{
	char b1[32], b2[32], r[32];

	printf("%-10s %-10s %15s %15s %8s\n", phase, what, mp_fmt_bytes((uint64_t)x->pred, b1, sizeof(b1)),
	       mp_fmt_bytes((uint64_t)x->meas, b2, sizeof(b2)), ratio(x, r, sizeof(r)));
}

static void row_gbps(const char *phase, const char *what, const struct mp_exec_pair *x)
{
	char r[32];

	printf("%-10s %-10s %10.4f GB/s %10.4f GB/s %8s\n", phase, what, x->pred, x->meas, ratio(x, r, sizeof(r)));
}

static void print_table(const struct mp_exec_cmp *c)
{
	static const char *const name[EXEC_ROWS] = { "forward", "backward", "optimizer", "total" };

	printf("%-10s %-10s %15s %15s %8s\n", "phase", "", "predicted", "measured", "ratio");
	for (int k = 0; k < EXEC_ROWS; k++) {
		const struct mp_exec_row *R = &c->row[k];

		if (!R->present)
			continue;
		row_ms(name[k], "time", &R->time_ms);
		row_bytes("", "peak", &R->peak_bytes);
		row_ms("", "stall", &R->stall_ms);
		if (R->h2d_bytes.pred > 0 || R->h2d_bytes.meas > 0) {
			row_bytes("", "h2d", &R->h2d_bytes);
			row_gbps("", "h2d rate", &R->h2d_gbps);
		}
		if (R->d2h_bytes.pred > 0 || R->d2h_bytes.meas > 0) {
			row_bytes("", "d2h", &R->d2h_bytes);
			row_gbps("", "d2h rate", &R->d2h_gbps);
		}
	}
}

static int probe(void)
{
	const struct backend_i *cuda = backend_find("cuda");
	struct mp_cuda_probe pr;
	struct mp_error err = { "" };
	char b1[32];
	long cpus = sysconf(_SC_NPROCESSORS_ONLN), pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);

	printf("host   available: %ld CPUs, %s memory (the host backend, --device host)\n", cpus,
	       mp_fmt_bytes(pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : 0, b1, sizeof(b1)));
	if (cuda)
		printf("cuda   backend: built in (CUDA runtime %d.%d; cuDNN and cuBLAS loaded when a GPU runs)\n",
		       cuda->runtime_version() / 1000, cuda->runtime_version() % 1000 / 10);
	else
		printf("cuda   backend: not in this build (nvcc not found, or a sanitizer build)\n");
	if (exec_cuda_probe(&pr, &err) < 0) {
		printf("cuda   no CUDA device: %s\n", err.msg);
		return cli_error(EXIT_NO_GPU, "verify: no CUDA device");
	}
	printf("cuda   %d device%s; device 0: %s, %s, driver %d.%d\n", pr.devices, pr.devices == 1 ? "" : "s", pr.name,
	       mp_fmt_bytes(pr.memory_bytes, b1, sizeof(b1)), pr.driver_version / 1000, pr.driver_version % 1000 / 10);
	if (!cuda) {
		printf("cuda   this memplan was built without the CUDA backend: link bandwidth not measured\n");
		return cli_error(EXIT_NO_GPU, "verify: this memplan was built without the CUDA backend");
	}
	{
		struct mp_cuda_link ln;
		char b2[32], b3[32];
		int rc = cuda->link(&ln, &err);

		if (rc == EXEC_NO_DEVICE)
			return cli_error(EXIT_NO_GPU, "verify: no usable CUDA device: %s", err.msg);
		if (rc < 0)
			return cli_error(EXIT_INTERNAL, "verify: %s", err.msg);
		printf("cuda   device 0: %s, %s total, %s free\n", ln.name, mp_fmt_bytes(ln.total_bytes, b1, sizeof(b1)),
		       mp_fmt_bytes(ln.free_bytes, b2, sizeof(b2)));
		printf("cuda   pinned copies of %s, median of 5: h2d %.2f GB/s, d2h %.2f GB/s\n",
		       mp_fmt_bytes(ln.copy_bytes, b3, sizeof(b3)), ln.h2d_gbps, ln.d2h_gbps);
		printf("cuda   pinned copies of %s, median of 5: %.1f us latency (time less the bytes at that rate)\n",
		       mp_fmt_bytes(LINK_SMALL, b3, sizeof(b3)), ln.latency_us);
	}
	return EXIT_OK;
}

/* "a 64.0 KiB pool of 1024-byte blocks, first fit (SuperNeurons 3.2.1)" */
static const char *pool_phrase(uint64_t bytes, char *buf, size_t n)
{
	char b1[32];

	snprintf(buf, n, "a %s pool of %u-byte blocks, first fit (SuperNeurons 3.2.1)", mp_fmt_bytes(bytes, b1, sizeof(b1)),
		 1024u);
	return buf;
}

/* "LEAD high-water H: R.RRRx the plan's arena A, R.RRRx the live peak L",
 * without the newline. */
static void print_high_water(const char *lead, uint64_t high, const struct mp_plan *plan, const struct mp_exec_result *r)
{
	char b1[32], b2[32], b3[32];

	printf("%s high-water %s: %.3fx the plan's arena %s, %.3fx the live peak %s", lead,
	       mp_fmt_bytes(high, b1, sizeof(b1)), plan->arena_bytes ? (double)high / (double)plan->arena_bytes : 0.0,
	       mp_fmt_bytes(plan->arena_bytes, b2, sizeof(b2)),
	       r->live_peak_bytes ? (double)high / (double)r->live_peak_bytes : 0.0,
	       mp_fmt_bytes(r->live_peak_bytes, b3, sizeof(b3)));
}

/* The CUDA backend's lines: the device, its memory as the driver counts it,
 * the timer calibration and the bandwidth the copies achieved in real time. */
static void print_cuda_backend(const struct mp_exec_result *r)
{
	const struct mp_exec_cuda *d = &r->cuda;
	char b1[32], b2[32], b3[32], b4[32], pp[96], mem[160];
	const char *before = "the arena";

	if (r->alloc == MP_EXEC_POOL) {
		snprintf(mem, sizeof(mem), "%s in one cudaMalloc", pool_phrase(r->mem_bytes, pp, sizeof(pp)));
		before = "the pool";
	} else if (r->alloc == MP_EXEC_ASYNC) {
		snprintf(mem, sizeof(mem), "cudaMallocAsync from a memory pool of its own that keeps what it reserves");
		before = "any tensor";
	} else {
		snprintf(mem, sizeof(mem), "a %s arena at the plan's offsets (cudaMalloc)", mp_fmt_bytes(r->mem_bytes, b1, sizeof(b1)));
	}
	printf("backend   cuda: %s, %s, %s of pinned host buffers; one compute and two copy streams\n", d->name, mem,
	       mp_fmt_bytes(d->pinned_bytes, b2, sizeof(b2)));
	if (d->ops_real)
		printf("kernels   %u ops run by %s (%u with a substitute conv algorithm), %u timed kernels of their "
		       "modelled time; checksums in %u unmeasured iteration%s\n", d->ops_real, d->libraries,
		       d->algos_substituted, d->ops_timed, d->checked_iterations, d->checked_iterations == 1 ? "" : "s");
	else
		printf("kernels   every op is a timed kernel of its modelled time, %llu launches per iteration\n",
		       (unsigned long long)d->launches);
	if (d->ops_timed && d->timed_why[0])
		printf("timed     first: %s\n", d->timed_why);
	printf("timer     calibrated at %.4f event ms per timer ms; %s held by the kernels outside the arena\n",
	       d->timer_ratio, mp_fmt_bytes(d->library_bytes, b1, sizeof(b1)));
	printf("device    %s: %s used before %s (context, libraries, other processes), %s after allocating, "
	       "at most %s seen during the run\n", mp_fmt_bytes(d->total_bytes, b1, sizeof(b1)),
	       mp_fmt_bytes(d->used_before_bytes, b2, sizeof(b2)), before, mp_fmt_bytes(d->used_alloc_bytes, b3, sizeof(b3)),
	       mp_fmt_bytes(d->used_peak_bytes, b4, sizeof(b4)));
	if (r->n_h2d || r->n_d2h)
		printf("link      h2d %.2f GB/s over %u copies, d2h %.2f GB/s over %u copies (real time: copies are not "
		       "scaled by --time-scale)\n",
		       r->h2d_busy_ms > 0 ? (double)r->h2d_bytes / r->h2d_busy_ms / 1e6 : 0.0, r->n_h2d,
		       r->d2h_busy_ms > 0 ? (double)r->d2h_bytes / r->d2h_busy_ms / 1e6 : 0.0, r->n_d2h);
}

static int write_report(const char *path, json_t *root)
{
	int rc = out_json_file(path, root, JSON_INDENT(1) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(9), "--report");

	json_decref(root);
	return rc;
}

static const struct cli_choice backends[] = { { "host", 0 }, { "cuda", 1 }, { NULL, 0 } };
static const struct cli_choice allocs[] = {
	{ "arena", MP_EXEC_ARENA }, { "pool", MP_EXEC_POOL }, { "async", MP_EXEC_ASYNC }, { NULL, 0 },
};
static const struct cli_choice clocks[] = { { "virtual", MP_EXEC_VIRTUAL }, { "wall", MP_EXEC_WALL }, { NULL, 0 } };
static const struct cli_choice computes[] = { { "real", MP_EXEC_REAL }, { "timed", MP_EXEC_TIMED }, { NULL, 0 } };

static int set_scale(const char *name, const char *arg, void *dst)
{
	return parse_real(name, arg, 0, 1000, dst);
}

static int set_percent(const char *name, const char *arg, void *dst)
{
	return parse_real(name, arg, 1, 1e6, dst);
}

/* The options that cannot go together, or that this machine cannot run
 * (no GPU, no CUDA backend).  EXIT_OK, or the error's exit status. */
static int check_options(const char *report, const char *path, int cuda, int clock, double tol_time,
			 enum mp_exec_alloc alloc)
{
	struct mp_error err = { "" };

	if (report && out_same_file(report, path))
		return cli_error(EXIT_BAD_INPUT, "--report: '%s' is the plan it verifies: write the report elsewhere", report);
	if (cuda && clock == MP_EXEC_VIRTUAL)
		return cli_error(EXIT_BAD_INPUT, "--clock: virtual is the host backend's clock; --device cuda runs on the GPU's");
	if (cuda) {
		struct mp_cuda_probe pr;

		if (exec_cuda_probe(&pr, &err) < 0)
			return cli_error(EXIT_NO_GPU, "verify: no CUDA device");
		if (!backend_find("cuda"))
			return cli_error(EXIT_NO_GPU, "verify: this memplan was built without the CUDA backend");
	}
	if (!cuda && alloc == MP_EXEC_ASYNC)
		return cli_error(EXIT_BAD_INPUT, "--alloc: async is cudaMallocAsync, for --device cuda (the host backend has arena and pool)");
	/* on the virtual clock every action lasts its modelled time */
	if (!cuda && tol_time >= 0 && clock == MP_EXEC_VIRTUAL)
		return cli_error(EXIT_BAD_INPUT, "--tolerance-time: the virtual clock gives every action its modelled time, so there is no time to judge (--clock wall)");
	return EXIT_OK;
}

/* The report of a run that stopped: its violation or error.  rc, or the
 * report's write error. */
static int write_failed_report(const char *report, const char *path, int cuda, const struct mp_exec_result *res,
			       const char *msg, int rc)
{
	json_t *root = json_object();
	int wr;

	json_object_set_new(root, "format", json_string("memplan-verify/1"));
	json_object_set_new(root, "plan", json_string(path));
	json_object_set_new(root, "device", json_string(cuda ? "cuda" : "host"));
	json_object_set_new(root, "ok", json_false());
	json_object_set_new(root, res->failed_action != UINT32_MAX ? "violation" : "error", json_string(msg));
	if (res->failed_action != UINT32_MAX)
		json_object_set_new(root, "failed_action", json_integer(res->failed_action));
	if ((wr = write_report(report, root)) != EXIT_OK)
		rc = wr;
	return rc;
}

/* What ran: the plan, the backend, the iterations, the clock, the data
 * checked and the allocator's high-water. */
static void print_run(const char *path, const struct mp_net *net, const struct mp_plan_req *req,
		      const struct mp_plan *plan, const struct mp_exec_result *res, const struct mp_exec_opts *eo,
		      int cuda)
{
	char b1[32], pp[96];

	printf("plan      %s: net '%s', planner %s, device %s%s\n", path, net->name, mp_planner_name(plan->planner),
	       req->device.name, cli_device_note(&req->device));
	if (cuda)
		print_cuda_backend(res);
	else if (eo->alloc == MP_EXEC_POOL)
		printf("backend   host: %s\n", pool_phrase(res->mem_bytes, pp, sizeof(pp)));
	else
		printf("backend   host: a %s arena at the plan's offsets\n", mp_fmt_bytes(res->mem_bytes, b1, sizeof(b1)));
	printf("runs      %u warm-up + %u measured iterations, median shown; times x %g (--time-scale)\n",
	       eo->warmup, eo->iters, eo->time_scale);
	if (!cuda && eo->clock == MP_EXEC_VIRTUAL)
		printf("clock     virtual: actions last their modelled time, so the peak follows the simulation on any "
		       "host; every byte is still moved and checked (--clock wall: the host's)\n");
	printf("data      every read checked: %llu reads, %llu copies, %llu recomputed tensors per iteration "
	       "(%s hashed); nothing lost\n",
	       (unsigned long long)res->reads_checked, (unsigned long long)res->swaps_checked,
	       (unsigned long long)res->recomputes_checked, mp_fmt_bytes(res->bytes_hashed, b1, sizeof(b1)));
	if (eo->alloc == MP_EXEC_POOL) {
		print_high_water("pool     ", res->pool_high_bytes, plan, res);
		printf("\n");
	}
	if (eo->alloc == MP_EXEC_ASYNC) {
		/* the memory pool's marks, reset after the warm-up */
		print_high_water("async     reserved", res->cuda.reserved_high_bytes, plan, res);
		printf("; used high-water %s\n", mp_fmt_bytes(res->cuda.used_high_bytes, b1, sizeof(b1)));
	}
}

/* Actions that outlasted their scaled time, and allocations that waited. */
static void print_notes(const struct mp_exec_result *res, const struct mp_exec_opts *eo, const struct mp_exec_cmp *cmp)
{
	if (res->overruns) {
		printf("note      %u actions outlasted their scaled time by %.3f ms in all (real work: filling, "
		       "hashing, copying)", res->overruns, res->overrun_ms);
		if (!cmp->time_ok && res->work_scale > eo->time_scale) {
			/* where the slowest action's real work fits, with a quarter
			 * to spare, two significant digits */
			double want = 1.25 * res->work_scale, mag = pow(10, floor(log10(want)) - 1);

			printf("; the slowest would fit at --time-scale %g", ceil(want / mag) * mag);
		}
		printf("\n");
	}
	if (res->alloc_wait_ms > 0 && eo->alloc == MP_EXEC_ASYNC)
		printf("note      allocations held the compute stream %.3f ms (cudaMallocAsync, waits for memory freed "
		       "on a copy stream included)\n", res->alloc_wait_ms);
	else if (res->alloc_wait_ms > 0)
		printf("note      allocations waited %.3f ms for swap-outs to release memory\n", res->alloc_wait_ms);
}

/* The peak and time lines: measured, predicted, and the verdicts. */
static void print_verdicts(const struct mp_plan *plan, const struct mp_exec_result *res, const struct mp_exec_opts *eo,
			   const struct mp_exec_cmp *cmp, double tol_peak, double tol_time)
{
	char pp[96];

	printf("peak      %llu B measured%s, %llu B predicted (%s, tolerance %g%%): %s\n",
	       (unsigned long long)res->peak_bytes,
	       eo->alloc == MP_EXEC_POOL ? " (pool high-water)" : eo->alloc == MP_EXEC_ASYNC ? " (memory pool's reserved high-water)" : "",
	       (unsigned long long)plan->sim.peak_bytes, pct(cmp->peak_dev, true, pp, sizeof(pp)), tol_peak,
	       cmp->peak_ok ? "ok" : "OUTSIDE");
	if (cmp->time_judged)
		printf("time      %.3f ms measured, %.3f ms predicted x %g (%s, tolerance %g%%): %s\n",
		       res->time_ms, plan->sim.time_ms * eo->time_scale, eo->time_scale, pct(cmp->time_dev, true, pp, sizeof(pp)),
		       tol_time, cmp->time_ok ? "ok" : "OUTSIDE");
	else if (cmp->time_checked)
		printf("time      %.3f ms measured, %.3f ms predicted x %g (%s): information only, the host does not "
		       "run at the GPU's speed (--tolerance-time PCT judges it)\n",
		       res->time_ms, plan->sim.time_ms * eo->time_scale, eo->time_scale, pct(cmp->time_dev, true, pp, sizeof(pp)));
	else
		printf("time      %.3f ms measured; the plan predicts no time (untimed net): not checked\n", res->time_ms);
}

/* The plan a run executes: the file's, or (--adapt) a re-planned one. */
struct run_plan {
	const json_t *net_json;    /* borrowed: the file's "net" (its "jobs" for a plan
				    * of several), or re.net_json */
	struct mp_net *net;        /* borrowed */
	struct mp_plan *plan;      /* borrowed */
	struct mp_replan re;       /* owned once a round has re-planned */
	bool replanned;
};

/* --op-times FILE[,FILE...]: the nets whose times the ops run at, one for
 * the whole plan or one per job in the plan's job order. */
struct op_times {
	uint32_t n;
	struct mp_net **net;       /* [n] */
	char **file;               /* [n] */
};

static void op_times_release(struct op_times *ot)
{
	for (uint32_t i = 0; i < ot->n; i++) {
		net_free(ot->net[i]);
		free(ot->file[i]);
	}
	free(ot->net);
	free(ot->file);
	memset(ot, 0, sizeof(*ot));
}

/* Load spec's files (comma-separated); EXIT_OK, or EXIT_BAD_INPUT after
 * printing. */
static int op_times_load(const char *spec, struct op_times *ot)
{
	for (const char *p = spec;;) {
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		char *f = mp_xmalloc(len + 1);

		memcpy(f, p, len);
		f[len] = 0;
		ot->net = mp_xrealloc(ot->net, (ot->n + 1) * sizeof(*ot->net));
		ot->file = mp_xrealloc(ot->file, (ot->n + 1) * sizeof(*ot->file));
		ot->file[ot->n] = f;
		ot->net[ot->n] = NULL;
		ot->n++;
		if (!len)
			return cli_error(EXIT_BAD_INPUT, "--op-times: '%s': an empty file name", spec);
		if (!(ot->net[ot->n - 1] = cli_load_net(f)))
			return EXIT_BAD_INPUT;
		if (!end)
			return EXIT_OK;
		p = end + 1;
	}
}

/* --op-times: per op of net, the time its net in ot (the one, or its
 * job's) gives the op of that name over net's (1 where net's is 0); in a
 * plan of several jobs, an op that net does not name with its job's prefix
 * is looked up without it (copies of one net run at that net's times, and a
 * job's own net names its ops without).  0, or -1 with *err naming the file
 * and an op it lacks. */
static int op_factors(const struct mp_net *net, const struct op_times *ot, double *factor, struct mp_error *err)
{
	if (ot->n > 1 && !net->n_jobs) {
		mp_error_set(err, "%u files for a plan of one net: give one", ot->n);
		return -1;
	}
	if (ot->n > 1 && ot->n != net->n_jobs) {
		mp_error_set(err, "%u files for a plan of %u jobs: give one, or one per job", ot->n, net->n_jobs);
		return -1;
	}
	for (uint32_t k = 0; k < net->n_ops; k++) {
		uint32_t job = net->n_jobs ? jobs_of_op(net, (int32_t)k) : 0;
		const struct mp_net *actual = ot->net[ot->n > 1 ? job : 0];
		int32_t j = net_find_op(actual, net->ops[k].name);

		if (j < 0 && net->n_jobs) {
			const char *prefix = net->jobs[job].prefix;

			if (!strncmp(net->ops[k].name, prefix, strlen(prefix)))
				j = net_find_op(actual, net->ops[k].name + strlen(prefix));
		}
		if (j < 0) {
			mp_error_set(err, "%s: no op named '%s' (the plan's net has it)", ot->file[ot->n > 1 ? job : 0],
				     net->ops[k].name);
			return -1;
		}
		factor[k] = net->ops[k].ms > 0 ? actual->ops[j].ms / net->ops[k].ms : 1;
	}
	return 0;
}

/* adapt_run: re-planning failed, or its plan no longer fits (*err) */
#define ADAPT_FAILED (-10)

/* One round's line: what was predicted and measured (the iteration on the
 * engines' timelines, which the virtual clock keeps in model time), and what
 * re-planning changed for the next (d NULL: the last round, or the plan
 * kept); with a threshold (above 0), how far the op times moved. */
static void print_round(uint32_t round, const struct mp_plan *p, const struct mp_exec_result *r,
			const struct mp_exec_cmp *c, const struct mp_replan_diff *d, double threshold, double moved)
{
	const struct mp_exec_row *T = &c->row[EXEC_ROW_TOTAL];

	printf("%5u  %-12s %10.3f %10.3f %10.3f %10.3f %12llu %12llu", round, mp_planner_name(p->planner),
	       T->time_ms.pred, r->timeline_ms, T->stall_ms.pred, T->stall_ms.meas,
	       (unsigned long long)T->peak_bytes.pred, (unsigned long long)T->peak_bytes.meas);
	if (threshold > 0 && moved >= 0)
		printf("  op times moved %.1f%%; %s", 100 * moved, d ? "re-planned:" : "plan kept");
	if (d)
		printf("%sswaps %u moved, +%u -%u; recomputes +%u -%u", threshold > 0 ? " " : "  ", d->swaps_moved,
		       d->swaps_added, d->swaps_removed, d->recomputes_added, d->recomputes_removed);
	printf("\n");
}

/* Any option that goes with --adapt alone. */
struct adapt_opts {
	uint32_t every;            /* --adapt N; 0: off */
	double alpha;
	double threshold;          /* --adapt-threshold, a share: re-plan only where
				    * the op times moved more (TENSILE's trigger);
				    * 0: every round; -1: not given */
	const struct op_times *ot; /* --op-times (n 0: none) */
	uint32_t replans;          /* set by adapt_run: plans made */
};

/* Re-plan rp with its times times factor: 0 with *next, or -1 with *err
 * (the planner failed, or its plan no longer fits). */
static int next_plan(const struct run_plan *rp, const struct mp_plan_req *req, const double *factor, double alpha,
		     uint32_t round, struct mp_replan *next, struct mp_error *err)
{
	if (replan_run(rp->net_json, rp->net, req, rp->plan->planner, factor, alpha, next, err) < 0) {
		mp_error_prefix(err, "round %u: re-planning: ", round);
		return -1;
	}
	if (!next->plan.fits) {
		mp_error_set(err, "round %u: %s's plan on the corrected times no longer fits the budget (peak %llu B)",
			     round, mp_planner_name(next->plan.planner), (unsigned long long)next->plan.sim.peak_bytes);
		replan_release(next);
		return -1;
	}
	return 0;
}

/*
 * Run rp's plan, re-planning after every a->every measured iterations from
 * the op times measured, until eo->iters are measured; the last round's
 * result stays in *res and its plan in rp.  Each op's time is a moving
 * average over the rounds its plan ran; with a threshold, the plan is made
 * again only where those times, summed, moved more than that share from
 * the sum it was made with (TENSILE IV-E), else it runs on and the averages
 * move on.  Each round's line is printed.  The run's status as replay_run
 * returns it; -1 with a re-planning error says so in *err with
 * res->failed_action UINT32_MAX.
 */
static int adapt_run(const struct backend_i *be, struct run_plan *rp, const struct mp_plan_req *req,
		     const struct mp_exec_opts *eo, struct adapt_opts *a, double *factor,
		     struct mp_exec_result *res, struct mp_error *err)
{
	struct mp_exec_opts ro = *eo;
	struct mp_exec_op_time *t = mp_xmalloc((rp->net->n_ops + 1) * sizeof(*t));
	double *est = mp_xmalloc((rp->net->n_ops + 1) * sizeof(*est)), moved;
	uint32_t left = eo->iters;
	int rc;

	for (uint32_t k = 0; k < rp->net->n_ops; k++)
		est[k] = 1;
	if (a->threshold > 0)
		printf("adapt     every %u iteration%s, re-planning where the op times measured moved more than %g%% "
		       "(moving average, alpha %g; TENSILE IV-E)\n", a->every, a->every == 1 ? "" : "s",
		       100 * a->threshold, a->alpha);
	else
		printf("adapt     re-planning every %u iteration%s from the op times measured (moving average, alpha %g; "
		       "TENSILE IV-E)\n", a->every, a->every == 1 ? "" : "s", a->alpha);
	printf("%5s  %-12s %10s %10s %10s %10s %12s %12s\n", "round", "planner", "pred ms", "timeline", "pred stall",
	       "meas stall", "pred peak B", "meas peak B");
	for (uint32_t round = 1;; round++) {
		struct mp_exec_cmp cmp;
		struct mp_replan next;
		struct mp_replan_diff d;

		ro.iters = left < a->every ? left : a->every;
		left -= ro.iters;
		if (a->ot->n && op_factors(rp->net, a->ot, factor, err) < 0) {
			rc = ADAPT_FAILED;
			break;
		}
		ro.op_factor = a->ot->n ? factor : NULL;
		if ((rc = replay_run(be, rp->net, req, rp->plan, &ro, res, err)) < 0)
			break;
		exec_compare(rp->net, rp->plan, res, 0, -1, &cmp);
		if (!left) {
			print_round(round, rp->plan, res, &cmp, NULL, a->threshold, -1);
			break;
		}
		exec_op_times(rp->net, rp->plan, res, t);
		replan_factors(rp->net, t, a->alpha, est);
		moved = replan_change(rp->net, est);
		if (a->threshold > 0 && moved <= a->threshold) {
			print_round(round, rp->plan, res, &cmp, NULL, a->threshold, moved);
			exec_result_release(res);
			continue;
		}
		if (next_plan(rp, req, est, a->alpha, round, &next, err) < 0) {
			exec_result_release(res);
			rc = ADAPT_FAILED;
			break;
		}
		for (uint32_t k = 0; k < rp->net->n_ops; k++)
			est[k] = 1;
		replan_diff(rp->net, rp->plan, next.net, &next.plan, &d);
		print_round(round, rp->plan, res, &cmp, &d, a->threshold, moved);
		replan_diff_release(&d);
		exec_result_release(res);
		if (rp->replanned)
			replan_release(&rp->re);
		rp->re = next;
		rp->replanned = true;
		rp->net_json = rp->re.net_json;
		rp->net = rp->re.net;
		rp->plan = &rp->re.plan;
		a->replans++;
	}
	free(t);
	free(est);
	return rc;
}

/* The plan file (*root, *net, *req, *plan) and, with --op-times, the nets
 * whose times the ops run at (*ot) with their factors for the plan's net
 * (*factor, [n_ops], malloc'd whatever the result).  EXIT_OK, or
 * EXIT_BAD_INPUT after printing. */
static int load_inputs(const char *path, const char *op_times, json_t **root, struct mp_net **net,
		       struct mp_plan_req *req, struct mp_plan *plan, struct op_times *ot, double **factor)
{
	struct mp_error err = { "" };
	int rc;

	if ((rc = cli_load_plan(path, root, net, req, plan)) != EXIT_OK)
		return rc;
	*factor = mp_xmalloc(((*net)->n_ops + 1) * sizeof(**factor));
	if (op_times && (rc = op_times_load(op_times, ot)) != EXIT_OK)
		return rc;
	if (ot->n && op_factors(*net, ot, *factor, &err) < 0)
		return cli_error(EXIT_BAD_INPUT, "--op-times: %s", err.msg);
	return EXIT_OK;
}

/* What a run that finished prints, its report, and its verdicts: EXIT_OK,
 * EXIT_NO outside a tolerance, or the report's write error. */
static int conclude(const char *path, const char *report, const char *op_times, int cuda, const struct run_plan *rp,
		    const struct mp_plan_req *req, const struct mp_exec_result *res, const struct mp_exec_opts *eo,
		    uint32_t replans, double tol_peak, double tol_time)
{
	struct mp_exec_cmp cmp;
	char b1[32], b2[32], pp[96], sha[65];
	char *shown = mp_xmalloc(strlen(path) + 64);
	int rc = EXIT_OK, wr;

	exec_compare(rp->net, rp->plan, res, tol_peak / 100, tol_time / 100, &cmp);
	if (replans)
		sprintf(shown, "%s re-planned %u time%s", path, replans, replans == 1 ? "" : "s");
	else
		strcpy(shown, path);
	print_run(shown, rp->net, req, rp->plan, res, eo, cuda);
	free(shown);
	if (op_times)
		printf("op times  %s: each op runs for its time there, not the plan's (--op-times)\n", op_times);
	print_notes(res, eo, &cmp);
	printf("\n");
	print_table(&cmp);
	printf("\n");
	print_verdicts(rp->plan, res, eo, &cmp, tol_peak, tol_time);
	if (report) {
		json_t *rep = exec_report_json(rp->net, rp->plan, res, &cmp);

		json_object_set_new(rep, "plan", json_string(path));
		json_object_set_new(rep, "device", json_string(cuda ? "cuda" : "host"));
		if (op_times)
			json_object_set_new(rep, "op_times", json_string(op_times));
		/* what memplan replan matches the report to */
		MP_ASSERT(plan_net_sha256(rp->net_json, sha) == 0);
		json_object_set_new(rep, "net_sha256", json_string(sha));
		if ((wr = write_report(report, rep)) != EXIT_OK)
			rc = wr;
	}
	if (!cmp.peak_ok)
		rc = cli_error(EXIT_NO, "verify: peak %s (%llu B) is %s %s the predicted %s (tolerance %g%%)",
			       mp_fmt_bytes(res->peak_bytes, b1, sizeof(b1)), (unsigned long long)res->peak_bytes,
			       pct(fabs(cmp.peak_dev), false, pp, sizeof(pp)), cmp.peak_dev > 0 ? "above" : "below",
			       mp_fmt_bytes(rp->plan->sim.peak_bytes, b2, sizeof(b2)), tol_peak);
	if (!cmp.time_ok)
		rc = cli_error(EXIT_NO, "verify: time %.3f ms is %s %s the predicted %.3f ms (tolerance %g%%)",
			       res->time_ms, pct(fabs(cmp.time_dev), false, pp, sizeof(pp)), cmp.time_dev > 0 ? "above" : "below",
			       rp->plan->sim.time_ms * eo->time_scale, tol_time);
	return rc;
}

static int set_alpha(const char *name, const char *arg, void *dst)
{
	return parse_real(name, arg, 0, 1, dst);
}

static int set_threshold(const char *name, const char *arg, void *dst)
{
	return parse_real(name, arg, 1, 1000, dst);
}

int cmd_verify(int argc, char **argv)
{
	struct mp_exec_opts eo;
	const char *report = NULL, *path;
	double tol_peak = 2, tol_time = -1; /* -1: not given */
	int rc, at, do_probe = 0, cuda = 0, run_rc, clock = -1;
	const char *op_times = NULL;
	struct adapt_opts ad = { 0, -1, -1, NULL, 0 };
	const struct cli_opt opts[] = {
		OPT_CHOICE("device", "host|cuda", 0, &cuda, backends, "backend", "host or cuda"),
		OPT_COUNT("iters", "N", 0, &eo.iters, 1),
		OPT_COUNT("warmup", "N", 0, &eo.warmup, 0),
		OPT_CHOICE("alloc", "arena|pool|async", CLI_NEWLINE, &eo.alloc, allocs, "allocator", "arena, pool or async"),
		OPT_CHOICE("compute", "real|timed", 0, &eo.compute, computes, "mode", "real or timed"),
		OPT_CALL("time-scale", 0, "X", 0, &eo.time_scale, set_scale),
		OPT_CHOICE("clock", "virtual|wall", CLI_NEWLINE, &clock, clocks, "clock", "virtual or wall"),
		OPT_CALL("tolerance-peak", 0, "PCT", 0, &tol_peak, set_percent),
		OPT_CALL("tolerance-time", 0, "PCT", 0, &tol_time, set_percent),
		OPT_STRING("report", 0, "FILE", 0, &report),
		OPT_STRING("op-times", 0, "NET.json[,...]", CLI_NEWLINE, &op_times),
		OPT_COUNT("adapt", "N", 0, &ad.every, 1),
		OPT_CALL("alpha", 0, "A", 0, &ad.alpha, set_alpha),
		OPT_CALL("adapt-threshold", 0, "PCT", 0, &ad.threshold, set_threshold),
		OPT_FLAG("probe", CLI_HIDDEN, &do_probe),
		OPT_END(),
	};
	const struct cli_cmd cmd = { "verify", "PLAN.json", opts, "       memplan verify --probe\n", NULL, 0 };
	struct mp_exec_result res;
	struct mp_plan_req req;
	struct mp_plan plan;
	struct mp_error err = { "" };
	struct mp_net *net = NULL;
	struct op_times ot = { 0 };
	struct run_plan rp = { 0 };
	json_t *root = NULL;
	double *factor = NULL;

	exec_opts_default(&eo);
	if ((rc = cli_parse(&cmd, argc, argv, &at)) != CLI_GO)
		return rc;
	if (do_probe) {
		if (argc - at != 0)
			return cli_usage_error(&cmd);
		return probe();
	}
	if (argc - at != 1)
		return cli_usage_error(&cmd);
	path = argv[at];
	if ((rc = check_options(report, path, cuda, clock, tol_time, eo.alloc)) != EXIT_OK)
		return rc;
	if (ad.alpha >= 0 && !ad.every)
		return cli_error(EXIT_BAD_INPUT, "--alpha: weighs the measured times of --adapt N; give --adapt too");
	if (ad.threshold >= 0 && !ad.every)
		return cli_error(EXIT_BAD_INPUT, "--adapt-threshold: says when --adapt N re-plans; give --adapt too");
	if (ad.alpha < 0)
		ad.alpha = REPLAN_ALPHA;
	ad.threshold = ad.threshold < 0 ? 0 : ad.threshold / 100;
	if (!cuda && tol_time >= 0 && clock < 0)
		clock = MP_EXEC_WALL; /* a time to judge on the host is its wall clock's */
	if (clock >= 0)
		eo.clock = (enum mp_exec_clock)clock;
	/* the host does not run at the GPU's speed: its time is judged only
	 * when asked; the GPU's always */
	if (tol_time < 0 && cuda)
		tol_time = 10;
	plan_init(&plan);
	if ((rc = load_inputs(path, op_times, &root, &net, &req, &plan, &ot, &factor)) != EXIT_OK)
		goto out;
	/* a plan of several jobs: its "jobs" (with their nets) is what a
	 * report's digest covers, and what re-planning corrects */
	rp = (struct run_plan){ json_object_get(root, net->n_jobs ? "jobs" : "net"), net, &plan, { 0 }, false };
	if (cuda && device_check_runnable(&req.device, &err) < 0) {
		rc = cli_error(EXIT_BAD_INPUT, "verify: %s: %s; --device host still checks the schedule", path, err.msg);
		goto out;
	}
	eo.op_factor = ot.n ? factor : NULL;
	ad.ot = &ot;
	if (ad.every)
		run_rc = adapt_run(backend_find(cuda ? "cuda" : "host"), &rp, &req, &eo, &ad, factor, &res, &err);
	else
		run_rc = replay_run(backend_find(cuda ? "cuda" : "host"), net, &req, &plan, &eo, &res, &err);
	if (ad.every)
		printf("\n");
	if (run_rc == EXEC_NO_DEVICE) {
		rc = cli_error(EXIT_NO_GPU, "verify: no usable CUDA device: %s", err.msg);
		goto out;
	}
	if (run_rc == ADAPT_FAILED) {
		rc = cli_error(EXIT_NO, "verify: --adapt: %s", err.msg);
		goto out;
	}
	if (run_rc < 0) {
		rc = cli_error(res.failed_action != UINT32_MAX ? EXIT_NO : EXIT_INTERNAL, "verify: %s", err.msg);
		if (report)
			rc = write_failed_report(report, path, cuda, &res, err.msg, rc);
		goto out;
	}
	rc = conclude(path, report, op_times, cuda, &rp, &req, &res, &eo, ad.replans, tol_peak, tol_time);
	exec_result_release(&res);
out:
	if (rp.replanned)
		replan_release(&rp.re);
	plan_release(&plan);
	net_free(net);
	op_times_release(&ot);
	free(factor);
	json_decref(root);
	return rc;
}
