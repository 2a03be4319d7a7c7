/*
 * test_kern: verify/kern_cuda.cu's real code paths, run on the CPU against
 * the fake cuDNN, cuBLAS and CUDA runtime of tests/fakecuda (fakecuda.h),
 * which check every call as the libraries document their arguments and log
 * what each call read and wrote.  kern_lib_open must load the fakes (not the
 * real libraries the loader's cache knows), and fail cleanly when any of
 * its calls fails.  Then for every op that kop_build gives a real kernel, in
 * the bundled examples (at batch 2), tests/data/kern-edge.json (1-D and 3-D,
 * dilation, groups, duplicate inputs) and generated models (MobileNet-V2 at
 * batch 4, ResNet-18 at 3, AlexNet in float16 and bfloat16), with a library
 * per net: a buffer of exactly the tensor's bytes per tensor the op reads,
 * writes or works in, then kern_prepare and kern_run
 *
 *   whole    the whole batch, the default algorithm, no workspace
 *   opws     the same within the op's own workspace tensor, when it has one
 *   family   convolutions: each named algorithm family within 64 MiB
 *   split    convolutions: micro-batches {1, n-1}, {n/2, n-n/2} and 1s,
 *            named families mixed
 *   profile  half the batch on the same buffers, as memplan profile does
 *
 * and checks: no violation in any call; the tensors written are exactly the
 * op's outputs (and the kop's output roles), each byte of each output
 * written the same number of times (>= 1); the tensors read for their
 * values from before the op are among its inputs (and the kop's input
 * roles), and an output the op also reads (a gradient it accumulates into)
 * is read before it is written; workspace accesses land in the workspace;
 * kern_run asks for no tensor the op does not touch; the workspace used is
 * within what was given; named families are the algorithms run unless
 * substituted; fc, add and concat values (float32) against a reference;
 * every descriptor and allocation is released.  The first op of each kernel
 * type and phase (and a split convolution) is also prepared with each
 * fallible call failing in turn: the failure is reported or survived, and
 * nothing leaks.  Fails if a kernel type and phase was never exercised.
 */
#include "../../verify/kern_cuda.h"

extern "C" {
#include "../../analysis/net/net.h"
#include "../../analysis/zoo/zoo.h"
}

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../fakecuda/fakecuda.h"
#include "unit.h"

#define WS_BIG ((uint64_t)64 << 20)
#define GEN_BATCH 4
#define EX_BATCH 2
#define VALUES_MAX ((uint64_t)1 << 22) /* elements: fc outputs whose values are checked */

static struct kern_lib *L;
static uint32_t exercised[KOP__COUNT][2], present[KOP__COUNT][2];
static uint64_t runs_total;
static bool injected[KOP__COUNT][2], split_injected[2];

/* ---- the op's buffers ---- */

struct bufs {
	const struct mp_net *net;
	void **addr;        /* [n_tensors]: the op's tensors, NULL elsewhere */
	int32_t *ids;       /* [n] */
	uint32_t n;
	float **before;     /* [n_tensors]: inputs' values (numeric checks) */
	bool asked_other;   /* kern_run asked for a tensor without a buffer */
	int32_t other;
};

static bool has(const int32_t *v, uint32_t n, int32_t t)
{
	for (uint32_t i = 0; i < n; i++)
		if (v[i] == t)
			return true;
	return false;
}

static void bind(struct bufs *B, int32_t t)
{
	void *p = NULL;

	if (t < 0 || B->addr[t])
		return;
	/* a workspace of 0 bytes (its algorithms' are given) gets 1 */
	if (cudaMalloc(&p, B->net->tensors[t].bytes ? B->net->tensors[t].bytes : 1) != cudaSuccess || !p) {
		fprintf(stderr, "cannot allocate %s\n", B->net->tensors[t].name);
		abort();
	}
	fk_tag(p, t, B->net->tensors[t].name);
	B->addr[t] = p;
	B->ids[B->n++] = t;
}

/* Buffers for everything op o reads, writes or works in, once per op (the
 * runs share them); with values, its float32 inputs hold small multiples of
 * 1/8 (and before[] what the op overwrites). */
static void bufs_init(struct bufs *B, const struct mp_net *net, int32_t o, bool values)
{
	const struct mp_op *op = &net->ops[o];

	memset(B, 0, sizeof(*B));
	B->net = net;
	B->addr = (void **)calloc(net->n_tensors, sizeof(*B->addr));
	B->before = (float **)calloc(net->n_tensors, sizeof(*B->before));
	B->ids = (int32_t *)calloc(op->n_in + op->n_out + 1, sizeof(*B->ids));
	for (uint32_t i = 0; i < op->n_in; i++)
		bind(B, op->in[i]);
	for (uint32_t i = 0; i < op->n_out; i++)
		bind(B, op->out[i]);
	bind(B, op->ws);
	for (uint32_t i = 0; values && i < op->n_in; i++) {
		int32_t t = op->in[i];
		uint64_t n = net->tensors[t].bytes / 4;
		float *f = (float *)B->addr[t];

		for (uint64_t j = 0; j < n; j++)
			f[j] = (float)((int)((j * 2654435761u + (uint64_t)t * 40503u) >> 7 & 15) - 7) / 8;
		/* a copy of what the op overwrites; the rest stays put */
		B->before[t] = f;
		if (has(op->out, op->n_out, t)) {
			B->before[t] = (float *)malloc(n ? n * 4 : 1);
			memcpy(B->before[t], f, n * 4);
		}
	}
}

