/*
 * kern_cuda: cuDNN and cuBLAS calls for ops with shapes (kern_cuda.h).
 * Compiled with warnings as errors; every call follows the cuDNN 9 and
 * cuBLAS 13 reference for its arguments, and runs in CI against the fake
 * libraries of tests/fakecuda, which check them (tests/unit/test_kern.cc).
 *
 * Layouts (verify/kop.h): x is [n, c, in_sp...], y is [n, k, out_sp...],
 * packed NCHW; tensors with fewer than two spatial dimensions get 1s (cuDNN
 * wants at least four dimensions); the weight of a conv is [k, c / groups,
 * kernel...], of an fc [k, c] (row-major, as PyTorch's Linear).  Bias, when
 * present, is [k].
 *
 * Calls by kop type, forward / backward (dx += when dx_accumulate):
 *   conv     ConvolutionForward (+ AddTensor bias) per micro-batch /
 *            ConvolutionBackwardData per micro-batch, BackwardFilter
 *            accumulating over micro-batches, BackwardBias
 *   fc       GemmEx y = x w^T (+ AddTensor bias) / GemmEx dx = dy w,
 *            dw = dy^T x, BackwardBias
 *   pool     PoolingForward / PoolingBackward
 *   act      ActivationForward / ActivationBackward (from y: relu, sigmoid,
 *            tanh and elu's derivatives are functions of the output)
 *   lrn      LRNCrossChannelForward / Backward (AlexNet's n 5, alpha 1e-4,
 *            beta 0.75, k 2)
 *   bn       BatchNormalizationForwardTraining (spatial, saved mean and
 *            inverse variance in stats, no running averages) / Backward
 *            (into a scratch dx when the input needs no gradient: cuDNN
 *            requires one)
 *   softmax  SoftmaxForward over c (accurate) / SoftmaxBackward
 *   dropout  DropoutForward, p 0.5, the mask tensor as reserve space /
 *            DropoutBackward
 *   add      AddTensor per input (beta 0 for the first) / AddTensor dy
 *            into each dx
 *   concat   TransformTensor into each channel slice of y (a strided
 *            descriptor) / from each slice of dy
 */
#include "kern_cuda.h"

#include <cublas_v2.h>
#include <cudnn.h>
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KERN_CUDNN(X)                                                                                  \
	X(cudnnCreate) X(cudnnDestroy) X(cudnnSetStream) X(cudnnGetErrorString) X(cudnnGetVersion)     \
	X(cudnnOpsVersionCheck) X(cudnnCnnVersionCheck)                                                \
	X(cudnnCreateTensorDescriptor) X(cudnnSetTensorNdDescriptor) X(cudnnDestroyTensorDescriptor)   \
	X(cudnnCreateFilterDescriptor) X(cudnnSetFilterNdDescriptor) X(cudnnDestroyFilterDescriptor)   \
	X(cudnnCreateConvolutionDescriptor) X(cudnnSetConvolutionNdDescriptor)                         \
	X(cudnnSetConvolutionGroupCount) X(cudnnSetConvolutionMathType)                                \
	X(cudnnDestroyConvolutionDescriptor) X(cudnnGetConvolutionForwardWorkspaceSize)                \
	X(cudnnGetConvolutionBackwardDataWorkspaceSize) X(cudnnGetConvolutionBackwardFilterWorkspaceSize) \
	X(cudnnGetConvolutionForwardAlgorithm_v7) X(cudnnGetConvolutionBackwardDataAlgorithm_v7)       \
	X(cudnnGetConvolutionBackwardFilterAlgorithm_v7) X(cudnnConvolutionForward)                    \
	X(cudnnConvolutionBackwardData) X(cudnnConvolutionBackwardFilter) X(cudnnConvolutionBackwardBias) \
	X(cudnnAddTensor) X(cudnnTransformTensor) X(cudnnCreatePoolingDescriptor)                      \
	X(cudnnSetPoolingNdDescriptor) X(cudnnDestroyPoolingDescriptor) X(cudnnPoolingForward)         \
	X(cudnnPoolingBackward) X(cudnnCreateActivationDescriptor) X(cudnnSetActivationDescriptor)     \
	X(cudnnDestroyActivationDescriptor) X(cudnnActivationForward) X(cudnnActivationBackward)       \
	X(cudnnCreateLRNDescriptor) X(cudnnSetLRNDescriptor) X(cudnnDestroyLRNDescriptor)              \
	X(cudnnLRNCrossChannelForward) X(cudnnLRNCrossChannelBackward) X(cudnnDeriveBNTensorDescriptor) \
	X(cudnnBatchNormalizationForwardTraining) X(cudnnBatchNormalizationBackward)                   \
	X(cudnnSoftmaxForward) X(cudnnSoftmaxBackward) X(cudnnCreateDropoutDescriptor)                 \
	X(cudnnDestroyDropoutDescriptor) X(cudnnDropoutGetStatesSize) X(cudnnDropoutGetReserveSpaceSize) \
	X(cudnnSetDropoutDescriptor) X(cudnnDropoutForward) X(cudnnDropoutBackward)

/* cublasGemmEx is overloaded in C++ (cublas_api.h adds a cudaDataType
 * computeType wrapper), so decltype cannot name it: it is loaded apart, with
 * the type of the function the library exports. */
#define KERN_CUBLAS(X) X(cublasCreate_v2) X(cublasDestroy_v2) X(cublasSetStream_v2) X(cublasGetProperty)
typedef cublasStatus_t (*gemm_ex_fn)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
				     const void *, const void *, cudaDataType, int, const void *, cudaDataType, int,
				     const void *, void *, cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t);

#define KERN_MAX_MB 32        /* distinct micro-batches of one conv */
#define KERN_SEED 0x6d656d706c616eull

struct kern_lib {
	void *dl_cudnn, *dl_cublas;
#define KERN_MEMBER(f) decltype(&::f) f;
	KERN_CUDNN(KERN_MEMBER)
	KERN_CUBLAS(KERN_MEMBER)
#undef KERN_MEMBER
	gemm_ex_fn cublasGemmEx;
	cudnnHandle_t dnn;
	cublasHandle_t blas;
	cudaStream_t st;
	void *drop_states;        /* one dropout state buffer for every dropout op */
	size_t drop_state_bytes;
	void *scratch_dy;         /* the dy of a backward whose layer ends the forward
				   * pass (kop.h: dy -1), shared, as large as the largest */
	size_t scratch_dy_bytes;
	void *scratch_dx;         /* the dx of a batch norm backward whose input needs
				   * no gradient (cuDNN writes one), shared likewise */
	size_t scratch_dx_bytes;
	char versions[96];
};

