/*
 * profile_cuda: memplan profile's measurement on CUDA device 0
 * (exec_cuda_profile, verify/profile.h).  Each layer whose forward op has a
 * real kernel (kop_build) gets its own device buffers for every tensor its
 * forward and backward touch, filled with small finite values (bytes 0x3c:
 * about 0.0115 in float32 and bfloat16, 1.06 in float16), and each kernel
 * (kern_cuda.cu) runs o->warmup times and then o->iters times between CUDA
 * events on one stream; the median counts.  The default implementation is
 * measured with no workspace (cuDNN's heuristic choice that needs none), so
 * that a plan which picks no algorithm needs no scratch, or where there is
 * none with the heuristic choice within half the free memory.  Every convolution
 * is also measured per named algorithm family (kern_conv_families) at each
 * micro-batch size of prof_batches, forward and backward, with the
 * workspace the family asks for at that size; a family cuDNN does not
 * support for the layer, or whose workspace does not fit in half the free
 * memory, is left out.  Buffers are freed after each layer.
 *
 * Compiled with warnings as errors; its calls run in CI against the fake
 * runtime and libraries of tests/fakecuda (tests/unit/test_backends.cc).
 */
#include "kern_cuda.h"

extern "C" {
#include "exec.h"
#include "profile.h"
}

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct pc {
	const struct mp_net *net;
	const struct mp_prof_opts *o;
	struct mp_profile *out;
	struct kern_lib *L;
	cudaStream_t st;
	cudaEvent_t *ev;          /* [iters + 1] */
	double *ms;               /* [iters] */
	void **addr;              /* [n_tensors] this layer's buffers, NULL elsewhere */
	int32_t *bound;           /* [n_tensors] tensors with a buffer */
	uint32_t n_bound;
	void *ws;
	uint64_t ws_bytes;
	struct mp_error *err;
};

static int cu(struct pc *P, cudaError_t e, const char *what)
{
	if (e == cudaSuccess)
		return 0;
	mp_error_set(P->err, "CUDA error in %s: %s (%s)", what, cudaGetErrorString(e), cudaGetErrorName(e));
	return -1;
}

static void *addr_of(void *ctx, int32_t t)
{
	return ((struct pc *)ctx)->addr[t];
}

/* A buffer for tensor t (once per layer).  0; 1 when the device has no room
 * (the layer is not measured); -1 on another CUDA error. */
static int bind(struct pc *P, int32_t t)
{
	uint64_t n;

	if (t < 0 || P->addr[t])
		return 0;
	n = P->net->tensors[t].bytes;
	if (cudaMalloc(&P->addr[t], n ? n : 1) != cudaSuccess) {
		P->addr[t] = NULL;
		cudaGetLastError(); /* clear it: out of memory is not sticky */
		return 1;
	}
	P->bound[P->n_bound++] = t;
	return cu(P, cudaMemsetAsync(P->addr[t], KERN_FILL_BYTE, n, P->st), "cudaMemsetAsync (a layer's buffers)");
}

static int bind_kop(struct pc *P, const struct mp_kop *k)
{
	const int32_t one[] = { k->w, k->b, k->y, k->dy, k->dw, k->db, k->stats, k->mask };
	int rc;

	for (uint32_t i = 0; i < k->n_x; i++)
		if ((rc = bind(P, k->x[i])) != 0 || (rc = bind(P, k->dx[i])) != 0)
			return rc;
	for (size_t i = 0; i < sizeof(one) / sizeof(one[0]); i++)
		if ((rc = bind(P, one[i])) != 0)
			return rc;
	return 0;
}

static void unbind(struct pc *P)
{
	for (uint32_t i = 0; i < P->n_bound; i++) {
		cudaFree(P->addr[P->bound[i]]);
		P->addr[P->bound[i]] = NULL;
	}
	P->n_bound = 0;
}

/* Workspace of at least n bytes.  0; 1 when it does not fit. */
static int workspace(struct pc *P, uint64_t n)
{
	if (n <= P->ws_bytes)
		return 0;
	if (P->ws)
		cudaFree(P->ws);
	P->ws = NULL;
	P->ws_bytes = 0;
	if (cudaMalloc(&P->ws, n) != cudaSuccess) {
		P->ws = NULL;
		cudaGetLastError();
		return 1;
	}
	P->ws_bytes = n;
	return 0;
}