/* Before each run: the inputs hold values from before the op, the outputs
 * nothing. */
static void bufs_reset(struct bufs *B, const struct mp_op *op)
{
	for (uint32_t i = 0; i < B->n; i++) {
		int32_t t = B->ids[i];

		fk_define(B->addr[t], has(op->in, op->n_in, t));
		if (B->before[t] && B->before[t] != B->addr[t]) /* an earlier run overwrote it */
			memcpy(B->addr[t], B->before[t], B->net->tensors[t].bytes / 4 * 4);
	}
	B->asked_other = false;
	B->other = -1;
}

static void bufs_release(struct bufs *B)
{
	for (uint32_t i = 0; i < B->n; i++) {
		if (B->before[B->ids[i]] != B->addr[B->ids[i]])
			free(B->before[B->ids[i]]);
		cudaFree(B->addr[B->ids[i]]);
	}
	free(B->addr);
	free(B->before);
	free(B->ids);
}

static void *addr_of(void *ctx, int32_t t)
{
	struct bufs *B = (struct bufs *)ctx;

	if (t < 0 || (uint32_t)t >= B->net->n_tensors || !B->addr[t]) {
		B->asked_other = true;
		B->other = t;
		return NULL;
	}
	return B->addr[t];
}

/* ---- what a run did ---- */

/* A sorted, duplicate-free set of tensor ids, for messages. */
static void set_add(int32_t *v, uint32_t *n, int32_t t)
{
	if (t >= 0 && !has(v, *n, t))
		v[(*n)++] = t;
}

static void say_set(const struct mp_net *net, const char *what, const int32_t *v, uint32_t n)
{
	fprintf(stderr, "    %s:", what);
	for (uint32_t i = 0; i < n; i++)
		fprintf(stderr, " %s", net->tensors[v[i]].name);
	fprintf(stderr, "%s\n", n ? "" : " (none)");
}

static bool same_set(const int32_t *a, uint32_t na, const int32_t *b, uint32_t nb)
{
	if (na != nb)
		return false;
	for (uint32_t i = 0; i < na; i++)
		if (!has(b, nb, a[i]))
			return false;
	return true;
}

static bool subset(const int32_t *a, uint32_t na, const int32_t *b, uint32_t nb)
{
	for (uint32_t i = 0; i < na; i++)
		if (!has(b, nb, a[i]))
			return false;
	return true;
}

/* The kop's roles: what its kernel writes, and what it may read from before
 * the op. */
static void kop_role_sets(const struct mp_kop *k, int32_t *out, uint32_t *no, int32_t *in, uint32_t *ni)
{
	*no = *ni = 0;
	for (uint32_t i = 0; i < k->n_x; i++)
		set_add(in, ni, k->x[i]);
	set_add(in, ni, k->w);
	set_add(in, ni, k->b);
	if (k->phase == MP_PHASE_FWD) {
		set_add(out, no, k->y);
		set_add(out, no, k->stats);
		set_add(out, no, k->mask);
		return;
	}
	set_add(in, ni, k->y);
	set_add(in, ni, k->stats);
	set_add(in, ni, k->mask);
	set_add(in, ni, k->dy);
	set_add(out, no, k->dw);
	set_add(out, no, k->db);
	for (uint32_t i = 0; i < k->n_x; i++) {
		set_add(out, no, k->dx[i]);
		if (k->dx_accumulate[i] && !has(k->dx, i, k->dx[i]))
			set_add(in, ni, k->dx[i]);
	}
}

/* ---- numeric references (float32) ---- */

static uint32_t mismatches;

static void expect_near(const struct mp_net *net, int32_t t, uint64_t i, float got, double want)
{
	if (fabs(got - want) <= 1e-3 * (1 + fabs(want)))
		return;
	if (mismatches++ < 5)
		fprintf(stderr, "    %s[%llu] = %.6g, expected %.6g\n", net->tensors[t].name, (unsigned long long)i,
			(double)got, want);
}

/* Sampled indices: all when few, else about FK_VALUE_SAMPLES spread over
 * [0, n) (the ones the fake cublasGemmEx computes). */
#define EACH_SAMPLE(i, n) for (uint64_t i = 0, st_ = fk_sample_stride(n); i < (n); i += st_)