/* One micro-batch of a conv, or the whole op. */
struct kern_call {
	uint32_t batch, at;       /* samples, first sample */
	cudnnTensorDescriptor_t x, y;
	cudnnConvolutionFwdAlgo_t fwd;
	cudnnConvolutionBwdDataAlgo_t bwd_data;
	cudnnConvolutionBwdFilterAlgo_t bwd_filter;
	bool substituted;
};

struct kern {
	struct mp_kop k;
	cudnnDataType_t dt;
	cudaDataType_t blas_dt;
	uint32_t esize;
	uint64_t x_sample, y_sample;      /* elements per sample */
	uint32_t n_calls;
	struct kern_call call[KERN_MAX_MB];
	cudnnFilterDescriptor_t w;
	cudnnConvolutionDescriptor_t conv;
	cudnnTensorDescriptor_t bias;     /* [1, k, 1, 1...] */
	cudnnPoolingDescriptor_t pool;
	cudnnActivationDescriptor_t act;
	cudnnLRNDescriptor_t lrn;
	cudnnTensorDescriptor_t bn;       /* derived scale/bias/mean/var descriptor */
	cudnnDropoutDescriptor_t drop;
	size_t reserve_bytes;
	cudnnTensorDescriptor_t in[KOP_MAX_IN];    /* add, concat: each input */
	cudnnTensorDescriptor_t slice[KOP_MAX_IN]; /* concat: input i's channels of y */
	uint64_t slice_off[KOP_MAX_IN];            /* elements */
	uint64_t ws_used;
};