/* Run K warm-up then measured times; *ms the median.  0, -1 on an error. */
static int time_kernel(struct pc *P, const struct kern *K, double *ms)
{
	const uint32_t n = P->o->iters;
	char why[256];

	for (uint32_t i = 0; i < P->o->warmup; i++)
		if (kern_run(P->L, K, addr_of, P, P->ws, why, sizeof(why)) < 0)
			goto kern_failed;
	if (cu(P, cudaEventRecord(P->ev[0], P->st), "cudaEventRecord") < 0)
		return -1;
	for (uint32_t i = 0; i < n; i++) {
		if (kern_run(P->L, K, addr_of, P, P->ws, why, sizeof(why)) < 0)
			goto kern_failed;
		if (cu(P, cudaEventRecord(P->ev[i + 1], P->st), "cudaEventRecord") < 0)
			return -1;
	}
	if (cu(P, cudaEventSynchronize(P->ev[n]), "cudaEventSynchronize (a layer's runs)") < 0)
		return -1;
	for (uint32_t i = 0; i < n; i++) {
		float f = 0;

		if (cu(P, cudaEventElapsedTime(&f, P->ev[i], P->ev[i + 1]), "cudaEventElapsedTime") < 0)
			return -1;
		P->ms[i] = f;
	}
	*ms = mp_median(P->ms, n);
	return 0;
kern_failed:
	mp_error_set(P->err, "%s", why);
	return -1;
}

/* Prepare k for batch samples with algorithm family algo (NULL: the
 * default, no workspace) and time it.  1 when it cannot run that way (*ws
 * and *ms untouched), 0 with *ms and *ws, -1 on an error. */
static int measure(struct pc *P, const struct mp_kop *k, uint32_t batch, const char *algo, uint64_t ws_cap,
		   double *ms, uint64_t *ws)
{
	struct mp_kop kb = *k;
	struct kern_mb mb = { batch, algo };
	struct kern *K = NULL;
	char why[256];
	int rc;

	kb.n = batch;
	if (kern_prepare(P->L, P->net, &kb, &mb, 1, ws_cap, &K, why, sizeof(why)) < 0)
		return 1;
	if (algo && kern_algo_substituted(K)) {
		kern_free(P->L, K);
		return 1;
	}
	if (workspace(P, kern_ws_bytes(K)) != 0) {
		kern_free(P->L, K);
		return 1;
	}
	rc = time_kernel(P, K, ms);
	if (rc == 0)
		*ws = kern_ws_bytes(K);
	kern_free(P->L, K);
	return rc;
}

/* The workspace a measurement may use: half the device's free memory. */
static int half_free(struct pc *P, uint64_t *cap)
{
	size_t fr = 0, tot = 0;

	if (cu(P, cudaMemGetInfo(&fr, &tot), "cudaMemGetInfo") < 0)
		return -1;
	*cap = fr / 2;
	return 0;
}

/* Every algorithm family of a convolution at every micro-batch size. */
static int measure_algos(struct pc *P, const struct mp_kop *kf, const struct mp_kop *kb,
			 struct mp_prof_layer *m)
{
	uint32_t n_fam, n_b;
	const struct kern_family *fam = kern_conv_families(&n_fam);
	uint32_t *b = prof_batches(kf->n, P->o->batches, &n_b);
	uint64_t cap;
	int rc = 0;

	if (half_free(P, &cap) < 0) {
		free(b);
		return -1;
	}
	m->algos = (struct mp_prof_algo *)mp_xcalloc((size_t)n_fam * n_b, sizeof(*m->algos));
	for (uint32_t j = 0; j < n_b && rc >= 0; j++)
		for (uint32_t f = 0; f < n_fam && rc >= 0; f++) {
			struct mp_prof_algo *a = &m->algos[m->n_algos];
			uint64_t wf = 0, wb = 0;
			int rf, rb = 1;

			a->fwd_ms = a->bwd_ms = -1;
			rf = measure(P, kf, b[j], fam[f].name, cap, &a->fwd_ms, &wf);
			if (rf < 0 || (kb && (rb = measure(P, kb, b[j], fam[f].name, cap, &a->bwd_ms, &wb)) < 0)) {
				rc = -1;
				break;
			}
			if (rf && rb)
				continue; /* no phase runs with this family */
			a->name = fam[f].name;
			a->batch = b[j] == kf->n ? 0 : b[j];
			a->workspace_bytes = wf > wb ? wf : wb;
			m->n_algos++;
		}
	free(b);
	return rc;
}