static void check_fc(const struct bufs *B, const struct mp_kop *k)
{
	const struct mp_net *net = B->net;
	const uint64_t N = k->n, C = k->c, K = k->k;
	const float *x = B->before[k->x[0] >= 0 ? k->x[0] : 0], *w = k->w >= 0 ? B->before[k->w] : NULL;

	if (k->phase == MP_PHASE_FWD) {
		const float *b = k->b >= 0 ? B->before[k->b] : NULL, *y = (const float *)B->addr[k->y];

		EACH_SAMPLE(e, N * K) {
			uint64_t r = e / K, j = e % K;
			double s = b ? b[j] : 0;

			for (uint64_t c = 0; c < C; c++)
				s += (double)x[r * C + c] * w[j * C + c];
			expect_near(net, k->y, e, y[e], s);
		}
		return;
	}
	const float *dy = B->before[k->dy];

	if (k->dx[0] >= 0) {
		const float *dx = (const float *)B->addr[k->dx[0]], *prev = B->before[k->dx[0]];

		EACH_SAMPLE(e, N * C) {
			uint64_t r = e / C, c = e % C;
			double s = k->dx_accumulate[0] ? prev[e] : 0;

			for (uint64_t j = 0; j < K; j++)
				s += (double)dy[r * K + j] * w[j * C + c];
			expect_near(net, k->dx[0], e, dx[e], s);
		}
	}
	if (k->dw >= 0) {
		const float *dw = (const float *)B->addr[k->dw];

		EACH_SAMPLE(e, K * C) {
			uint64_t j = e / C, c = e % C;
			double s = 0;

			for (uint64_t r = 0; r < N; r++)
				s += (double)dy[r * K + j] * x[r * C + c];
			expect_near(net, k->dw, e, dw[e], s);
		}
	}
	if (k->db >= 0) {
		const float *db = (const float *)B->addr[k->db];

		EACH_SAMPLE(j, K) {
			double s = 0;

			for (uint64_t r = 0; r < N; r++)
				s += dy[r * K + j];
			expect_near(net, k->db, j, db[j], s);
		}
	}
}

/* Elements per sample of each input and of y, and input i's channel offset
 * per sample (concat); add: every input has y's shape. */
static void check_add_concat(const struct bufs *B, const struct mp_kop *k)
{
	const struct mp_net *net = B->net;
	uint64_t sp = 1, ys, off = 0;

	for (uint32_t i = 0; i < k->nsp; i++)
		sp *= k->out_sp[i];
	ys = (uint64_t)k->k * sp;
	if (k->phase == MP_PHASE_FWD) {
		const float *y = (const float *)B->addr[k->y];
		double *want = (double *)calloc(k->n * ys, sizeof(double));

		for (uint32_t i = 0; i < k->n_x; i++) {
			const float *x = B->before[k->x[i]];
			uint64_t xs = k->type == KOP_ADD ? ys : (uint64_t)k->x_c[i] * sp;

			for (uint64_t s = 0; s < k->n; s++)
				for (uint64_t e = 0; e < xs; e++)
					want[s * ys + (k->type == KOP_ADD ? 0 : off) + e] += x[s * xs + e];
			off += xs;
		}
		EACH_SAMPLE(e, k->n * ys)
			expect_near(net, k->y, e, y[e], want[e]);
		free(want);
		return;
	}
	/* backward: each distinct dx gets its slices of dy, once per
	 * occurrence, plus its value from before when the op reads it */
	const float *dy = B->before[k->dy];

	for (uint32_t i = 0; i < k->n_x; i++) {
		uint64_t xs = k->type == KOP_ADD ? ys : (uint64_t)k->x_c[i] * sp, o2 = 0;
		const float *dx, *prev;
		double *want;

		if (k->dx[i] < 0 || has(k->dx, i, k->dx[i])) {
			off += xs;
			continue;
		}
		dx = (const float *)B->addr[k->dx[i]];
		prev = B->before[k->dx[i]];
		want = (double *)calloc(k->n * xs, sizeof(double));
		for (uint64_t e = 0; prev && e < k->n * xs; e++)
			want[e] = prev[e];
		for (uint32_t j = 0; j < k->n_x; j++) {
			uint64_t js = k->type == KOP_ADD ? ys : (uint64_t)k->x_c[j] * sp;

			if (k->dx[j] == k->dx[i])
				for (uint64_t s = 0; s < k->n; s++)
					for (uint64_t e = 0; e < xs; e++)
						want[s * xs + e] += dy[s * ys + (k->type == KOP_ADD ? 0 : o2) + e];
			o2 += js;
		}
		EACH_SAMPLE(e, k->n * xs)
			expect_near(net, k->dx[i], e, dx[e], want[e]);
		free(want);
		off += xs;
	}
}

/* ---- one run ---- */

enum mode { M_WHOLE, M_OPWS, M_FAMILY, M_SPLIT, M_PROFILE };
static const char *const mode_names[] = { "whole", "opws", "family", "split", "profile" };

struct run {
	const char *net_name;
	const struct mp_net *net;
	int32_t o;
	const struct mp_kop *k;    /* as prepared (profile: a smaller n) */
	enum mode mode;
	const struct kern_mb *mb;
	uint32_t n_mb;
	uint64_t ws_bytes;
	void *ws_big;              /* WS_BIG bytes, tagged the workspace */
	struct bufs *B;            /* the op's */
};

static long live_descriptors(void)
{
	long n = 0;

	for (int i = FK_OBJ_TENSOR; i < FK_OBJ__COUNT; i++)
		n += fk_live((enum fk_obj)i);
	return n;
}

static bool values_checked(const struct mp_kop *k, enum mode m)
{
	if (k->dtype != MP_DT_FLOAT32 || m != M_WHOLE || (k->phase == MP_PHASE_BWD && k->dy < 0))
		return false;
	/* fc: not the largest (a language model's head), whose reference and
	 * bias calls would cost seconds */
	if (k->type == KOP_FC)
		return (uint64_t)k->n * k->k <= VALUES_MAX && (uint64_t)k->n * k->c <= VALUES_MAX &&
		       (uint64_t)k->k * k->c <= 8 * VALUES_MAX;
	return k->type == KOP_ADD || k->type == KOP_CONCAT;
}