static void say(char *why, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void say(char *why, size_t n, const char *fmt, ...)
{
	va_list ap;

	if (!why || !n)
		return;
	va_start(ap, fmt);
	vsnprintf(why, n, fmt, ap);
	va_end(ap);
}

/* ---- loading ---- */

static void *open_first(const char *const *names, char *err, size_t n)
{
	for (const char *const *p = names; *p; p++) {
		void *h = dlopen(*p, RTLD_NOW | RTLD_LOCAL);

		if (h)
			return h;
		if (p == names) {
			const char *e = dlerror();

			say(err, n, "%s", e ? e : *p);
		}
	}
	return NULL;
}

int kern_lib_open(struct kern_lib **out, cudaStream_t st, char *why, size_t n)
{
	static const char *const cudnn_names[] = { "libcudnn.so.9", "libcudnn.so",
		"/usr/local/cuda/lib64/libcudnn.so.9", NULL };
	static const char *const cublas_names[] = { "libcublas.so.13", "libcublas.so.12", "libcublas.so",
		"/usr/local/cuda/lib64/libcublas.so.13", NULL };
	struct kern_lib *L = (struct kern_lib *)calloc(1, sizeof(*L));
	char e[200] = "";
	int major = 0, minor = 0, patch = 0;
	size_t v;

	*out = NULL;
	if (!L) {
		say(why, n, "out of memory");
		return -1;
	}
	L->st = st;
	if (!(L->dl_cudnn = open_first(cudnn_names, e, sizeof(e)))) {
		say(why, n, "cuDNN not found (%s)", e);
		goto fail;
	}
	if (!(L->dl_cublas = open_first(cublas_names, e, sizeof(e)))) {
		say(why, n, "cuBLAS not found (%s)", e);
		goto fail;
	}
#define KERN_LOAD(f)                                                               \
	if (!(L->f = reinterpret_cast<decltype(L->f)>(dlsym(L->dl_cudnn, #f)))) { \
		say(why, n, "cuDNN has no %s", #f);                                \
		goto fail;                                                         \
	}
	KERN_CUDNN(KERN_LOAD)
#undef KERN_LOAD
#define KERN_LOAD(f)                                                                \
	if (!(L->f = reinterpret_cast<decltype(L->f)>(dlsym(L->dl_cublas, #f)))) { \
		say(why, n, "cuBLAS has no %s", #f);                                \
		goto fail;                                                          \
	}
	KERN_CUBLAS(KERN_LOAD)
	KERN_LOAD(cublasGemmEx)
#undef KERN_LOAD
	if (L->cudnnCreate(&L->dnn) != CUDNN_STATUS_SUCCESS) {
		L->dnn = NULL;
		say(why, n, "cudnnCreate failed");
		goto fail;
	}
	if (L->cublasCreate_v2(&L->blas) != CUBLAS_STATUS_SUCCESS) {
		L->blas = NULL;
		say(why, n, "cublasCreate failed");
		goto fail;
	}
	if (L->cudnnSetStream(L->dnn, st) != CUDNN_STATUS_SUCCESS ||
	    L->cublasSetStream_v2(L->blas, st) != CUBLAS_STATUS_SUCCESS) {
		say(why, n, "cannot set the cuDNN or cuBLAS stream");
		goto fail;
	}
	v = L->cudnnGetVersion();
	if (v < 90000) {
		say(why, n, "cuDNN %zu.%zu found; memplan needs cuDNN 9", v / 1000, v / 100 % 10);
		goto fail;
	}
	/* the shim loads its sub-libraries lazily: a missing one would
	 * otherwise show only when the first kernel runs */
	if (L->cudnnOpsVersionCheck() != CUDNN_STATUS_SUCCESS || L->cudnnCnnVersionCheck() != CUDNN_STATUS_SUCCESS) {
		say(why, n, "cuDNN's ops or cnn sub-library (libcudnn_ops.so.9, libcudnn_cnn.so.9) does not load");
		goto fail;
	}
	L->cublasGetProperty(MAJOR_VERSION, &major);
	L->cublasGetProperty(MINOR_VERSION, &minor);
	L->cublasGetProperty(PATCH_LEVEL, &patch);
	snprintf(L->versions, sizeof(L->versions), "cuDNN %zu.%zu.%zu, cuBLAS %d.%d.%d", v / 10000,
		 v / 100 % 100, v % 100, major, minor, patch);
	*out = L;
	return 0;
fail:
	kern_lib_close(L);
	return -1;
}

void kern_lib_close(struct kern_lib *L)
{
	if (!L)
		return;
	if (L->drop_states)
		cudaFree(L->drop_states);
	if (L->scratch_dy)
		cudaFree(L->scratch_dy);
	if (L->scratch_dx)
		cudaFree(L->scratch_dx);
	if (L->blas)
		L->cublasDestroy_v2(L->blas);
	if (L->dnn)
		L->cudnnDestroy(L->dnn);
	if (L->dl_cublas)
		dlclose(L->dl_cublas);
	if (L->dl_cudnn)
		dlclose(L->dl_cudnn);
	free(L);
}

const char *kern_lib_versions(const struct kern_lib *L)
{
	return L->versions;
}

uint64_t kern_lib_bytes(const struct kern_lib *L)
{
	return L->drop_state_bytes + L->scratch_dy_bytes + L->scratch_dx_bytes;
}

/* ---- conv algorithm families ---- */

/* Deterministic backward algorithms (ALGO_1) where the family has none of
 * its own, so that a backward measured twice does the same work. */
static const struct kern_family families[] = {
	{ "implicit_gemm", CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, CUDNN_CONVOLUTION_BWD_DATA_ALGO_1,
	  CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1 },
	{ "implicit_precomp_gemm", CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM,
	  CUDNN_CONVOLUTION_BWD_DATA_ALGO_1, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1 },
	{ "gemm", CUDNN_CONVOLUTION_FWD_ALGO_GEMM, CUDNN_CONVOLUTION_BWD_DATA_ALGO_1,
	  CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1 },
	{ "fft", CUDNN_CONVOLUTION_FWD_ALGO_FFT, CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT,
	  CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT },
	{ "fft_tiling", CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING, CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING,
	  CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT_TILING },
	{ "winograd", CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD, CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD,
	  CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1 },
	{ "winograd_nonfused", CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED,
	  CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD_NONFUSED },
};

int kern_conv_family(const char *name, struct kern_family *out)
{
	for (size_t i = 0; name && i < sizeof(families) / sizeof(families[0]); i++)
		if (!strcmp(name, families[i].name)) {
			*out = families[i];
			return 0;
		}
	return -1;
}

const struct kern_family *kern_conv_families(uint32_t *n)
{
	*n = (uint32_t)(sizeof(families) / sizeof(families[0]));
	return families;
}

/* ---- descriptors ---- */

/* why = "cudnnAddTensor: STATUS" from the text of the call
 * "L->cudnnAddTensor(...)": the function's name, not its arguments, which
 * would fill a caller's buffer before the status. */
static void say_failed(char *why, size_t n, const char *call, const char *status)
{
	const char *f = strstr(call, "->"), *e;

	f = f ? f + 2 : call;
	e = strchr(f, '(');
	say(why, n, "%.*s: %s", (int)(e ? e - f : (long)strlen(f)), f, status);
}

#define DNN(call)                                                                             \
	do {                                                                                  \
		cudnnStatus_t s_ = (call);                                                    \
		if (s_ != CUDNN_STATUS_SUCCESS) {                                             \
			say_failed(why, n, #call, L->cudnnGetErrorString(s_));                \
			return -1;                                                            \
		}                                                                             \
	} while (0)

/* A packed NCHW descriptor: [n, c, sp[0..nsp)], padded to four dimensions;
 * strides cs for the channel dimension's stride (0: packed).  Returns the
 * descriptor in *d (created here). */
static int tensor_desc(struct kern_lib *L, cudnnDataType_t dt, uint32_t nn, uint32_t c, uint32_t nsp,
		       const uint32_t *sp, uint64_t sample_stride, cudnnTensorDescriptor_t *d, char *why, size_t n)
{
	int dims[5], str[5], nd = nsp <= 2 ? 4 : (int)nsp + 2;

	dims[0] = (int)nn;
	dims[1] = (int)c;
	for (int i = 2; i < nd; i++)
		dims[i] = 1;
	/* one spatial dimension goes last: [n, c, 1, L] */
	for (uint32_t i = 0; i < nsp; i++)
		dims[nd - (int)nsp + (int)i] = (int)sp[i];
	str[nd - 1] = 1;
	for (int i = nd - 2; i >= 0; i--)
		str[i] = str[i + 1] * dims[i + 1];
	if (sample_stride)
		str[0] = (int)sample_stride;
	DNN(L->cudnnCreateTensorDescriptor(d));
	DNN(L->cudnnSetTensorNdDescriptor(*d, dt, nd, dims, str));
	return 0;
}

static bool fits_int(const struct mp_kop *k)
{
	uint64_t xe = (uint64_t)k->n * k->c, ye = (uint64_t)k->n * k->k;

	for (uint32_t i = 0; i < k->nsp; i++) {
		xe *= k->in_sp[i];
		ye *= k->out_sp[i];
	}
	return xe < INT32_MAX && ye < INT32_MAX;
}

static int conv_desc(struct kern_lib *L, struct kern *K, char *why, size_t n)
{
	const struct mp_kop *k = &K->k;
	int nd = k->nsp <= 2 ? 2 : (int)k->nsp, pad[3] = { 0, 0, 0 }, str[3] = { 1, 1, 1 },
	    dil[3] = { 1, 1, 1 }, fd[5];

	fd[0] = (int)k->k;
	fd[1] = (int)(k->c / (k->groups ? k->groups : 1));
	fd[2] = fd[3] = fd[4] = 1;
	for (uint32_t i = 0; i < k->nsp; i++) {
		int at = nd - (int)k->nsp + (int)i;

		pad[at] = (int)k->pad[i];
		str[at] = (int)k->stride[i];
		dil[at] = (int)(k->dilation[i] ? k->dilation[i] : 1);
		fd[2 + at] = (int)k->kernel[i];
	}
	DNN(L->cudnnCreateFilterDescriptor(&K->w));
	DNN(L->cudnnSetFilterNdDescriptor(K->w, K->dt, CUDNN_TENSOR_NCHW, nd + 2, fd));
	DNN(L->cudnnCreateConvolutionDescriptor(&K->conv));
	DNN(L->cudnnSetConvolutionNdDescriptor(K->conv, nd, pad, str, dil, CUDNN_CROSS_CORRELATION,
					       CUDNN_DATA_FLOAT));
	if (k->groups > 1)
		DNN(L->cudnnSetConvolutionGroupCount(K->conv, (int)k->groups));
	DNN(L->cudnnSetConvolutionMathType(K->conv, K->dt == CUDNN_DATA_FLOAT ? CUDNN_DEFAULT_MATH
									      : CUDNN_TENSOR_OP_MATH));
	return 0;
}

/* The workspace a call's algorithms need in the op's phase. */
static size_t call_ws(struct kern_lib *L, const struct kern *K, const struct kern_call *c, bool *ok)
{
	size_t a = 0, b = 0;

	*ok = true;
	if (K->k.phase == MP_PHASE_FWD) {
		*ok = L->cudnnGetConvolutionForwardWorkspaceSize(L->dnn, c->x, K->w, K->conv, c->y, c->fwd, &a) ==
		      CUDNN_STATUS_SUCCESS;
		return a;
	}
	if (K->k.dx[0] >= 0)
		*ok = L->cudnnGetConvolutionBackwardDataWorkspaceSize(L->dnn, K->w, c->y, K->conv, c->x,
								      c->bwd_data, &a) == CUDNN_STATUS_SUCCESS;
	if (*ok && K->k.dw >= 0)
		*ok = L->cudnnGetConvolutionBackwardFilterWorkspaceSize(L->dnn, c->x, c->y, K->conv, K->w,
									c->bwd_filter, &b) == CUDNN_STATUS_SUCCESS;
	return a > b ? a : b;
}

/* The named family's algorithms if supported within ws, else cuDNN's
 * heuristic choices that fit, one per direction. */
static int choose_algos(struct kern_lib *L, struct kern *K, struct kern_call *c, const char *name,
			uint64_t ws, char *why, size_t n)
{
	struct kern_family f;
	bool ok;
	int got = 0;

	if (kern_conv_family(name, &f) == 0) {
		c->fwd = (cudnnConvolutionFwdAlgo_t)f.fwd;
		c->bwd_data = (cudnnConvolutionBwdDataAlgo_t)f.bwd_data;
		c->bwd_filter = (cudnnConvolutionBwdFilterAlgo_t)f.bwd_filter;
		if (call_ws(L, K, c, &ok) <= ws && ok)
			return 0;
	}
	c->substituted = name != NULL;
	if (K->k.phase == MP_PHASE_FWD) {
		cudnnConvolutionFwdAlgoPerf_t p[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];

		DNN(L->cudnnGetConvolutionForwardAlgorithm_v7(L->dnn, c->x, K->w, K->conv, c->y,
							       CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &got, p));
		for (int i = 0; i < got; i++) {
			if (p[i].status != CUDNN_STATUS_SUCCESS || p[i].memory > ws)
				continue;
			c->fwd = p[i].algo;
			if (call_ws(L, K, c, &ok) <= ws && ok)
				return 0;
		}
		say(why, n, "no cuDNN forward algorithm fits its %llu-byte workspace", (unsigned long long)ws);
		return -1;
	}
	{
		cudnnConvolutionBwdDataAlgoPerf_t pd[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
		cudnnConvolutionBwdFilterAlgoPerf_t pf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
		int gd = 0, gf = 0;

		DNN(L->cudnnGetConvolutionBackwardDataAlgorithm_v7(L->dnn, K->w, c->y, K->conv, c->x,
								    CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &gd, pd));
		DNN(L->cudnnGetConvolutionBackwardFilterAlgorithm_v7(L->dnn, c->x, c->y, K->conv, K->w,
								      CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &gf, pf));
		/* both run in the one workspace, one after the other */
		for (int i = 0; i < gd; i++) {
			if (pd[i].status != CUDNN_STATUS_SUCCESS || pd[i].memory > ws)
				continue;
			for (int j = 0; j < gf; j++) {
				if (pf[j].status != CUDNN_STATUS_SUCCESS || pf[j].memory > ws)
					continue;
				c->bwd_data = pd[i].algo;
				c->bwd_filter = pf[j].algo;
				if (call_ws(L, K, c, &ok) <= ws && ok)
					return 0;
			}
		}
		say(why, n, "no cuDNN backward algorithms fit its %llu-byte workspace", (unsigned long long)ws);
		return -1;
	}
}

static bool dtype_of(enum mp_dtype d, cudnnDataType_t *dt, cudaDataType_t *bt, uint32_t *es)
{
	switch (d) {
	case MP_DT_FLOAT32:
		*dt = CUDNN_DATA_FLOAT;
		*bt = CUDA_R_32F;
		*es = 4;
		return true;
	case MP_DT_FLOAT16:
		*dt = CUDNN_DATA_HALF;
		*bt = CUDA_R_16F;
		*es = 2;
		return true;
	case MP_DT_BFLOAT16:
		*dt = CUDNN_DATA_BFLOAT16;
		*bt = CUDA_R_16BF;
		*es = 2;
		return true;
	default:
		return false;
	}
}

/* *p holds at least need bytes (KERN_FILL_BYTE each: small finite values in every
 * type), shared by the ops that need one.  0, or -1 with why. */
static int scratch(void **p, size_t *have, size_t need, cudaStream_t st, char *why, size_t n)
{
	if (need <= *have)
		return 0;
	if (*p)
		cudaFree(*p);
	*p = NULL;
	*have = 0;
	/* on the kernels' stream: a non-blocking stream does not wait for
	 * the legacy default stream a plain cudaMemset would use */
	if (cudaMalloc(p, need) != cudaSuccess || cudaMemsetAsync(*p, KERN_FILL_BYTE, need, st) != cudaSuccess) {
		if (*p)
			cudaFree(*p);
		*p = NULL;
		cudaGetLastError();
		say(why, n, "cannot allocate a %zu-byte scratch gradient", need);
		return -1;
	}
	*have = need;
	return 0;
}

static int prepare_calls(struct kern_lib *L, struct kern *K, const struct kern_mb *mb, uint32_t n_mb,
			 uint64_t ws, char *why, size_t n)
{
	const struct mp_kop *k = &K->k;
	uint32_t at = 0;
	bool ok;

	for (uint32_t i = 0; i < n_mb; i++) {
		struct kern_call *c = &K->call[i];

		c->batch = mb[i].batch;
		c->at = at;
		at += mb[i].batch;
		K->n_calls = i + 1; /* before its descriptors: kern_free destroys them on failure */
		if (tensor_desc(L, K->dt, c->batch, k->c, k->nsp, k->in_sp, 0, &c->x, why, n) < 0 ||
		    tensor_desc(L, K->dt, c->batch, k->k, k->nsp, k->out_sp, 0, &c->y, why, n) < 0)
			return -1;
		if (k->type != KOP_CONV)
			continue;
		if (choose_algos(L, K, c, mb[i].algo, ws, why, n) < 0)
			return -1;
		size_t need = call_ws(L, K, c, &ok);
		if (!ok) {
			say(why, n, "cuDNN does not support this convolution's algorithms");
			return -1;
		}
		if (need > ws) { /* never run past the workspace the plan gave */
			say(why, n, "its algorithms need %zu bytes of workspace, the plan gives %llu", need,
			    (unsigned long long)ws);
			return -1;
		}
		if (need > K->ws_used)
			K->ws_used = need;
	}
	if (at != k->n) {
		say(why, n, "micro-batches of %u samples for a batch of %u", at, k->n);
		return -1;
	}
	return 0;
}

/* What no kernel here runs: a timed op, micro-batches but on a conv, too
 * many of them, dimensions past cuDNN's int.  0, or -1 with why. */
static int kern_refuse(const struct mp_kop *k, uint32_t n_mb, char *why, size_t n)
{
	if (k->type == KOP_TIMED || k->type >= KOP__COUNT) {
		say(why, n, "%s", k->why ? k->why : "no real kernel");
		return -1;
	}
	if (n_mb > 1 && k->type != KOP_CONV) {
		say(why, n, "micro-batches on a %s op", mp_kop_type_name(k->type));
		return -1;
	}
	if (n_mb > KERN_MAX_MB) {
		say(why, n, "more than %d micro-batches", KERN_MAX_MB);
		return -1;
	}
	if (!fits_int(k) || k->n_x > KOP_MAX_IN) {
		say(why, n, "too large for cuDNN's int dimensions");
		return -1;
	}
	return 0;
}

static int pool_desc(struct kern_lib *L, struct kern *K, char *why, size_t n)
{
	const struct mp_kop *k = &K->k;
	int nd = k->nsp <= 2 ? 2 : (int)k->nsp, win[3] = { 1, 1, 1 }, pad[3] = { 0, 0, 0 }, str[3] = { 1, 1, 1 };

	for (uint32_t i = 0; i < k->nsp; i++) {
		int at = nd - (int)k->nsp + (int)i;

		win[at] = (int)k->kernel[i];
		pad[at] = (int)k->pad[i];
		str[at] = (int)k->stride[i];
	}
	if (L->cudnnCreatePoolingDescriptor(&K->pool) != CUDNN_STATUS_SUCCESS ||
	    L->cudnnSetPoolingNdDescriptor(K->pool,
					   k->mode ? CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING
						   : CUDNN_POOLING_MAX,
					   CUDNN_NOT_PROPAGATE_NAN, nd, win, pad, str) != CUDNN_STATUS_SUCCESS) {
		say(why, n, "cuDNN refuses this pooling");
		return -1;
	}
	return 0;
}

static int act_desc(struct kern_lib *L, struct kern *K, char *why, size_t n)
{
	/* coef: ELU's alpha, the clipped relu's ceiling (ReLU6) */
	static const cudnnActivationMode_t modes[] = { CUDNN_ACTIVATION_RELU, CUDNN_ACTIVATION_SIGMOID,
						       CUDNN_ACTIVATION_TANH, CUDNN_ACTIVATION_ELU,
						       CUDNN_ACTIVATION_CLIPPED_RELU };

	if (K->k.mode >= 5 || L->cudnnCreateActivationDescriptor(&K->act) != CUDNN_STATUS_SUCCESS ||
	    L->cudnnSetActivationDescriptor(K->act, modes[K->k.mode], CUDNN_NOT_PROPAGATE_NAN,
					    K->k.mode == KOP_ACT_RELU6 ? 6.0 : 1.0) != CUDNN_STATUS_SUCCESS) {
		say(why, n, "cuDNN refuses this activation");
		return -1;
	}
	return 0;
}

static int lrn_desc(struct kern_lib *L, struct kern *K, char *why, size_t n)
{
	if (L->cudnnCreateLRNDescriptor(&K->lrn) != CUDNN_STATUS_SUCCESS ||
	    L->cudnnSetLRNDescriptor(K->lrn, 5, 1e-4, 0.75, 2.0) != CUDNN_STATUS_SUCCESS) {
		say(why, n, "cuDNN refuses this LRN");
		return -1;
	}
	return 0;
}

/* Scale, bias, mean and variance are float32 for every x dtype. */
static int bn_desc(struct kern_lib *L, struct kern *K, char *why, size_t n)
{
	if (K->k.dtype != MP_DT_FLOAT32) {
		say(why, n, "bn parameters in %s (cuDNN wants float32)", mp_dtype_name(K->k.dtype));
		return -1;
	}
	if (L->cudnnCreateTensorDescriptor(&K->bn) != CUDNN_STATUS_SUCCESS ||
	    L->cudnnDeriveBNTensorDescriptor(K->bn, K->call[0].x, CUDNN_BATCHNORM_SPATIAL) !=
		    CUDNN_STATUS_SUCCESS) {
		say(why, n, "cuDNN refuses this batch norm");
		return -1;
	}
	return 0;
}

/* The dropout's reserve space must fit in its mask; the states (one set
 * per library handle) are allocated on first use. */
static int dropout_desc(struct kern_lib *L, const struct mp_net *net, struct kern *K, char *why, size_t n)
{
	const struct mp_kop *k = &K->k;
	uint64_t have = k->mask >= 0 ? net->tensors[k->mask].bytes : 0;

	if (L->cudnnDropoutGetReserveSpaceSize(K->call[0].x, &K->reserve_bytes) != CUDNN_STATUS_SUCCESS) {
		say(why, n, "cuDNN refuses this dropout");
		return -1;
	}
	if (K->reserve_bytes > have) {
		say(why, n, "cuDNN's dropout reserve space is %zu bytes, its mask %llu", K->reserve_bytes,
		    (unsigned long long)have);
		return -1;
	}
	if (!L->drop_states) {
		if (L->cudnnDropoutGetStatesSize(L->dnn, &L->drop_state_bytes) != CUDNN_STATUS_SUCCESS ||
		    cudaMalloc(&L->drop_states, L->drop_state_bytes) != cudaSuccess) {
			L->drop_states = NULL;
			L->drop_state_bytes = 0;
			say(why, n, "cannot allocate cuDNN's dropout states");
			return -1;
		}
	}
	if (L->cudnnCreateDropoutDescriptor(&K->drop) != CUDNN_STATUS_SUCCESS ||
	    L->cudnnSetDropoutDescriptor(K->drop, L->dnn, 0.5f, L->drop_states, L->drop_state_bytes,
					 KERN_SEED) != CUDNN_STATUS_SUCCESS) {
		say(why, n, "cuDNN refuses this dropout");
		return -1;
	}
	return 0;
}

/* An add's or a concat's inputs; a concat's also as slices of y: input i's
 * channels, its own shape with y's sample stride. */
static int inputs_desc(struct kern_lib *L, struct kern *K, char *why, size_t n)
{
	const struct mp_kop *k = &K->k;
	uint64_t off = 0;

	for (uint32_t i = 0; i < k->n_x; i++) {
		uint32_t ci = k->type == KOP_ADD ? k->k : k->x_c[i];

		if (tensor_desc(L, K->dt, k->n, ci, k->nsp, k->out_sp, 0, &K->in[i], why, n) < 0)
			return -1;
		if (k->type == KOP_CONCAT) {
			if (tensor_desc(L, K->dt, k->n, ci, k->nsp, k->out_sp, K->y_sample, &K->slice[i], why,
					n) < 0)
				return -1;
			K->slice_off[i] = off;
			off += K->y_sample / k->k * ci;
		}
	}
	return 0;
}

/* The descriptors of K's op type beyond its calls' x and y. */
static int type_desc(struct kern_lib *L, const struct mp_net *net, struct kern *K, char *why, size_t n)
{
	switch (K->k.type) {
	case KOP_POOL:
		return pool_desc(L, K, why, n);
	case KOP_ACT:
		return act_desc(L, K, why, n);
	case KOP_LRN:
		return lrn_desc(L, K, why, n);
	case KOP_BN:
		return bn_desc(L, K, why, n);
	case KOP_DROPOUT:
		return dropout_desc(L, net, K, why, n);
	case KOP_ADD:
	case KOP_CONCAT:
		return inputs_desc(L, K, why, n);
	default:
		return 0;
	}
}

/* The scratch gradients an op needs where the plan has none.  No gradient
 * reaches a layer that ends the forward pass: its backward reads a scratch
 * dy (small finite values).  A batch norm whose input needs no gradient (it
 * follows the data) still has cuDNN compute one, which no tensor of the
 * plan holds. */
static int scratch_grads(struct kern_lib *L, const struct kern *K, char *why, size_t n)
{
	const struct mp_kop *k = &K->k;

	if (k->phase == MP_PHASE_BWD && k->dy < 0 &&
	    scratch(&L->scratch_dy, &L->scratch_dy_bytes, (size_t)k->n * K->y_sample * K->esize, L->st, why, n) < 0)
		return -1;
	if (k->type == KOP_BN && k->phase == MP_PHASE_BWD && k->dx[0] < 0 &&
	    scratch(&L->scratch_dx, &L->scratch_dx_bytes, (size_t)k->n * K->x_sample * K->esize, L->st, why, n) < 0)
		return -1;
	return 0;
}

int kern_prepare(struct kern_lib *L, const struct mp_net *net, const struct mp_kop *kop,
		 const struct kern_mb *mb, uint32_t n_mb, uint64_t ws_bytes, struct kern **out,
		 char *why, size_t n)
{
	struct kern *K;
	const struct mp_kop *k = kop;

	*out = NULL;
	if (kern_refuse(k, n_mb, why, n) < 0)
		return -1;
	K = (struct kern *)calloc(1, sizeof(*K));
	if (!K) {
		say(why, n, "out of memory");
		return -1;
	}
	K->k = *k;
	if (!dtype_of(k->dtype, &K->dt, &K->blas_dt, &K->esize)) {
		say(why, n, "dtype %s has no cuDNN kernel here", mp_dtype_name(k->dtype));
		goto fail;
	}
	K->x_sample = k->c;
	K->y_sample = k->k;
	for (uint32_t i = 0; i < k->nsp; i++) {
		K->x_sample *= k->in_sp[i];
		K->y_sample *= k->out_sp[i];
	}
	if (k->type == KOP_CONV && conv_desc(L, K, why, n) < 0)
		goto fail;
	if (scratch_grads(L, K, why, n) < 0)
		goto fail;
	if (prepare_calls(L, K, mb, n_mb, ws_bytes, why, n) < 0)
		goto fail;
	/* the bias: read by the forward, its gradient written by the backward
	 * (whose kop has no b: the backward does not read the bias) */
	if ((k->b >= 0 || k->db >= 0) && (k->type == KOP_CONV || k->type == KOP_FC)) {
		uint32_t ones[3] = { 1, 1, 1 };

		if (tensor_desc(L, K->dt, 1, k->k, k->type == KOP_FC ? 0 : k->nsp, ones, 0, &K->bias, why, n) < 0)
			goto fail;
	}
	if (type_desc(L, net, K, why, n) < 0)
		goto fail;
	*out = K;
	return 0;
fail:
	kern_free(L, K);
	return -1;
}

void kern_free(struct kern_lib *L, struct kern *K)
{
	if (!K)
		return;
	for (uint32_t i = 0; i < K->n_calls; i++) {
		if (K->call[i].x)
			L->cudnnDestroyTensorDescriptor(K->call[i].x);
		if (K->call[i].y)
			L->cudnnDestroyTensorDescriptor(K->call[i].y);
	}
	for (uint32_t i = 0; i < KOP_MAX_IN; i++) {
		if (K->in[i])
			L->cudnnDestroyTensorDescriptor(K->in[i]);
		if (K->slice[i])
			L->cudnnDestroyTensorDescriptor(K->slice[i]);
	}
	if (K->w)
		L->cudnnDestroyFilterDescriptor(K->w);
	if (K->conv)
		L->cudnnDestroyConvolutionDescriptor(K->conv);
	if (K->bias)
		L->cudnnDestroyTensorDescriptor(K->bias);
	if (K->pool)
		L->cudnnDestroyPoolingDescriptor(K->pool);
	if (K->act)
		L->cudnnDestroyActivationDescriptor(K->act);
	if (K->lrn)
		L->cudnnDestroyLRNDescriptor(K->lrn);
	if (K->bn)
		L->cudnnDestroyTensorDescriptor(K->bn);
	if (K->drop)
		L->cudnnDestroyDropoutDescriptor(K->drop);
	free(K);
}

bool kern_algo_substituted(const struct kern *K)
{
	for (uint32_t i = 0; i < K->n_calls; i++)
		if (K->call[i].substituted)
			return true;
	return false;
}

bool kern_deterministic(const struct kern *K)
{
	return K->k.type != KOP_DROPOUT;
}

bool kern_same_run(const struct kern *A, const struct kern *B)
{
	if (!A || !B)
		return A == B;
	if (A->k.type != B->k.type || A->n_calls != B->n_calls || !kern_deterministic(A))
		return false;
	for (uint32_t i = 0; i < A->n_calls; i++) {
		const struct kern_call *a = &A->call[i], *b = &B->call[i];

		/* a recompute is a forward: its algorithm is the one that runs */
		if (a->batch != b->batch || (A->k.type == KOP_CONV && a->fwd != b->fwd))
			return false;
	}
	return true;
}

uint64_t kern_ws_bytes(const struct kern *K)
{
	return K->ws_used;
}

/* ---- running ---- */

#define BLAS(call)                                                              \
	do {                                                                    \
		cublasStatus_t s_ = (call);                                     \
		if (s_ != CUBLAS_STATUS_SUCCESS) {                              \
			char st_[32];                                           \
                                                                                \
			snprintf(st_, sizeof(st_), "cuBLAS status %d", (int)s_); \
			say_failed(why, n, #call, st_);                         \
			return -1;                                              \
		}                                                               \
	} while (0)

/* Address of tensor t, or NULL for -1. */
static void *at(kern_addr_fn addr, void *ctx, int32_t t)
{
	return t >= 0 ? addr(ctx, t) : NULL;
}

/* The output gradient a backward reads: its tensor, or the scratch one. */
static void *dy_of(const struct kern_lib *L, const struct kern *K, kern_addr_fn addr, void *ctx)
{
	return K->k.dy >= 0 ? addr(ctx, K->k.dy) : L->scratch_dy;
}

static char *plus(void *p, uint64_t elems, uint32_t esize)
{
	return (char *)p + elems * esize;
}

static int run_conv(struct kern_lib *L, const struct kern *K, kern_addr_fn addr, void *ctx, void *ws,
		    char *why, size_t n)
{
	const struct mp_kop *k = &K->k;
	const float one = 1, zero = 0;
	void *x = at(addr, ctx, k->x[0]), *w = at(addr, ctx, k->w);

	if (k->phase == MP_PHASE_FWD) {
		void *y = at(addr, ctx, k->y);

		for (uint32_t i = 0; i < K->n_calls; i++) {
			const struct kern_call *c = &K->call[i];
			char *yi = plus(y, c->at * K->y_sample, K->esize);

			DNN(L->cudnnConvolutionForward(L->dnn, &one, c->x, plus(x, c->at * K->x_sample, K->esize),
						       K->w, w, K->conv, c->fwd, ws, K->ws_used, &zero, c->y, yi));
			/* the bias over this micro-batch's samples: c->y covers
			 * only them */
			if (K->bias)
				DNN(L->cudnnAddTensor(L->dnn, &one, K->bias, at(addr, ctx, k->b), &one, c->y, yi));
		}
		return 0;
	}
	{
		void *dy = dy_of(L, K, addr, ctx), *dx = at(addr, ctx, k->dx[0]), *dw = at(addr, ctx, k->dw);

		for (uint32_t i = 0; i < K->n_calls; i++) {
			const struct kern_call *c = &K->call[i];
			const float *bx = k->dx_accumulate[0] ? &one : &zero;
			const float *bw = i > 0 ? &one : &zero; /* filter gradients add up over micro-batches */
			char *dyi = plus(dy, c->at * K->y_sample, K->esize);

			if (dx)
				DNN(L->cudnnConvolutionBackwardData(L->dnn, &one, K->w, w, c->y, dyi, K->conv,
								    c->bwd_data, ws, K->ws_used, bx, c->x,
								    plus(dx, c->at * K->x_sample, K->esize)));
			if (dw)
				DNN(L->cudnnConvolutionBackwardFilter(L->dnn, &one, c->x,
								      plus(x, c->at * K->x_sample, K->esize), c->y,
								      dyi, K->conv, c->bwd_filter, ws, K->ws_used,
								      bw, K->w, dw));
		}
		if (K->bias && k->db >= 0) {
			/* the whole batch: one descriptor pair covers it only when
			 * there is one call; otherwise sum per micro-batch */
			for (uint32_t i = 0; i < K->n_calls; i++) {
				const struct kern_call *c = &K->call[i];

				DNN(L->cudnnConvolutionBackwardBias(L->dnn, &one, c->y,
								    plus(dy, c->at * K->y_sample, K->esize),
								    i > 0 ? &one : &zero, K->bias,
								    at(addr, ctx, k->db)));
			}
		}
		return 0;
	}
}

/* Row-major y[N, K] = x[N, C] w[K, C]^T, as column-major GEMMs (see the
 * derivations beside each call). */
static int run_fc(struct kern_lib *L, const struct kern *K, kern_addr_fn addr, void *ctx, char *why, size_t n)
{
	const struct mp_kop *k = &K->k;
	const float one = 1, zero = 0;
	const int N = (int)k->n, C = (int)K->x_sample, M = (int)K->y_sample;
	void *x = at(addr, ctx, k->x[0]), *w = at(addr, ctx, k->w);

	if (k->phase == MP_PHASE_FWD) {
		void *y = at(addr, ctx, k->y);

		/* y^T (M x N) = w (M x C, i.e. w^T column-major, transposed) . x^T (C x N) */
		BLAS(L->cublasGemmEx(L->blas, CUBLAS_OP_T, CUBLAS_OP_N, M, N, C, &one, w, K->blas_dt, C, x,
				     K->blas_dt, C, &zero, y, K->blas_dt, M, CUBLAS_COMPUTE_32F,
				     CUBLAS_GEMM_DEFAULT));
		if (K->bias)
			DNN(L->cudnnAddTensor(L->dnn, &one, K->bias, at(addr, ctx, k->b), &one, K->call[0].y, y));
		return 0;
	}
	{
		void *dy = dy_of(L, K, addr, ctx), *dx = at(addr, ctx, k->dx[0]), *dw = at(addr, ctx, k->dw);

		/* dx^T (C x N) = w^T (C x M, column-major as stored) . dy^T (M x N) */
		if (dx)
			BLAS(L->cublasGemmEx(L->blas, CUBLAS_OP_N, CUBLAS_OP_N, C, N, M, &one, w, K->blas_dt, C, dy,
					     K->blas_dt, M, k->dx_accumulate[0] ? &one : &zero, dx, K->blas_dt, C,
					     CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
		/* dw^T (C x M) = x^T (C x N) . dy (N x M) */
		if (dw)
			BLAS(L->cublasGemmEx(L->blas, CUBLAS_OP_N, CUBLAS_OP_T, C, M, N, &one, x, K->blas_dt, C, dy,
					     K->blas_dt, M, &zero, dw, K->blas_dt, C, CUBLAS_COMPUTE_32F,
					     CUBLAS_GEMM_DEFAULT));
		if (K->bias && k->db >= 0)
			DNN(L->cudnnConvolutionBackwardBias(L->dnn, &one, K->call[0].y, dy, &zero, K->bias,
							    at(addr, ctx, k->db)));
		return 0;
	}
}

int kern_run(struct kern_lib *L, const struct kern *K, kern_addr_fn addr, void *ctx, void *ws, char *why,
	     size_t n)
{
	const struct mp_kop *k = &K->k;
	const float one = 1, zero = 0;
	const bool fwd = k->phase == MP_PHASE_FWD;
	const cudnnTensorDescriptor_t xd = K->call[0].x, yd = K->call[0].y;
	void *x = at(addr, ctx, k->x[0]), *y = at(addr, ctx, k->y), *dy = fwd ? NULL : dy_of(L, K, addr, ctx),
	     *dx = at(addr, ctx, k->dx[0]);
	const float *bx = k->dx_accumulate[0] ? &one : &zero;

	switch (k->type) {
	case KOP_CONV:
		return run_conv(L, K, addr, ctx, ws, why, n);
	case KOP_FC:
		return run_fc(L, K, addr, ctx, why, n);
	case KOP_POOL:
		if (fwd)
			DNN(L->cudnnPoolingForward(L->dnn, K->pool, &one, xd, x, &zero, yd, y));
		else if (dx) /* average pooling saves neither: dy and dx stand in (same shapes) */
			DNN(L->cudnnPoolingBackward(L->dnn, K->pool, &one, yd, y ? y : dy, yd, dy, xd, x ? x : dx,
						    bx, xd, dx));
		return 0;
	case KOP_ACT:
		if (fwd)
			DNN(L->cudnnActivationForward(L->dnn, K->act, &one, xd, x, &zero, yd, y));
		else if (dx) /* y stands in for x: the derivative is a function of y */
			DNN(L->cudnnActivationBackward(L->dnn, K->act, &one, yd, y, yd, dy, yd, y, bx, xd, dx));
		return 0;
	case KOP_LRN:
		if (fwd)
			DNN(L->cudnnLRNCrossChannelForward(L->dnn, K->lrn, CUDNN_LRN_CROSS_CHANNEL_DIM1, &one, xd, x,
							   &zero, yd, y));
		else if (dx)
			DNN(L->cudnnLRNCrossChannelBackward(L->dnn, K->lrn, CUDNN_LRN_CROSS_CHANNEL_DIM1, &one, yd, y,
							    yd, dy, xd, x, bx, xd, dx));
		return 0;
	case KOP_BN: {
		char *st = (char *)at(addr, ctx, k->stats);
		char *inv = st ? st + (size_t)k->k * sizeof(float) : NULL;

		if (fwd)
			DNN(L->cudnnBatchNormalizationForwardTraining(L->dnn, CUDNN_BATCHNORM_SPATIAL, &one, &zero,
								      xd, x, yd, y, K->bn, at(addr, ctx, k->w),
								      at(addr, ctx, k->b), 0.1, NULL, NULL,
								      CUDNN_BN_MIN_EPSILON > 1e-5
									      ? CUDNN_BN_MIN_EPSILON
									      : 1e-5,
								      st, inv));
		else
			DNN(L->cudnnBatchNormalizationBackward(L->dnn, CUDNN_BATCHNORM_SPATIAL, &one, bx, &one, &zero,
							       xd, x, yd, dy, xd, dx ? dx : L->scratch_dx, K->bn,
							       at(addr, ctx, k->w),
							       at(addr, ctx, k->dw), at(addr, ctx, k->db),
							       CUDNN_BN_MIN_EPSILON > 1e-5 ? CUDNN_BN_MIN_EPSILON
											   : 1e-5,
							       st, inv));
		return 0;
	}
	case KOP_SOFTMAX:
		if (fwd)
			DNN(L->cudnnSoftmaxForward(L->dnn, CUDNN_SOFTMAX_ACCURATE, CUDNN_SOFTMAX_MODE_CHANNEL, &one, xd,
						   x, &zero, yd, y));
		else if (dx)
			DNN(L->cudnnSoftmaxBackward(L->dnn, CUDNN_SOFTMAX_ACCURATE, CUDNN_SOFTMAX_MODE_CHANNEL, &one,
						    yd, y, yd, dy, bx, xd, dx));
		return 0;
	case KOP_DROPOUT:
		if (fwd)
			DNN(L->cudnnDropoutForward(L->dnn, K->drop, xd, x, yd, y, at(addr, ctx, k->mask),
						   K->reserve_bytes));
		else if (dx)
			DNN(L->cudnnDropoutBackward(L->dnn, K->drop, yd, dy, xd, dx, at(addr, ctx, k->mask),
						    K->reserve_bytes));
		return 0;
	case KOP_ADD:
		for (uint32_t i = 0; i < k->n_x; i++) {
			if (fwd) {
				DNN(L->cudnnAddTensor(L->dnn, &one, K->in[i], at(addr, ctx, k->x[i]), i ? &one : &zero,
						      yd, y));
			} else if (k->dx[i] >= 0) {
				DNN(L->cudnnAddTensor(L->dnn, &one, yd, dy, k->dx_accumulate[i] ? &one : &zero, K->in[i],
						      at(addr, ctx, k->dx[i])));
			}
		}
		return 0;
	case KOP_CONCAT:
		for (uint32_t i = 0; i < k->n_x; i++) {
			if (fwd) {
				DNN(L->cudnnTransformTensor(L->dnn, &one, K->in[i], at(addr, ctx, k->x[i]), &zero,
							    K->slice[i], plus(y, K->slice_off[i], K->esize)));
			} else if (k->dx[i] >= 0) {
				DNN(L->cudnnTransformTensor(L->dnn, &one, K->slice[i],
							    plus(dy, K->slice_off[i], K->esize),
							    k->dx_accumulate[i] ? &one : &zero, K->in[i],
							    at(addr, ctx, k->dx[i])));
			}
		}
		return 0;
	default:
		say(why, n, "no real kernel");
		return -1;
	}
}