static int measure_layer(struct pc *P, uint32_t li, struct mp_prof_layer *m)
{
	const struct mp_layer *ly = &P->net->layers[li];
	struct mp_kop *kf = (struct mp_kop *)mp_xmalloc(sizeof(*kf));
	struct mp_kop *kb = (struct mp_kop *)mp_xmalloc(sizeof(*kb));
	uint64_t wf = 0, wb = 0, cap = 0;
	int rc = 0, r;

	memset(m, 0, sizeof(*m));
	m->layer = (int32_t)li;
	m->fwd_ms = m->bwd_ms = m->update_ms = -1;
	if (ly->type == MP_L_DATA || ly->fwd_op < 0) {
		m->why = "a data layer: nothing runs on the GPU";
		goto out;
	}
	kop_build(P->net, ly->fwd_op, kf);
	if (kf->type == KOP_TIMED) {
		m->why = kf->why;
		goto out;
	}
	if (ly->bwd_op >= 0)
		kop_build(P->net, ly->bwd_op, kb);
	else
		kb->type = KOP_TIMED;
	if ((r = bind_kop(P, kf)) != 0 || (kb->type != KOP_TIMED && (r = bind_kop(P, kb)) != 0)) {
		if (r < 0)
			rc = -1;
		m->why = "its tensors do not fit in the device's free memory";
		goto out;
	}
	/* the default: without workspace where cuDNN can, else its heuristic
	 * choice within half the free memory (then the layer's workspace) */
	if (half_free(P, &cap) < 0) {
		rc = -1;
		goto out;
	}
	if ((r = measure(P, kf, kf->n, NULL, 0, &m->fwd_ms, &wf)) == 1)
		r = measure(P, kf, kf->n, NULL, cap, &m->fwd_ms, &wf);
	if (r != 0) {
		if (r < 0)
			rc = -1;
		m->fwd_ms = -1;
		m->why = "cuDNN runs no forward algorithm for it within half the free memory";
		goto out;
	}
	if (kb->type != KOP_TIMED && (r = measure(P, kb, kb->n, NULL, 0, &m->bwd_ms, &wb)) == 1)
		r = measure(P, kb, kb->n, NULL, cap, &m->bwd_ms, &wb);
	if (kb->type != KOP_TIMED && r < 0) {
		rc = -1;
		goto out;
	}
	m->workspace_bytes = wf > wb ? wf : wb;
	m->measured = true;
	if (kf->type == KOP_CONV)
		rc = measure_algos(P, kf, kb->type == KOP_CONV ? kb : NULL, m);
out:
	unbind(P);
	free(kf);
	free(kb);
	return rc;
}

int exec_cuda_profile(const struct mp_net *net, const struct mp_prof_opts *o, struct mp_profile *out,
		      struct mp_error *err)
{
	struct pc P;
	cudaDeviceProp prop;
	char why[256];
	int rc;

	prof_init(out);
	memset(&P, 0, sizeof(P));
	P.net = net;
	P.o = o;
	P.out = out;
	P.err = err;
	if (o->iters < 1) {
		mp_error_set(err, "internal: bad profile options");
		return -1;
	}
	if ((rc = cuda_open_device(err, &prop)) != 0)
		return rc;
	rc = -1;
	snprintf(out->device, sizeof(out->device), "%s", prop.name);
	out->iters = o->iters;
	out->warmup = o->warmup;
	out->batches = o->batches;
	if (cu(&P, cudaStreamCreateWithFlags(&P.st, cudaStreamNonBlocking), "cudaStreamCreate") < 0)
		return -1;
	if (kern_lib_open(&P.L, P.st, why, sizeof(why)) < 0) {
		mp_error_set(err, "profile needs cuDNN and cuBLAS: %s", why);
		goto done;
	}
	P.ev = (cudaEvent_t *)mp_xcalloc((size_t)o->iters + 1, sizeof(*P.ev));
	for (uint32_t i = 0; i <= o->iters; i++)
		if (cu(&P, cudaEventCreate(&P.ev[i]), "cudaEventCreate") < 0)
			goto done;
	P.ms = (double *)mp_xcalloc(o->iters, sizeof(*P.ms));
	P.addr = (void **)mp_xcalloc(net->n_tensors ? net->n_tensors : 1, sizeof(*P.addr));
	P.bound = (int32_t *)mp_xcalloc(net->n_tensors ? net->n_tensors : 1, sizeof(*P.bound));
	out->layers = (struct mp_prof_layer *)mp_xcalloc(net->n_layers ? net->n_layers : 1, sizeof(*out->layers));
	for (uint32_t li = 0; li < net->n_layers; li++) {
		if (measure_layer(&P, li, &out->layers[li]) < 0) {
			char msg[sizeof(err->msg)];

			snprintf(msg, sizeof(msg), "%s", err->msg);
			mp_error_set(err, "layer '%s': %s", net->layers[li].name, msg);
			out->n_layers = li + 1;
			goto done;
		}
		out->n_layers = li + 1;
	}
	rc = 0;
done:
	unbind(&P);
	if (P.ws)
		cudaFree(P.ws);
	if (P.ev)
		for (uint32_t i = 0; i <= o->iters; i++)
			if (P.ev[i])
				cudaEventDestroy(P.ev[i]);
	free(P.ev);
	free(P.ms);
	free(P.addr);
	free(P.bound);
	kern_lib_close(P.L);
	cudaStreamDestroy(P.st);
	return rc;
}