/* What the run did, against the op: 0 or the number of problems. */
static int check_accesses(const struct run *R, const struct bufs *B, const struct kern *K)
{
	const struct mp_net *net = R->net;
	const struct mp_op *op = &net->ops[R->o];
	const struct mp_kop *k = R->k;
	int32_t wr[2 * KOP_MAX_IN + 16], rb[2 * KOP_MAX_IN + 16], ro[2 * KOP_MAX_IN + 16], io[2 * KOP_MAX_IN + 16],
		ii[2 * KOP_MAX_IN + 16];
	uint32_t nw = 0, nrb = 0, nro = 0, nio, nii;
	int bad = 0;

	for (uint32_t i = 0; i < fk_log_count(); i++) {
		const struct fk_access *a = fk_log_at(i);

		if (a->scratch) {
			if (a->tag != FK_TAG_WORKSPACE && !(a->tag >= 0 && a->tag == op->ws)) {
				fprintf(stderr, "    %s: %s's workspace lands in %s\n", a->call, a->arg,
					a->tag >= 0 ? net->tensors[a->tag].name : "an internal allocation");
				bad++;
			}
			continue;
		}
		if (a->tag < 0) {
			if (a->tag == FK_TAG_WORKSPACE) {
				fprintf(stderr, "    %s: %s is the workspace\n", a->call, a->arg);
				bad++;
			}
			continue; /* the library's own: scratch dy, dropout states */
		}
		if (a->write)
			set_add(wr, &nw, a->tag);
		if (a->read && a->read_before)
			set_add(rb, &nrb, a->tag);
		if (a->read)
			set_add(ro, &nro, a->tag);
	}
	kop_role_sets(k, io, &nio, ii, &nii);
	if (R->mode == M_PROFILE ? !subset(wr, nw, op->out, op->n_out) : !same_set(wr, nw, op->out, op->n_out)) {
		fprintf(stderr, "    the tensors written are not the op's outputs\n");
		say_set(net, "written", wr, nw);
		say_set(net, "outputs", op->out, op->n_out);
		bad++;
	}
	if (R->mode != M_PROFILE && !same_set(wr, nw, io, nio)) {
		fprintf(stderr, "    the tensors written are not the kop's output roles\n");
		say_set(net, "written", wr, nw);
		say_set(net, "roles", io, nio);
		bad++;
	}
	if (!subset(rb, nrb, op->in, op->n_in) || !subset(rb, nrb, ii, nii)) {
		fprintf(stderr, "    values from before the op read outside its inputs (or the kop's input roles)\n");
		say_set(net, "read", rb, nrb);
		say_set(net, "inputs", op->in, op->n_in);
		say_set(net, "roles", ii, nii);
		bad++;
	}
	for (uint32_t i = 0; i < nro; i++)
		if (!has(op->in, op->n_in, ro[i]) && !has(op->out, op->n_out, ro[i])) {
			fprintf(stderr, "    reads %s, neither an input nor an output\n", net->tensors[ro[i]].name);
			bad++;
		}
	/* an output the op also reads: its value from before is accumulated
	 * into (a gradient) or updated in place; it must be read before it is
	 * overwritten */
	for (uint32_t i = 0; R->mode != M_PROFILE && i < op->n_out; i++)
		if (has(op->in, op->n_in, op->out[i]) && !has(rb, nrb, op->out[i])) {
			fprintf(stderr, "    %s is read and written by the op, but the kernel overwrote it unread\n",
				net->tensors[op->out[i]].name);
			bad++;
		}
	/* each byte of each output written the same number of times */
	for (uint32_t i = 0; R->mode != M_PROFILE && i < op->n_out; i++) {
		int32_t t = op->out[i];
		unsigned lo, hi;
		uint64_t at;

		fk_write_counts(B->addr[t], net->tensors[t].bytes, &lo, &hi, &at);
		if (net->tensors[t].bytes && (lo != hi || lo == 0)) {
			fprintf(stderr, "    %s (%llu bytes): bytes written %u to %u times (%u at byte %llu)\n",
				net->tensors[t].name, (unsigned long long)net->tensors[t].bytes, lo, hi, lo,
				(unsigned long long)at);
			bad++;
		}
	}
	if (B->asked_other) {
		fprintf(stderr, "    kern_run asked for tensor %d, which the op neither reads nor writes\n", B->other);
		bad++;
	}
	if (kern_ws_bytes(K) > R->ws_bytes) {
		fprintf(stderr, "    uses %llu workspace bytes, prepared with %llu\n",
			(unsigned long long)kern_ws_bytes(K), (unsigned long long)R->ws_bytes);
		bad++;
	}
	if ((R->mode == M_WHOLE || R->mode == M_OPWS) && kern_algo_substituted(K)) {
		fprintf(stderr, "    substituted, with no algorithm named\n");
		bad++;
	}
	/* a family prepared without substitution runs its algorithms */
	if (R->mode == M_FAMILY && k->type == KOP_CONV && !kern_algo_substituted(K)) {
		struct kern_family f;

		kern_conv_family(R->mb[0].algo, &f);
		if (k->phase == MP_PHASE_FWD ? fk_algos_used(0) != 1u << f.fwd
					     : ((k->dx[0] >= 0 && fk_algos_used(1) != 1u << f.bwd_data) ||
						(k->dw >= 0 && fk_algos_used(2) != 1u << f.bwd_filter))) {
			fprintf(stderr, "    family %s not substituted, but ran algorithms %#x, %#x, %#x\n",
				R->mb[0].algo, fk_algos_used(0), fk_algos_used(1), fk_algos_used(2));
			bad++;
		}
	}
	return bad;
}

static void context(const struct run *R, char *buf, size_t n)
{
	size_t at = (size_t)snprintf(buf, n, "%s %s (%s, n %u, %s", R->net_name, R->net->ops[R->o].name,
				     mp_kop_type_name(R->k->type), R->k->n, mode_names[R->mode]);

	for (uint32_t i = 0; i < R->n_mb && at < n; i++)
		at += (size_t)snprintf(buf + at, n - at, "%s%u%s%s", i ? " + " : " ", R->mb[i].batch,
				       R->mb[i].algo ? " " : "", R->mb[i].algo ? R->mb[i].algo : "");
	if (at < n)
		snprintf(buf + at, n - at, ", ws %llu)", (unsigned long long)R->ws_bytes);
}

/* Prepare (unless given K) and run; true when all checks held.  Frees K;
 * then d0 descriptors must be live (-1: as many as before). */
static bool run_kern(const struct run *R, struct kern *K, long d0)
{
	const struct mp_op *op = &R->net->ops[R->o];
	bool values = values_checked(R->k, R->mode);
	struct bufs *B = R->B;
	char why[256] = "", ctx[512];
	uint64_t v0 = fk_violations();
	void *ws;
	int bad = 0;

	if (d0 < 0)
		d0 = live_descriptors();
	context(R, ctx, sizeof(ctx));
	fk_context(ctx);
	bufs_reset(B, op);
	if (!K && kern_prepare(L, R->net, R->k, R->mb, R->n_mb, R->ws_bytes, &K, why, sizeof(why)) < 0) {
		fprintf(stderr, "%s: kern_prepare: %s\n", ctx, why);
		CHECK(!"kern_prepare failed");
		return false;
	}
	ws = R->mode == M_OPWS ? B->addr[op->ws] : R->ws_bytes ? R->ws_big : NULL;
	fk_log_clear();
	mismatches = 0;
	fk_values(values);
	if (kern_run(L, K, addr_of, B, ws, why, sizeof(why)) < 0) {
		fprintf(stderr, "%s: kern_run: %s\n", ctx, why);
		bad++;
	}
	fk_values(false);
	runs_total++;
	if (fk_violations() != v0) {
		fprintf(stderr, "%s: %llu violations (above)\n", ctx, (unsigned long long)(fk_violations() - v0));
		bad++;
	}
	if (!bad) {
		int c = check_accesses(R, B, K);

		if (c)
			fprintf(stderr, "%s: %d problems (above)\n", ctx, c);
		bad += c;
	}
	if (!bad && values) {
		if (R->k->type == KOP_FC)
			check_fc(B, R->k);
		else
			check_add_concat(B, R->k);
		if (mismatches) {
			fprintf(stderr, "%s: %u values differ from the reference (above)\n", ctx, mismatches);
			bad++;
		}
	}
	kern_free(L, K);
	if (live_descriptors() != d0) {
		fprintf(stderr, "%s: %ld descriptors left after kern_free\n", ctx, live_descriptors() - d0);
		bad++;
	}
	fk_context(NULL);
	CHECK(bad == 0);
	return bad == 0;
}

static bool run_once(const struct run *R)
{
	return run_kern(R, NULL, -1);
}

/* Prepare with each fallible call failing in turn: an error with a reason,
 * or (an alternative path) a kernel that runs cleanly; nothing leaked. */
static void inject(const struct run *R)
{
	struct kern *K = NULL;
	char why[256], ctx[512];
	uint64_t before, n, v0 = fk_violations();
	long d0 = live_descriptors();
	int bad = 0;

	context(R, ctx, sizeof(ctx));
	fk_context(ctx);
	before = fk_fallible_calls();
	if (!K && kern_prepare(L, R->net, R->k, R->mb, R->n_mb, R->ws_bytes, &K, why, sizeof(why)) < 0) {
		CHECK(!"kern_prepare failed");
		return;
	}
	n = fk_fallible_calls() - before;
	kern_free(L, K);
	for (uint64_t j = 1; j <= n; j++) {
		int rc;

		why[0] = 0;
		K = NULL;
		fk_fail_at(j);
		rc = kern_prepare(L, R->net, R->k, R->mb, R->n_mb, R->ws_bytes, &K, why, sizeof(why));
		fk_fail_at(0);
		if (rc < 0 && (!why[0] || K)) {
			fprintf(stderr, "%s: call %llu failing: kern_prepare fails %s\n", ctx, (unsigned long long)j,
				K ? "but hands back a kernel" : "without a reason");
			bad++;
		}
		if (rc == 0) {
			if (!run_kern(R, K, d0))
				bad++;
			fk_context(ctx);
		}
		if (live_descriptors() != d0) {
			fprintf(stderr, "%s: call %llu failing: %ld descriptors leak (%s)\n", ctx, (unsigned long long)j,
				live_descriptors() - d0, why);
			bad++;
			d0 = live_descriptors();
		}
		if (fk_alloc_bytes(FK_TAG_INTERNAL, NULL) != kern_lib_bytes(L)) {
			fprintf(stderr, "%s: call %llu failing: %llu bytes allocated, the library says it holds %llu\n",
				ctx, (unsigned long long)j, (unsigned long long)fk_alloc_bytes(FK_TAG_INTERNAL, NULL),
				(unsigned long long)kern_lib_bytes(L));
			bad++;
		}
	}
	/* each call of the run failing: -1, naming the call and its status */
	if (kern_prepare(L, R->net, R->k, R->mb, R->n_mb, R->ws_bytes, &K, why, sizeof(why)) == 0) {
		void *ws = R->mode == M_OPWS ? R->B->addr[R->net->ops[R->o].ws] : R->ws_bytes ? R->ws_big : NULL;

		bufs_reset(R->B, &R->net->ops[R->o]);
		before = fk_fallible_calls();
		kern_run(L, K, addr_of, R->B, ws, why, sizeof(why));
		n = fk_fallible_calls() - before;
		CHECK(n > 0);
		for (uint64_t j = 1; j <= n; j++) {
			int rc;

			why[0] = 0;
			bufs_reset(R->B, &R->net->ops[R->o]);
			fk_fail_at(j);
			rc = kern_run(L, K, addr_of, R->B, ws, why, sizeof(why));
			fk_fail_at(0);
			if (rc == 0 || strlen(why) + 1 >= sizeof(why) ||
			    (!strstr(why, "EXECUTION_FAILED") && !strstr(why, "status 13"))) {
				fprintf(stderr, "%s: call %llu of kern_run failing: rc %d, reason '%s'\n", ctx,
					(unsigned long long)j, rc, why);
				bad++;
			}
		}
		kern_free(L, K);
	} else
		bad++;
	if (fk_violations() != v0) {
		fprintf(stderr, "%s: %llu violations under fault injection (above)\n", ctx,
			(unsigned long long)(fk_violations() - v0));
		bad++;
	}
	fk_context(NULL);
	CHECK(n > 0);
	CHECK(bad == 0);
}

/* ---- every op of a net ---- */

static void run_net(const char *name, const struct mp_net *net)
{
	uint32_t n_fam, real = 0, runs0 = (uint32_t)runs_total;
	const struct kern_family *fam = kern_conv_families(&n_fam);
	struct mp_kop *k = (struct mp_kop *)malloc(sizeof(*k)), *kb = (struct mp_kop *)malloc(sizeof(*kb));
	void *ws_big = NULL;

	/* a library per net: its scratch gradient starts empty, so a scratch
	 * too small for the op shows */
	{
		char why[256] = "";

		if (kern_lib_open(&L, NULL, why, sizeof(why)) < 0) {
			fprintf(stderr, "kern_lib_open: %s\n", why);
			CHECK(!"kern_lib_open");
			return;
		}
	}
	if (cudaMalloc(&ws_big, WS_BIG) != cudaSuccess)
		abort();
	fk_tag(ws_big, FK_TAG_WORKSPACE, "the workspace");
	for (uint32_t o = 0; o < net->n_ops; o++) {
		const struct mp_op *op = &net->ops[o];
		struct run R;
		struct bufs B;
		struct kern_mb mb[GEN_BATCH + 2];
		int ph;
		bool ok;

		kop_build(net, (int32_t)o, k);
		if (k->type == KOP_TIMED)
			continue;
		bufs_init(&B, net, (int32_t)o, values_checked(k, M_WHOLE));
		ph = k->phase == MP_PHASE_BWD;
		present[k->type][ph]++;
		real++;
		memset(&R, 0, sizeof(R));
		R.net_name = name;
		R.net = net;
		R.o = (int32_t)o;
		R.k = k;
		R.ws_big = ws_big;
		R.B = &B;
		R.mb = mb;
		/* whole batch, default algorithm, no workspace */
		R.mode = M_WHOLE;
		mb[0].batch = k->n;
		mb[0].algo = NULL;
		R.n_mb = 1;
		ok = run_once(&R);
		if (ok)
			exercised[k->type][ph]++;
		if (ok && !injected[k->type][ph]) {
			injected[k->type][ph] = true;
			inject(&R);
		}
		if (op->ws >= 0) {
			R.mode = M_OPWS;
			R.ws_bytes = net->tensors[op->ws].bytes;
			run_once(&R);
			R.ws_bytes = 0;
		}
		if (k->type == KOP_CONV) {
			R.mode = M_FAMILY;
			R.ws_bytes = WS_BIG;
			for (uint32_t f = 0; f < n_fam; f++) {
				mb[0].algo = fam[f].name;
				run_once(&R);
			}
			if (k->n >= 2) {
				R.mode = M_SPLIT;
				mb[0].batch = 1;
				mb[0].algo = fam[o % n_fam].name;
				mb[1].batch = k->n - 1;
				mb[1].algo = fam[(o + 3) % n_fam].name;
				R.n_mb = 2;
				run_once(&R);
				mb[0].batch = k->n / 2;
				mb[0].algo = mb[1].algo = NULL;
				mb[1].batch = k->n - k->n / 2;
				R.ws_bytes = 0;
				run_once(&R);
				if (k->n <= GEN_BATCH) {
					for (uint32_t i = 0; i < k->n; i++) {
						mb[i].batch = 1;
						mb[i].algo = i % 2 ? fam[(o + i) % n_fam].name : NULL;
					}
					R.n_mb = k->n;
					R.ws_bytes = WS_BIG;
					run_once(&R);
				}
				if (!split_injected[ph]) {
					/* a split's failure paths too (the micro-batch descriptors) */
					split_injected[ph] = true;
					mb[0].batch = 1;
					mb[0].algo = fam[5].name;
					mb[1].batch = k->n - 1;
					mb[1].algo = fam[0].name;
					R.n_mb = 2;
					R.ws_bytes = WS_BIG;
					R.mode = M_SPLIT;
					inject(&R);
				}
			}
		}
		/* memplan profile: a smaller batch, on the whole batch's buffers */
		if (k->n >= 2) {
			*kb = *k;
			kb->n = k->n / 2;
			R.k = kb;
			R.mode = M_PROFILE;
			mb[0].batch = kb->n;
			mb[0].algo = k->type == KOP_CONV ? "fft_tiling" : NULL;
			R.n_mb = 1;
			R.ws_bytes = k->type == KOP_CONV ? WS_BIG : 0;
			run_once(&R);
		}
		bufs_release(&B);
	}
	cudaFree(ws_big);
	kern_lib_close(L);
	L = NULL;
	for (int i = 0; i < FK_OBJ__COUNT; i++)
		if (fk_live((enum fk_obj)i)) {
			fprintf(stderr, "%s: %ld %s left after kern_lib_close\n", name, fk_live((enum fk_obj)i),
				fk_obj_name((enum fk_obj)i));
			CHECK(fk_live((enum fk_obj)i) == 0);
		}
	CHECK(fk_alloc_bytes(FK_TAG_INTERNAL, NULL) == 0);
	printf("  %-32s %4u ops with real kernels, %5u runs\n", name, real, (uint32_t)runs_total - runs0);
	free(k);
	free(kb);
}

/* A file's net, at batch EX_BATCH when scale. */
static void run_file(const char *path, bool scale)
{
	struct mp_error err = { "" };
	struct mp_net *net = net_load_file(path, &err), *small = NULL;

	CHECK(net != NULL);
	if (!net) {
		fprintf(stderr, "%s: %s\n", path, err.msg);
		return;
	}
	if (scale && net->batch && net->batch != EX_BATCH) {
		small = net_scaled(net, EX_BATCH, 1, 1, &err);
		CHECK(small != NULL);
	}
	run_net(path, small ? small : net);
	net_free(small);
	net_free(net);
}

static void run_zoo(const char *model, uint32_t batch, int dtype)
{
	struct zoo_opts o;
	struct mp_error err = { "" };
	struct mp_net *net;
	json_t *j;
	char name[64];

	zoo_opts_init(&o);
	o.batch = batch;
	o.dtype = dtype;
	j = zoo_generate(model, &o, &err);
	CHECK(j != NULL);
	if (!j) {
		fprintf(stderr, "zoo_generate(%s): %s\n", model, err.msg);
		return;
	}
	net = net_load_json(j, &err);
	json_decref(j);
	CHECK(net != NULL);
	if (!net) {
		fprintf(stderr, "net_load_json(%s): %s\n", model, err.msg);
		return;
	}
	snprintf(name, sizeof(name), "gen %s -b %u%s%s", model, batch, dtype >= 0 ? " " : "",
		 dtype >= 0 ? mp_dtype_name((enum mp_dtype)dtype) : "");
	run_net(name, net);
	net_free(net);
}

/* ---- the library itself ---- */

static void test_lib(void)
{
	char why[256] = "";
	uint64_t before, n;
	int bad = 0;

	CHECK(kern_lib_open(&L, NULL, why, sizeof(why)) == 0);
	if (!L) {
		fprintf(stderr, "kern_lib_open: %s\n", why);
		exit(1);
	}
	/* the fakes, not the real libraries in the loader's cache */
	CHECK(fk_loaded() == 3);
	CHECK(fk_live(FK_OBJ_CUDNN) == 1);
	CHECK(fk_live(FK_OBJ_CUBLAS) == 1);
	if (fk_loaded() != 3) {
		fprintf(stderr, "test_kern: kern_lib_open did not load the fakes (%u): check the RPATH\n", fk_loaded());
		exit(1);
	}
	printf("  kern_lib_open: %s (the fakes)\n", kern_lib_versions(L));
	/* opening with each fallible call failing: -1 with a reason, no leak */
	before = fk_fallible_calls();
	{
		struct kern_lib *L2 = NULL;

		CHECK(kern_lib_open(&L2, NULL, why, sizeof(why)) == 0);
		kern_lib_close(L2);
	}
	n = fk_fallible_calls() - before;
	CHECK(n >= 3);
	for (uint64_t j = 1; j <= n; j++) {
		struct kern_lib *L2 = NULL;
		int rc;

		why[0] = 0;
		fk_fail_at(j);
		rc = kern_lib_open(&L2, NULL, why, sizeof(why));
		fk_fail_at(0);
		if (rc == 0 || !why[0] || L2) {
			fprintf(stderr, "kern_lib_open with call %llu failing: rc %d, why '%s'\n", (unsigned long long)j, rc,
				why);
			bad++;
		}
		kern_lib_close(L2);
		if (fk_live(FK_OBJ_CUDNN) != 1 || fk_live(FK_OBJ_CUBLAS) != 1) {
			fprintf(stderr, "kern_lib_open with call %llu failing leaks a handle\n", (unsigned long long)j);
			bad++;
		}
	}
	CHECK(bad == 0);
	kern_lib_close(L);
	L = NULL;
	CHECK(fk_live(FK_OBJ_CUDNN) == 0);
	CHECK(fk_live(FK_OBJ_CUBLAS) == 0);
}

/* kern_same_run: a recompute is compared with the first run only when both
 * run alike (verify's rebuilt checks). */
static void test_same_run(void)
{
	struct mp_error err = { "" };
	struct mp_net *net = net_load_file("tests/data/kern-edge.json", &err);
	struct mp_kop k;
	struct kern *a = NULL, *b = NULL, *c = NULL;
	char why[256];
	int32_t conv = -1, drop = -1;

	CHECK(net != NULL);
	CHECK(kern_lib_open(&L, NULL, why, sizeof(why)) == 0);
	if (!net || !L) {
		net_free(net);
		return;
	}
	for (uint32_t o = 0; o < net->n_ops && (conv < 0 || drop < 0); o++) {
		if (net->ops[o].phase != MP_PHASE_FWD)
			continue;
		kop_build(net, (int32_t)o, &k);
		if (k.type == KOP_CONV && k.nsp == 2 && conv < 0)
			conv = (int32_t)o;
		if (k.type == KOP_DROPOUT && drop < 0)
			drop = (int32_t)o;
	}
	CHECK(conv >= 0);
	CHECK(kern_same_run(NULL, NULL));
	if (conv >= 0) {
		struct kern_mb mg, mf;

		kop_build(net, conv, &k);
		mg = { k.n, "implicit_gemm" };
		mf = { k.n, "fft" };
		CHECK(kern_prepare(L, net, &k, &mg, 1, 64u << 20, &a, why, sizeof(why)) == 0);
		CHECK(kern_prepare(L, net, &k, &mg, 1, 64u << 20, &b, why, sizeof(why)) == 0);
		CHECK(kern_prepare(L, net, &k, &mf, 1, 64u << 20, &c, why, sizeof(why)) == 0);
		if (a && b && c) {
			CHECK(kern_same_run(a, b));       /* the same algorithms */
			CHECK(!kern_same_run(a, c));      /* other algorithms round otherwise */
			CHECK(!kern_same_run(a, NULL));   /* real against timed */
		}
		kern_free(L, a);
		kern_free(L, b);
		kern_free(L, c);
		a = b = c = NULL;
	}
	if (drop >= 0) {
		struct kern_mb m;

		kop_build(net, drop, &k);
		m = { k.n, NULL };
		CHECK(kern_prepare(L, net, &k, &m, 1, 0, &a, why, sizeof(why)) == 0);
		if (a)
			CHECK(!kern_same_run(a, a)); /* dropout draws a new mask */
		kern_free(L, a);
	}
	kern_lib_close(L);
	L = NULL;
	net_free(net);
}

int main(void)
{
	static const char *const examples[] = {
		"examples/alexnet.json", "examples/vgg16-b64.json", "examples/resnet50-b32.json",
		"examples/densenet121-b32.json", "examples/inception-v4-b32.json", "examples/unet.json",
		"examples/bert-base.json", "examples/gpt2-small.json", "examples/seq2seq-attention.json",
		"examples/residual.json",
	};
	uint64_t v0;
	int missing = 0;

	test_lib();
	v0 = fk_violations();
	test_same_run();
	for (size_t i = 0; i < sizeof(examples) / sizeof(examples[0]); i++)
		run_file(examples[i], true);
	/* 1-D and 3-D convolution and pooling, dilation, groups, depthwise,
	 * padded max and global average pools, every activation, in-place
	 * relu, an input concatenated and added twice (dx accumulated) */
	run_file("tests/data/kern-edge.json", false);
	run_zoo("mobilenet-v2", GEN_BATCH, -1);
	run_zoo("resnet18", GEN_BATCH - 1, -1);
	run_zoo("alexnet", GEN_BATCH, MP_DT_FLOAT16);
	run_zoo("alexnet", GEN_BATCH - 1, MP_DT_BFLOAT16);
	printf("  %llu runs, %llu violations; ops per kernel type and phase (whole batch ok / with the type):\n",
	       (unsigned long long)runs_total, (unsigned long long)(fk_violations() - v0));
	for (int t = 1; t < KOP__COUNT; t++) {
		printf("    %-8s fwd %4u / %4u   bwd %4u / %4u\n", mp_kop_type_name((enum mp_kop_type)t), exercised[t][0],
		       present[t][0], exercised[t][1], present[t][1]);
		for (int ph = 0; ph < 2; ph++)
			if (!exercised[t][ph]) {
				fprintf(stderr, "test_kern: no %s %s op was exercised\n", mp_kop_type_name((enum mp_kop_type)t),
					ph ? "backward" : "forward");
				missing++;
			}
	}
	CHECK(missing == 0);
	CHECK(fk_violations() == v0);
	return unit_report("test_kern");
}
