/*
 * fake_cudnn: every cuDNN 9 function verify/kern_cuda.cu loads (its
 * KERN_CUDNN list), built as libcudnn.so.9 for tests/unit/test_kern.cc
 * (fakecuda.h).  Descriptors are structs holding what was set; each compute
 * call checks its descriptors and pointers as the cuDNN 9 API reference
 * states the requirements:
 *
 *   convolution  output dims = the forward formula from x, the filter, pad,
 *                stride, dilation; C = filter C x groups, K % groups = 0;
 *                one data type; a supported algorithm; the workspace at
 *                least what Get*WorkspaceSize says for that algorithm
 *   pooling      output dims from window, pad and stride (floor)
 *   bn           scale/bias/mean/variance descriptor = the derived [1,C,1,1]
 *   dropout      reserve space at least GetReserveSpaceSize's
 *   add          each A dimension equal to C's or 1; transform: same dims
 *   everything   descriptors live and set, x/y/dx/dy dims as the call
 *                requires, every pointer's extent inside one allocation,
 *                outputs overlapping no input except where cuDNN allows in
 *                place (activation), alpha and beta given
 *
 * Workspace sizes and support are invented but shaped like cuDNN's: implicit
 * GEMM and the backward ALGO_0s need none; precomputed GEMM, GEMM, the
 * backward ALGO_1s and ALGO_3 a little or some, growing with the batch; FFT,
 * FFT tiling and the Winograds much, and only for stride 1, dilation 1, one
 * group and (Winograd) 3x3 or 5x5 filters; DIRECT and backward-filter
 * WINOGRAD never.  The _v7 heuristics list a workspace-hungry algorithm
 * first, as cuDNN's often do.  Values are computed only by cudnnAddTensor,
 * cudnnTransformTensor and cudnnConvolutionBackwardBias in float32, when
 * the test asks (fk_values).
 */
#include "fakecuda.h"

#include <cudnn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

__attribute__((constructor)) static void loaded(void)
{
	fk_loaded_mark(1);
}

/* ---- objects ---- */

enum { M_HANDLE = 0x48414e44, M_TENSOR = 0x54454e53, M_FILTER = 0x46494c54, M_CONV = 0x434f4e56,
       M_POOL = 0x504f4f4c, M_ACT = 0x41435456, M_LRN = 0x4c524e44, M_DROP = 0x44524f50 };

struct hdr {
	uint32_t magic;
	bool live, set;
};

struct cudnnContext {
	struct hdr h;
	cudaStream_t stream;
};

struct cudnnTensorStruct {
	struct hdr h;
	cudnnDataType_t dt;
	int nd;
	int dim[CUDNN_DIM_MAX], str[CUDNN_DIM_MAX];
};

struct cudnnFilterStruct {
	struct hdr h;
	cudnnDataType_t dt;
	cudnnTensorFormat_t format;
	int nd;
	int dim[CUDNN_DIM_MAX];
};

struct cudnnConvolutionStruct {
	struct hdr h;
	int n; /* spatial dimensions */
	int pad[CUDNN_DIM_MAX], stride[CUDNN_DIM_MAX], dil[CUDNN_DIM_MAX];
	cudnnConvolutionMode_t mode;
	cudnnDataType_t compute;
	int groups;
	cudnnMathType_t math;
};

struct cudnnPoolingStruct {
	struct hdr h;
	cudnnPoolingMode_t mode;
	int n;
	int win[CUDNN_DIM_MAX], pad[CUDNN_DIM_MAX], stride[CUDNN_DIM_MAX];
};

struct cudnnActivationStruct {
	struct hdr h;
	cudnnActivationMode_t mode;
	double coef;
};

struct cudnnLRNStruct {
	struct hdr h;
	unsigned n;
	double alpha, beta, k;
};

struct cudnnDropoutStruct {
	struct hdr h;
	float p;
	void *states;
	size_t state_bytes;
};

/* Destroyed objects stay readable for a while, marked dead, so that a use
 * after destroy is reported rather than undefined. */
#define GRAVE 16384
static void *grave[GRAVE];
static unsigned grave_at;

static void bury(void *p)
{
	free(grave[grave_at]);
	grave[grave_at] = p;
	grave_at = (grave_at + 1) % GRAVE;
}

__attribute__((destructor)) static void unloaded(void)
{
	for (unsigned i = 0; i < GRAVE; i++) {
		free(grave[i]);
		grave[i] = NULL;
	}
}

static void *obj_new(size_t size, uint32_t magic, enum fk_obj k)
{
	struct hdr *h = (struct hdr *)calloc(1, size);

	if (!h)
		return NULL;
	h->magic = magic;
	h->live = true;
	fk_obj_new(k);
	return h;
}

static cudnnStatus_t obj_destroy(const char *fn, void *p, uint32_t magic, enum fk_obj k)
{
	struct hdr *h = (struct hdr *)p;

	if (!h) /* cuDNN accepts NULL here */
		return CUDNN_STATUS_SUCCESS;
	if (h->magic != magic || !h->live) {
		fk_violation(fn, "%s a %s", h->magic == magic ? "destroys again" : "is not", fk_obj_name(k));
		return CUDNN_STATUS_BAD_PARAM;
	}
	h->live = false;
	fk_obj_gone(k);
	bury(h);
	return CUDNN_STATUS_SUCCESS;
}

/* Is p a live object of this kind (and set, when must_set)?  Reports in
 * the current call when not. */
static bool obj_ok(const void *p, uint32_t magic, enum fk_obj k, const char *arg, bool must_set)
{
	const struct hdr *h = (const struct hdr *)p;

	if (!h) {
		fk_fail("%s: NULL %s", arg, fk_obj_name(k));
		return false;
	}
	if (h->magic != magic) {
		fk_fail("%s: not a %s", arg, fk_obj_name(k));
		return false;
	}
	if (!h->live) {
		fk_fail("%s: a destroyed %s", arg, fk_obj_name(k));
		return false;
	}
	if (must_set && !h->set) {
		fk_fail("%s: a %s never set", arg, fk_obj_name(k));
		return false;
	}
	return true;
}

#define FAIL_IF(cond, status) \
	do { \
		if (cond) { \
			st = (status); \
			goto out; \
		} \
	} while (0)

#define OK_T(d, arg) obj_ok(d, M_TENSOR, FK_OBJ_TENSOR, arg, true)

static size_t esize(cudnnDataType_t dt)
{
	switch (dt) {
	case CUDNN_DATA_FLOAT: case CUDNN_DATA_INT32: case CUDNN_DATA_INT8x4: case CUDNN_DATA_UINT8x4: return 4;
	case CUDNN_DATA_DOUBLE: case CUDNN_DATA_INT64: return 8;
	case CUDNN_DATA_HALF: case CUDNN_DATA_BFLOAT16: return 2;
	case CUDNN_DATA_INT8: case CUDNN_DATA_UINT8: case CUDNN_DATA_BOOLEAN:
	case CUDNN_DATA_FP8_E4M3: case CUDNN_DATA_FP8_E5M2: return 1;
	case CUDNN_DATA_INT8x32: return 32;
	default: return 0;
	}
}

static struct fk_layout tlayout(const struct cudnnTensorStruct *t)
{
	struct fk_layout l;

	memset(&l, 0, sizeof(l));
	l.nd = t->nd;
	for (int i = 0; i < t->nd; i++) {
		l.dim[i] = t->dim[i];
		l.str[i] = t->str[i];
	}
	l.esize = (uint32_t)esize(t->dt);
	return l;
}

/* A filter is packed in its dimension order. */
static struct fk_layout flayout(const struct cudnnFilterStruct *f)
{
	struct fk_layout l;
	int64_t s = 1;

	memset(&l, 0, sizeof(l));
	l.nd = f->nd;
	for (int i = f->nd - 1; i >= 0; i--) {
		l.dim[i] = f->dim[i];
		l.str[i] = s;
		s *= f->dim[i];
	}
	l.esize = (uint32_t)esize(f->dt);
	return l;
}

static const char *dims_str(const int *d, int n, char *buf, size_t cap)
{
	size_t at = 0;

	buf[0] = 0;
	for (int i = 0; i < n && at + 16 < cap; i++)
		at += (size_t)snprintf(buf + at, cap - at, "%s%d", i ? "," : "[", d[i]);
	snprintf(buf + at, cap - at, "]");
	return buf;
}

static bool same_dims(const struct cudnnTensorStruct *a, const struct cudnnTensorStruct *b)
{
	return a->nd == b->nd && !memcmp(a->dim, b->dim, (size_t)a->nd * sizeof(int));
}

/* Two tensors of the call must have the same dims (and data type). */
static bool need_same(const char *an, const struct cudnnTensorStruct *a, const char *bn,
		      const struct cudnnTensorStruct *b)
{
	char s1[128], s2[128];

	if (!same_dims(a, b)) {
		fk_fail("%s %s and %s %s differ", an, dims_str(a->dim, a->nd, s1, sizeof(s1)), bn,
			dims_str(b->dim, b->nd, s2, sizeof(s2)));
		return false;
	}
	if (a->dt != b->dt) {
		fk_fail("%s and %s have different data types (%d, %d)", an, bn, (int)a->dt, (int)b->dt);
		return false;
	}
	return true;
}

/* alpha and beta are host floats for float, half and bfloat16 data;
 * *b_nonzero says whether the output is read. */
static bool scalars(const void *alpha, const char *an, const void *beta, const char *bn, bool *b_nonzero)
{
	bool ok = true;

	if (!alpha) {
		fk_fail("%s is NULL", an);
		ok = false;
	} else if (!isfinite(*(const float *)alpha)) {
		fk_fail("%s is not finite", an);
		ok = false;
	}
	if (!beta) {
		fk_fail("%s is NULL", bn);
		ok = false;
	} else if (!isfinite(*(const float *)beta)) {
		fk_fail("%s is not finite", bn);
		ok = false;
	}
	*b_nonzero = beta && *(const float *)beta != 0;
	return ok;
}

static bool handle_ok(cudnnHandle_t h)
{
	bool ok = obj_ok(h, M_HANDLE, FK_OBJ_CUDNN, "handle", false);

	if (ok)
		fk_call_stream(h->stream);
	return ok;
}

/* ---- context ---- */

cudnnStatus_t cudnnCreate(cudnnHandle_t *handle)
{
	if (!handle)
		return CUDNN_STATUS_BAD_PARAM;
	if (fk_inject())
		return CUDNN_STATUS_ALLOC_FAILED;
	*handle = (cudnnHandle_t)obj_new(sizeof(struct cudnnContext), M_HANDLE, FK_OBJ_CUDNN);
	return *handle ? CUDNN_STATUS_SUCCESS : CUDNN_STATUS_ALLOC_FAILED;
}

cudnnStatus_t cudnnDestroy(cudnnHandle_t handle)
{
	return obj_destroy("cudnnDestroy", handle, M_HANDLE, FK_OBJ_CUDNN);
}

cudnnStatus_t cudnnSetStream(cudnnHandle_t handle, cudaStream_t streamId)
{
	cudnnStatus_t st = CUDNN_STATUS_SUCCESS;

	fk_call("cudnnSetStream");
	if (fk_inject())
		st = CUDNN_STATUS_INTERNAL_ERROR;
	/* (not handle_ok: the call is not on the old stream, which may be gone) */
	else if (obj_ok(handle, M_HANDLE, FK_OBJ_CUDNN, "handle", false))
		handle->stream = streamId;
	else
		st = CUDNN_STATUS_BAD_PARAM;
	fk_end();
	return st;
}

const char *cudnnGetErrorString(cudnnStatus_t status)
{
	switch (status) {
	case CUDNN_STATUS_SUCCESS: return "CUDNN_STATUS_SUCCESS";
	case CUDNN_STATUS_NOT_INITIALIZED: return "CUDNN_STATUS_NOT_INITIALIZED";
	case CUDNN_STATUS_ALLOC_FAILED: return "CUDNN_STATUS_ALLOC_FAILED";
	case CUDNN_STATUS_BAD_PARAM: return "CUDNN_STATUS_BAD_PARAM";
	case CUDNN_STATUS_INTERNAL_ERROR: return "CUDNN_STATUS_INTERNAL_ERROR";
	case CUDNN_STATUS_NOT_SUPPORTED: return "CUDNN_STATUS_NOT_SUPPORTED";
	case CUDNN_STATUS_EXECUTION_FAILED: return "CUDNN_STATUS_EXECUTION_FAILED";
	default: return "CUDNN_STATUS (fake: another status)";
	}
}

size_t cudnnGetVersion(void)
{
	return CUDNN_VERSION;
}

cudnnStatus_t cudnnOpsVersionCheck(void)
{
	return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnCnnVersionCheck(void)
{
	return CUDNN_STATUS_SUCCESS;
}

/* ---- tensor and filter descriptors ---- */

cudnnStatus_t cudnnCreateTensorDescriptor(cudnnTensorDescriptor_t *tensorDesc)
{
	if (!tensorDesc)
		return CUDNN_STATUS_BAD_PARAM;
	if (fk_inject())
		return CUDNN_STATUS_ALLOC_FAILED;
	*tensorDesc = (cudnnTensorDescriptor_t)obj_new(sizeof(struct cudnnTensorStruct), M_TENSOR, FK_OBJ_TENSOR);
	return *tensorDesc ? CUDNN_STATUS_SUCCESS : CUDNN_STATUS_ALLOC_FAILED;
}

cudnnStatus_t cudnnDestroyTensorDescriptor(cudnnTensorDescriptor_t tensorDesc)
{
	return obj_destroy("cudnnDestroyTensorDescriptor", tensorDesc, M_TENSOR, FK_OBJ_TENSOR);
}

cudnnStatus_t cudnnSetTensorNdDescriptor(cudnnTensorDescriptor_t tensorDesc, cudnnDataType_t dataType, int nbDims,
					 const int dimA[], const int strideA[])
{
	cudnnStatus_t st = CUDNN_STATUS_SUCCESS;
	uint64_t ext = 1;

	fk_call("cudnnSetTensorNdDescriptor");
	if (fk_inject()) {
		st = CUDNN_STATUS_BAD_PARAM;
		goto out;
	}
	if (!obj_ok(tensorDesc, M_TENSOR, FK_OBJ_TENSOR, "tensorDesc", false)) {
		st = CUDNN_STATUS_BAD_PARAM;
		goto out;
	}
	if (!esize(dataType)) {
		fk_fail("unknown data type %d", (int)dataType);
		st = CUDNN_STATUS_BAD_PARAM;
		goto out;
	}
	if (nbDims < 3 || nbDims > CUDNN_DIM_MAX || !dimA || !strideA) {
		fk_fail("nbDims %d (cuDNN takes 3 to %d, 4 and up for most functions)", nbDims, CUDNN_DIM_MAX);
		st = CUDNN_STATUS_BAD_PARAM;
		goto out;
	}
	for (int i = 0; i < nbDims; i++) {
		if (dimA[i] <= 0 || strideA[i] <= 0) {
			fk_fail("dimension %d is %d with stride %d (both must be positive)", i, dimA[i], strideA[i]);
			st = CUDNN_STATUS_BAD_PARAM;
			goto out;
		}
		ext += (uint64_t)(dimA[i] - 1) * (uint64_t)strideA[i];
	}
	if (ext > INT32_MAX) {
		fk_fail("%llu elements with padding (cuDNN's limit is 2^31 - 1)", (unsigned long long)ext);
		st = CUDNN_STATUS_NOT_SUPPORTED;
		goto out;
	}
	tensorDesc->dt = dataType;
	tensorDesc->nd = nbDims;
	memcpy(tensorDesc->dim, dimA, (size_t)nbDims * sizeof(int));
	memcpy(tensorDesc->str, strideA, (size_t)nbDims * sizeof(int));
	tensorDesc->h.set = true;
out:
	fk_end();
	return st;
}

cudnnStatus_t cudnnCreateFilterDescriptor(cudnnFilterDescriptor_t *filterDesc)
{
	if (!filterDesc)
		return CUDNN_STATUS_BAD_PARAM;
	if (fk_inject())
		return CUDNN_STATUS_ALLOC_FAILED;
	*filterDesc = (cudnnFilterDescriptor_t)obj_new(sizeof(struct cudnnFilterStruct), M_FILTER, FK_OBJ_FILTER);
	return *filterDesc ? CUDNN_STATUS_SUCCESS : CUDNN_STATUS_ALLOC_FAILED;
}

cudnnStatus_t cudnnDestroyFilterDescriptor(cudnnFilterDescriptor_t filterDesc)
{
	return obj_destroy("cudnnDestroyFilterDescriptor", filterDesc, M_FILTER, FK_OBJ_FILTER);
}

cudnnStatus_t cudnnSetFilterNdDescriptor(cudnnFilterDescriptor_t filterDesc, cudnnDataType_t dataType,
					 cudnnTensorFormat_t format, int nbDims, const int filterDimA[])
{
	cudnnStatus_t st = CUDNN_STATUS_SUCCESS;

	fk_call("cudnnSetFilterNdDescriptor");
	if (fk_inject())
		st = CUDNN_STATUS_BAD_PARAM;
	else if (!obj_ok(filterDesc, M_FILTER, FK_OBJ_FILTER, "filterDesc", false))
		st = CUDNN_STATUS_BAD_PARAM;
	else if (!esize(dataType)) {
		fk_fail("unknown data type %d", (int)dataType);
		st = CUDNN_STATUS_BAD_PARAM;
	} else if (format != CUDNN_TENSOR_NCHW && format != CUDNN_TENSOR_NHWC) {
		fk_fail("format %d", (int)format);
		st = CUDNN_STATUS_BAD_PARAM;
	} else if (nbDims < 3 || nbDims > CUDNN_DIM_MAX || !filterDimA) {
		fk_fail("nbDims %d (3 to %d)", nbDims, CUDNN_DIM_MAX);
		st = CUDNN_STATUS_BAD_PARAM;
	} else {
		for (int i = 0; i < nbDims; i++)
			if (filterDimA[i] <= 0) {
				fk_fail("filter dimension %d is %d", i, filterDimA[i]);
				st = CUDNN_STATUS_BAD_PARAM;
			}
		if (st == CUDNN_STATUS_SUCCESS) {
			filterDesc->dt = dataType;
			filterDesc->format = format;
			filterDesc->nd = nbDims;
			memcpy(filterDesc->dim, filterDimA, (size_t)nbDims * sizeof(int));
			filterDesc->h.set = true;
		}
	}
	fk_end();
	return st;
}

/* ---- convolution ---- */

cudnnStatus_t cudnnCreateConvolutionDescriptor(cudnnConvolutionDescriptor_t *convDesc)
{
	if (!convDesc)
		return CUDNN_STATUS_BAD_PARAM;
	if (fk_inject())
		return CUDNN_STATUS_ALLOC_FAILED;
	*convDesc = (cudnnConvolutionDescriptor_t)obj_new(sizeof(struct cudnnConvolutionStruct), M_CONV, FK_OBJ_CONV);
	if (*convDesc) {
		(*convDesc)->groups = 1; /* cuDNN's defaults */
		(*convDesc)->math = CUDNN_DEFAULT_MATH;
	}
	return *convDesc ? CUDNN_STATUS_SUCCESS : CUDNN_STATUS_ALLOC_FAILED;
}

cudnnStatus_t cudnnDestroyConvolutionDescriptor(cudnnConvolutionDescriptor_t convDesc)
{
	return obj_destroy("cudnnDestroyConvolutionDescriptor", convDesc, M_CONV, FK_OBJ_CONV);
}

cudnnStatus_t cudnnSetConvolutionNdDescriptor(cudnnConvolutionDescriptor_t convDesc, int arrayLength,
					      const int padA[], const int filterStrideA[], const int dilationA[],
					      cudnnConvolutionMode_t mode, cudnnDataType_t computeType)
{
	cudnnStatus_t st = CUDNN_STATUS_SUCCESS;

	fk_call("cudnnSetConvolutionNdDescriptor");
	if (fk_inject())
		st = CUDNN_STATUS_BAD_PARAM;
	else if (!obj_ok(convDesc, M_CONV, FK_OBJ_CONV, "convDesc", false))
		st = CUDNN_STATUS_BAD_PARAM;
	else if (arrayLength < 1 || arrayLength > CUDNN_DIM_MAX - 2 || !padA || !filterStrideA || !dilationA) {
		fk_fail("arrayLength %d (1 to %d spatial dimensions)", arrayLength, CUDNN_DIM_MAX - 2);
		st = CUDNN_STATUS_BAD_PARAM;
	} else if (mode != CUDNN_CONVOLUTION && mode != CUDNN_CROSS_CORRELATION) {
		fk_fail("mode %d", (int)mode);
		st = CUDNN_STATUS_BAD_PARAM;
	} else if (computeType != CUDNN_DATA_FLOAT && computeType != CUDNN_DATA_HALF &&
		   computeType != CUDNN_DATA_DOUBLE && computeType != CUDNN_DATA_INT32) {
		fk_fail("compute type %d", (int)computeType);
		st = CUDNN_STATUS_BAD_PARAM;
	} else {
		for (int i = 0; i < arrayLength; i++)
			if (padA[i] < 0 || filterStrideA[i] < 1 || dilationA[i] < 1) {
				fk_fail("dimension %d: pad %d, stride %d, dilation %d", i, padA[i], filterStrideA[i],
					dilationA[i]);
				st = CUDNN_STATUS_BAD_PARAM;
			}
		if (st == CUDNN_STATUS_SUCCESS) {
			convDesc->n = arrayLength;
			memcpy(convDesc->pad, padA, (size_t)arrayLength * sizeof(int));
			memcpy(convDesc->stride, filterStrideA, (size_t)arrayLength * sizeof(int));
			memcpy(convDesc->dil, dilationA, (size_t)arrayLength * sizeof(int));
			convDesc->mode = mode;
			convDesc->compute = computeType;
			convDesc->h.set = true;
		}
	}
	fk_end();
	return st;
}

cudnnStatus_t cudnnSetConvolutionGroupCount(cudnnConvolutionDescriptor_t convDesc, int groupCount)
{
	cudnnStatus_t st = CUDNN_STATUS_SUCCESS;

	fk_call("cudnnSetConvolutionGroupCount");
	if (fk_inject())
		st = CUDNN_STATUS_BAD_PARAM;
	else if (!obj_ok(convDesc, M_CONV, FK_OBJ_CONV, "convDesc", false))
		st = CUDNN_STATUS_BAD_PARAM;
	else if (groupCount < 1) {
		fk_fail("groupCount %d", groupCount);
		st = CUDNN_STATUS_BAD_PARAM;
	} else
		convDesc->groups = groupCount;
	fk_end();
	return st;
}

cudnnStatus_t cudnnSetConvolutionMathType(cudnnConvolutionDescriptor_t convDesc, cudnnMathType_t mathType)
{
	cudnnStatus_t st = CUDNN_STATUS_SUCCESS;

	fk_call("cudnnSetConvolutionMathType");
	if (fk_inject())
		st = CUDNN_STATUS_BAD_PARAM;
	else if (!obj_ok(convDesc, M_CONV, FK_OBJ_CONV, "convDesc", false))
		st = CUDNN_STATUS_BAD_PARAM;
	else if (mathType != CUDNN_DEFAULT_MATH && mathType != CUDNN_TENSOR_OP_MATH &&
		 mathType != CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION && mathType != CUDNN_FMA_MATH) {
		fk_fail("mathType %d", (int)mathType);
		st = CUDNN_STATUS_BAD_PARAM;
	} else
		convDesc->math = mathType;
	fk_end();
	return st;
}

/* The geometry of a convolution: x [N, C, s...] with filter w [K, C/g, r...]
 * gives y [N, K, o...], o = (s + 2 pad - dil (r - 1) - 1) / stride + 1.
 * In the current call; false (reported) when y is not that. */
static bool conv_geometry(const char *xn, const struct cudnnTensorStruct *x, const char *wn,
			  const struct cudnnFilterStruct *w, const struct cudnnConvolutionStruct *c, const char *yn,
			  const struct cudnnTensorStruct *y)
{
	char s1[128], s2[128];
	int want[CUDNN_DIM_MAX];

	if (!OK_T(x, xn) || !obj_ok(w, M_FILTER, FK_OBJ_FILTER, wn, true) ||
	    !obj_ok(c, M_CONV, FK_OBJ_CONV, "convDesc", true) || !OK_T(y, yn))
		return false;
	if (x->nd != 4 && x->nd != 5) {
		fk_fail("%s has %d dimensions (convolutions take 4 or 5)", xn, x->nd);
		return false;
	}
	if (w->nd != x->nd || y->nd != x->nd || c->n != x->nd - 2) {
		fk_fail("%s has %d dimensions, %s %d, %s %d, the convolution %d spatial", xn, x->nd, wn, w->nd, yn,
			y->nd, c->n);
		return false;
	}
	if (x->dt != y->dt || x->dt != w->dt) {
		fk_fail("data types differ: %s %d, %s %d, %s %d", xn, (int)x->dt, wn, (int)w->dt, yn, (int)y->dt);
		return false;
	}
	if (!(x->dt == CUDNN_DATA_FLOAT && c->compute == CUDNN_DATA_FLOAT) &&
	    !(x->dt == CUDNN_DATA_HALF && (c->compute == CUDNN_DATA_HALF || c->compute == CUDNN_DATA_FLOAT)) &&
	    !(x->dt == CUDNN_DATA_BFLOAT16 && c->compute == CUDNN_DATA_FLOAT) &&
	    !(x->dt == CUDNN_DATA_DOUBLE && c->compute == CUDNN_DATA_DOUBLE)) {
		fk_fail("data type %d with compute type %d is no cuDNN configuration", (int)x->dt, (int)c->compute);
		return false;
	}
	if (x->dim[1] != w->dim[1] * c->groups) {
		fk_fail("%s has %d channels, %s %d per group x %d groups", xn, x->dim[1], wn, w->dim[1], c->groups);
		return false;
	}
	if (w->dim[0] % c->groups) {
		fk_fail("%s has %d output channels, not a multiple of %d groups", wn, w->dim[0], c->groups);
		return false;
	}
	want[0] = x->dim[0];
	want[1] = w->dim[0];
	for (int i = 0; i < c->n; i++) {
		int span = c->dil[i] * (w->dim[2 + i] - 1) + 1, in = x->dim[2 + i] + 2 * c->pad[i];

		if (in < span) {
			fk_fail("spatial dimension %d: the dilated filter (%d) is larger than the padded input (%d)", i,
				span, in);
			return false;
		}
		want[2 + i] = (in - span) / c->stride[i] + 1;
	}
	if (memcmp(want, y->dim, (size_t)y->nd * sizeof(int))) {
		fk_fail("%s is %s, the convolution of %s %s by %s %s gives %s", yn, dims_str(y->dim, y->nd, s1, 128), xn,
			dims_str(x->dim, x->nd, s2, 128), wn, dims_str(w->dim, w->nd, s2 + 64, 64),
			dims_str(want, y->nd, s1 + 64, 64));
		return false;
	}
	return true;
}

struct cgeo {
	uint64_t n, c, k, cg, r, out_sp, in_sp, pad_sp;
	bool unit, two_d, r3, r5;  /* stride 1 and dilation 1; 4-D; 3x3 or 5x5 filter */
	size_t es;
};

static struct cgeo geo(const struct cudnnTensorStruct *x, const struct cudnnFilterStruct *w,
		       const struct cudnnConvolutionStruct *c, const struct cudnnTensorStruct *y)
{
	struct cgeo g;

	memset(&g, 0, sizeof(g));
	g.n = (uint64_t)x->dim[0];
	g.c = (uint64_t)x->dim[1];
	g.k = (uint64_t)w->dim[0];
	g.cg = (uint64_t)w->dim[1];
	g.r = g.out_sp = g.in_sp = g.pad_sp = 1;
	g.unit = c->groups == 1;
	g.two_d = x->nd == 4;
	g.r3 = g.r5 = g.two_d;
	for (int i = 0; i < c->n; i++) {
		g.r *= (uint64_t)w->dim[2 + i];
		g.out_sp *= (uint64_t)y->dim[2 + i];
		g.in_sp *= (uint64_t)x->dim[2 + i];
		g.pad_sp *= (uint64_t)(x->dim[2 + i] + 2 * c->pad[i]);
		g.unit = g.unit && c->stride[i] == 1 && c->dil[i] == 1;
		g.r3 = g.r3 && w->dim[2 + i] == 3;
		g.r5 = g.r5 && w->dim[2 + i] == 5;
	}
	g.es = esize(x->dt);
	return g;
}

static cudnnStatus_t fwd_ws(const struct cgeo *g, cudnnConvolutionFwdAlgo_t a, size_t *ws)
{
	*ws = 0;
	switch (a) {
	case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM:
		return CUDNN_STATUS_SUCCESS;
	case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM:
		*ws = 8 * g->r * g->cg + 256;
		return CUDNN_STATUS_SUCCESS;
	case CUDNN_CONVOLUTION_FWD_ALGO_GEMM:
		if (!g->two_d)
			return CUDNN_STATUS_NOT_SUPPORTED;
		*ws = g->n * g->cg * g->r * g->out_sp * g->es;
		return CUDNN_STATUS_SUCCESS;
	case CUDNN_CONVOLUTION_FWD_ALGO_DIRECT:
		return CUDNN_STATUS_NOT_SUPPORTED;
	case CUDNN_CONVOLUTION_FWD_ALGO_FFT:
		if (!g->unit || !g->two_d)
			return CUDNN_STATUS_NOT_SUPPORTED;
		*ws = (g->n * g->c + g->k * g->c + g->n * g->k) * g->pad_sp * 8;
		return CUDNN_STATUS_SUCCESS;
	case CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING:
		if (!g->unit)
			return CUDNN_STATUS_NOT_SUPPORTED;
		*ws = (g->c * g->k + g->n * (g->c + g->k)) * 32 * 17 * 8;
		return CUDNN_STATUS_SUCCESS;
	case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD:
		if (!g->unit || !g->r3)
			return CUDNN_STATUS_NOT_SUPPORTED;
		*ws = g->k * g->c * 16 * 4;
		return CUDNN_STATUS_SUCCESS;
	case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED:
		if (!g->unit || !(g->r3 || g->r5))
			return CUDNN_STATUS_NOT_SUPPORTED;
		*ws = g->n * (g->c + g->k) * g->out_sp * 4 * g->es + g->k * g->c * 36 * 4;
		return CUDNN_STATUS_SUCCESS;
	default:
		return CUDNN_STATUS_BAD_PARAM;
	}
}

static cudnnStatus_t bwd_data_ws(const struct cgeo *g, cudnnConvolutionBwdDataAlgo_t a, size_t *ws)
{
	*ws = 0;
	switch (a) {
	case CUDNN_CONVOLUTION_BWD_DATA_ALGO_0:
		return CUDNN_STATUS_SUCCESS;
	case CUDNN_CONVOLUTION_BWD_DATA_ALGO_1:
		*ws = g->k * g->cg * g->r * g->es + 512;
		return CUDNN_STATUS_SUCCESS;
	case CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT:
		if (!g->unit || !g->two_d)
			return CUDNN_STATUS_NOT_SUPPORTED;
		*ws = (g->n * g->c + g->k * g->c + g->n * g->k) * g->pad_sp * 8;
		return CUDNN_STATUS_SUCCESS;
	case CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING:
		if (!g->unit)
			return CUDNN_STATUS_NOT_SUPPORTED;
		*ws = (g->c * g->k + g->n * (g->c + g->k)) * 32 * 17 * 8;
		return CUDNN_STATUS_SUCCESS;
	case CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD:
		if (!g->unit || !g->r3)
			return CUDNN_STATUS_NOT_SUPPORTED;
		*ws = g->k * g->c * 16 * 4;
		return CUDNN_STATUS_SUCCESS;
	case CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED:
		if (!g->unit || !(g->r3 || g->r5))
			return CUDNN_STATUS_NOT_SUPPORTED;
		*ws = g->n * (g->c + g->k) * g->in_sp * 4 * g->es + g->k * g->c * 36 * 4;
		return CUDNN_STATUS_SUCCESS;
	default:
		return CUDNN_STATUS_BAD_PARAM;
	}
}

static cudnnStatus_t bwd_filter_ws(const struct cgeo *g, cudnnConvolutionBwdFilterAlgo_t a, size_t *ws)
{
	*ws = 0;
	switch (a) {
	case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0:
		return CUDNN_STATUS_SUCCESS;
	case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1:
		*ws = g->k * g->cg * g->r * 4 + 1024;
		return CUDNN_STATUS_SUCCESS;
	case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT:
		if (!g->unit || !g->two_d)
			return CUDNN_STATUS_NOT_SUPPORTED;
		*ws = (g->n * g->c + g->k * g->c + g->n * g->k) * g->pad_sp * 8;
		return CUDNN_STATUS_SUCCESS;
	case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3:
		*ws = g->n * g->k * g->cg * 8;
		return CUDNN_STATUS_SUCCESS;
	case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD:
		return CUDNN_STATUS_NOT_SUPPORTED;
	case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD_NONFUSED:
		if (!g->unit || !(g->r3 || g->r5))
			return CUDNN_STATUS_NOT_SUPPORTED;
		*ws = g->n * (g->c + g->k) * g->in_sp * 4 * g->es + g->k * g->c * 36 * 4;
		return CUDNN_STATUS_SUCCESS;
	case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT_TILING:
		if (!g->unit)
			return CUDNN_STATUS_NOT_SUPPORTED;
		*ws = (g->c * g->k + g->n * (g->c + g->k)) * 32 * 17 * 8;
		return CUDNN_STATUS_SUCCESS;
	default:
		return CUDNN_STATUS_BAD_PARAM;
	}
}

cudnnStatus_t cudnnGetConvolutionForwardWorkspaceSize(cudnnHandle_t handle, const cudnnTensorDescriptor_t xDesc,
						      const cudnnFilterDescriptor_t wDesc,
						      const cudnnConvolutionDescriptor_t convDesc,
						      const cudnnTensorDescriptor_t yDesc, cudnnConvolutionFwdAlgo_t algo,
						      size_t *sizeInBytes)
{
	cudnnStatus_t st = CUDNN_STATUS_BAD_PARAM;
	struct cgeo g;

	fk_call("cudnnGetConvolutionForwardWorkspaceSize");
	if (fk_inject())
		goto out;
	if (!handle_ok(handle) || !sizeInBytes ||
	    !conv_geometry("xDesc", xDesc, "wDesc", wDesc, convDesc, "yDesc", yDesc))
		goto out;
	g = geo(xDesc, wDesc, convDesc, yDesc);
	if ((st = fwd_ws(&g, algo, sizeInBytes)) == CUDNN_STATUS_BAD_PARAM)
		fk_fail("algo %d is not a forward algorithm", (int)algo);
out:
	fk_end();
	return st;
}

cudnnStatus_t cudnnGetConvolutionBackwardDataWorkspaceSize(cudnnHandle_t handle, const cudnnFilterDescriptor_t wDesc,
							   const cudnnTensorDescriptor_t dyDesc,
							   const cudnnConvolutionDescriptor_t convDesc,
							   const cudnnTensorDescriptor_t dxDesc,
							   cudnnConvolutionBwdDataAlgo_t algo, size_t *sizeInBytes)
{
	cudnnStatus_t st = CUDNN_STATUS_BAD_PARAM;
	struct cgeo g;

	fk_call("cudnnGetConvolutionBackwardDataWorkspaceSize");
	if (fk_inject())
		goto out;
	if (!handle_ok(handle) || !sizeInBytes ||
	    !conv_geometry("dxDesc", dxDesc, "wDesc", wDesc, convDesc, "dyDesc", dyDesc))
		goto out;
	g = geo(dxDesc, wDesc, convDesc, dyDesc);
	if ((st = bwd_data_ws(&g, algo, sizeInBytes)) == CUDNN_STATUS_BAD_PARAM)
		fk_fail("algo %d is not a backward-data algorithm", (int)algo);
out:
	fk_end();
	return st;
}

cudnnStatus_t cudnnGetConvolutionBackwardFilterWorkspaceSize(cudnnHandle_t handle,
							     const cudnnTensorDescriptor_t xDesc,
							     const cudnnTensorDescriptor_t dyDesc,
							     const cudnnConvolutionDescriptor_t convDesc,
							     const cudnnFilterDescriptor_t gradDesc,
							     cudnnConvolutionBwdFilterAlgo_t algo, size_t *sizeInBytes)
{
	cudnnStatus_t st = CUDNN_STATUS_BAD_PARAM;
	struct cgeo g;

	fk_call("cudnnGetConvolutionBackwardFilterWorkspaceSize");
	if (fk_inject())
		goto out;
	if (!handle_ok(handle) || !sizeInBytes ||
	    !conv_geometry("xDesc", xDesc, "gradDesc", gradDesc, convDesc, "dyDesc", dyDesc))
		goto out;
	g = geo(xDesc, gradDesc, convDesc, dyDesc);
	if ((st = bwd_filter_ws(&g, algo, sizeInBytes)) == CUDNN_STATUS_BAD_PARAM)
		fk_fail("algo %d is not a backward-filter algorithm", (int)algo);
out:
	fk_end();
	return st;
}

/* The heuristics' orders: a workspace-hungry algorithm first. */
static const cudnnConvolutionFwdAlgo_t fwd_order[] = {
	CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM, CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED,
	CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM,         CUDNN_CONVOLUTION_FWD_ALGO_GEMM,
	CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING,            CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD,
	CUDNN_CONVOLUTION_FWD_ALGO_FFT,                   CUDNN_CONVOLUTION_FWD_ALGO_DIRECT,
};
static const cudnnConvolutionBwdDataAlgo_t bwd_data_order[] = {
	CUDNN_CONVOLUTION_BWD_DATA_ALGO_1,          CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED,
	CUDNN_CONVOLUTION_BWD_DATA_ALGO_0,          CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING,
	CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD,   CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT,
};
static const cudnnConvolutionBwdFilterAlgo_t bwd_filter_order[] = {
	CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1,          CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3,
	CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0,          CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT_TILING,
	CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD_NONFUSED, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT,
	CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD,
};

#define N_OF(a) ((int)(sizeof(a) / sizeof((a)[0])))

cudnnStatus_t cudnnGetConvolutionForwardAlgorithm_v7(cudnnHandle_t handle, const cudnnTensorDescriptor_t srcDesc,
						     const cudnnFilterDescriptor_t filterDesc,
						     const cudnnConvolutionDescriptor_t convDesc,
						     const cudnnTensorDescriptor_t destDesc, const int requestedAlgoCount,
						     int *returnedAlgoCount, cudnnConvolutionFwdAlgoPerf_t *perfResults)
{
	cudnnStatus_t st = CUDNN_STATUS_BAD_PARAM;
	struct cgeo g;

	fk_call("cudnnGetConvolutionForwardAlgorithm_v7");
	if (fk_inject())
		goto out;
	if (!handle_ok(handle) ||
	    !conv_geometry("srcDesc", srcDesc, "filterDesc", filterDesc, convDesc, "destDesc", destDesc))
		goto out;
	if (requestedAlgoCount < 1 || !returnedAlgoCount || !perfResults) {
		fk_fail("requestedAlgoCount %d, returnedAlgoCount %p, perfResults %p", requestedAlgoCount,
			(void *)returnedAlgoCount, (void *)perfResults);
		goto out;
	}
	g = geo(srcDesc, filterDesc, convDesc, destDesc);
	*returnedAlgoCount = 0;
	for (int i = 0; i < N_OF(fwd_order) && i < requestedAlgoCount; i++) {
		cudnnConvolutionFwdAlgoPerf_t *p = &perfResults[i];

		memset(p, 0, sizeof(*p));
		p->algo = fwd_order[i];
		p->status = fwd_ws(&g, p->algo, &p->memory);
		p->time = p->status == CUDNN_STATUS_SUCCESS ? 1.0f + (float)i : -1.0f;
		p->determinism = CUDNN_DETERMINISTIC;
		p->mathType = convDesc->math;
		++*returnedAlgoCount;
	}
	st = CUDNN_STATUS_SUCCESS;
out:
	fk_end();
	return st;
}

cudnnStatus_t cudnnGetConvolutionBackwardDataAlgorithm_v7(cudnnHandle_t handle,
							  const cudnnFilterDescriptor_t filterDesc,
							  const cudnnTensorDescriptor_t diffDesc,
							  const cudnnConvolutionDescriptor_t convDesc,
							  const cudnnTensorDescriptor_t gradDesc,
							  const int requestedAlgoCount, int *returnedAlgoCount,
							  cudnnConvolutionBwdDataAlgoPerf_t *perfResults)
{
	cudnnStatus_t st = CUDNN_STATUS_BAD_PARAM;
	struct cgeo g;

	fk_call("cudnnGetConvolutionBackwardDataAlgorithm_v7");
	if (fk_inject())
		goto out;
	if (!handle_ok(handle) ||
	    !conv_geometry("gradDesc", gradDesc, "filterDesc", filterDesc, convDesc, "diffDesc", diffDesc))
		goto out;
	if (requestedAlgoCount < 1 || !returnedAlgoCount || !perfResults) {
		fk_fail("requestedAlgoCount %d", requestedAlgoCount);
		goto out;
	}
	g = geo(gradDesc, filterDesc, convDesc, diffDesc);
	*returnedAlgoCount = 0;
	for (int i = 0; i < N_OF(bwd_data_order) && i < requestedAlgoCount; i++) {
		cudnnConvolutionBwdDataAlgoPerf_t *p = &perfResults[i];

		memset(p, 0, sizeof(*p));
		p->algo = bwd_data_order[i];
		p->status = bwd_data_ws(&g, p->algo, &p->memory);
		p->time = p->status == CUDNN_STATUS_SUCCESS ? 1.0f + (float)i : -1.0f;
		p->determinism = p->algo == CUDNN_CONVOLUTION_BWD_DATA_ALGO_0 ? CUDNN_NON_DETERMINISTIC
									     : CUDNN_DETERMINISTIC;
		p->mathType = convDesc->math;
		++*returnedAlgoCount;
	}
	st = CUDNN_STATUS_SUCCESS;
out:
	fk_end();
	return st;
}

cudnnStatus_t cudnnGetConvolutionBackwardFilterAlgorithm_v7(cudnnHandle_t handle,
							    const cudnnTensorDescriptor_t srcDesc,
							    const cudnnTensorDescriptor_t diffDesc,
							    const cudnnConvolutionDescriptor_t convDesc,
							    const cudnnFilterDescriptor_t gradDesc,
							    const int requestedAlgoCount, int *returnedAlgoCount,
							    cudnnConvolutionBwdFilterAlgoPerf_t *perfResults)
{
	cudnnStatus_t st = CUDNN_STATUS_BAD_PARAM;
	struct cgeo g;

	fk_call("cudnnGetConvolutionBackwardFilterAlgorithm_v7");
	if (fk_inject())
		goto out;
	if (!handle_ok(handle) ||
	    !conv_geometry("srcDesc", srcDesc, "gradDesc", gradDesc, convDesc, "diffDesc", diffDesc))
		goto out;
	if (requestedAlgoCount < 1 || !returnedAlgoCount || !perfResults) {
		fk_fail("requestedAlgoCount %d", requestedAlgoCount);
		goto out;
	}
	g = geo(srcDesc, gradDesc, convDesc, diffDesc);
	*returnedAlgoCount = 0;
	for (int i = 0; i < N_OF(bwd_filter_order) && i < requestedAlgoCount; i++) {
		cudnnConvolutionBwdFilterAlgoPerf_t *p = &perfResults[i];

		memset(p, 0, sizeof(*p));
		p->algo = bwd_filter_order[i];
		p->status = bwd_filter_ws(&g, p->algo, &p->memory);
		p->time = p->status == CUDNN_STATUS_SUCCESS ? 1.0f + (float)i : -1.0f;
		p->determinism = p->algo == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0 ||
						 p->algo == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3
					 ? CUDNN_NON_DETERMINISTIC
					 : CUDNN_DETERMINISTIC;
		p->mathType = convDesc->math;
		++*returnedAlgoCount;
	}
	st = CUDNN_STATUS_SUCCESS;
out:
	fk_end();
	return st;
}

/* The workspace argument of a convolution: the algorithm supported, the
 * size at least what it needs, the pointer valid over the whole size. */
static bool workspace(cudnnStatus_t sup, size_t need, void *ws, size_t have, int algo, cudnnStatus_t *st)
{
	if (sup != CUDNN_STATUS_SUCCESS) {
		fk_fail("algo %d: %s for this convolution", algo,
			sup == CUDNN_STATUS_NOT_SUPPORTED ? "not supported" : "not an algorithm of this direction");
		*st = sup;
		return false;
	}
	if (have < need) {
		fk_fail("algo %d needs a %zu-byte workspace, given %zu", algo, need, have);
		*st = CUDNN_STATUS_BAD_PARAM;
		return false;
	}
	if (have) {
		struct fk_layout l = fk_bytes(have);

		fk_arg("workSpace", ws, &l, FK_SCRATCH, 0);
	}
	return true;
}


cudnnStatus_t cudnnConvolutionForward(cudnnHandle_t handle, const void *alpha, const cudnnTensorDescriptor_t xDesc,
				      const void *x, const cudnnFilterDescriptor_t wDesc, const void *w,
				      const cudnnConvolutionDescriptor_t convDesc, cudnnConvolutionFwdAlgo_t algo,
				      void *workSpace, size_t workSpaceSizeInBytes, const void *beta,
				      const cudnnTensorDescriptor_t yDesc, void *y)
{
	cudnnStatus_t st = CUDNN_STATUS_SUCCESS;
	struct fk_layout lx, lw, ly;
	struct cgeo g;
	size_t need = 0;
	cudnnStatus_t sup;
	bool b1;

	fk_call("cudnnConvolutionForward");
	FAIL_IF(fk_inject(), CUDNN_STATUS_EXECUTION_FAILED);
	FAIL_IF(!handle_ok(handle) || !scalars(alpha, "alpha", beta, "beta", &b1), CUDNN_STATUS_BAD_PARAM);
	FAIL_IF(!conv_geometry("xDesc", xDesc, "wDesc", wDesc, convDesc, "yDesc", yDesc), CUDNN_STATUS_BAD_PARAM);
	g = geo(xDesc, wDesc, convDesc, yDesc);
	sup = fwd_ws(&g, algo, &need);
	if (!workspace(sup, need, workSpace, workSpaceSizeInBytes, (int)algo, &st))
		goto out;
	fk_algo_used(0, (int)algo);
	lx = tlayout(xDesc);
	lw = flayout(wDesc);
	ly = tlayout(yDesc);
	fk_arg("x", x, &lx, FK_R, 0);
	fk_arg("w", w, &lw, FK_R, 0);
	fk_arg("y", y, &ly, FK_W | (b1 ? FK_R : 0), 0);
out:
	fk_end();
	return st;
}

cudnnStatus_t cudnnConvolutionBackwardData(cudnnHandle_t handle, const void *alpha, const cudnnFilterDescriptor_t wDesc,
					   const void *w, const cudnnTensorDescriptor_t dyDesc, const void *dy,
					   const cudnnConvolutionDescriptor_t convDesc, cudnnConvolutionBwdDataAlgo_t algo,
					   void *workSpace, size_t workSpaceSizeInBytes, const void *beta,
					   const cudnnTensorDescriptor_t dxDesc, void *dx)
{
	cudnnStatus_t st = CUDNN_STATUS_SUCCESS;
	struct fk_layout lw, ldy, ldx;
	struct cgeo g;
	size_t need = 0;
	cudnnStatus_t sup;
	bool b1;

	fk_call("cudnnConvolutionBackwardData");
	FAIL_IF(fk_inject(), CUDNN_STATUS_EXECUTION_FAILED);
	FAIL_IF(!handle_ok(handle) || !scalars(alpha, "alpha", beta, "beta", &b1), CUDNN_STATUS_BAD_PARAM);
	FAIL_IF(!conv_geometry("dxDesc", dxDesc, "wDesc", wDesc, convDesc, "dyDesc", dyDesc), CUDNN_STATUS_BAD_PARAM);
	g = geo(dxDesc, wDesc, convDesc, dyDesc);
	sup = bwd_data_ws(&g, algo, &need);
	if (!workspace(sup, need, workSpace, workSpaceSizeInBytes, (int)algo, &st))
		goto out;
	fk_algo_used(1, (int)algo);
	lw = flayout(wDesc);
	ldy = tlayout(dyDesc);
	ldx = tlayout(dxDesc);
	fk_arg("w", w, &lw, FK_R, 0);
	fk_arg("dy", dy, &ldy, FK_R, 0);
	fk_arg("dx", dx, &ldx, FK_W | (b1 ? FK_R : 0), 0);
out:
	fk_end();
	return st;
}

cudnnStatus_t cudnnConvolutionBackwardFilter(cudnnHandle_t handle, const void *alpha,
					     const cudnnTensorDescriptor_t xDesc, const void *x,
					     const cudnnTensorDescriptor_t dyDesc, const void *dy,
					     const cudnnConvolutionDescriptor_t convDesc,
					     cudnnConvolutionBwdFilterAlgo_t algo, void *workSpace,
					     size_t workSpaceSizeInBytes, const void *beta,
					     const cudnnFilterDescriptor_t dwDesc, void *dw)
{
	cudnnStatus_t st = CUDNN_STATUS_SUCCESS;
	struct fk_layout lx, ldy, ldw;
	struct cgeo g;
	size_t need = 0;
	cudnnStatus_t sup;
	bool b1;

	fk_call("cudnnConvolutionBackwardFilter");
	FAIL_IF(fk_inject(), CUDNN_STATUS_EXECUTION_FAILED);
	FAIL_IF(!handle_ok(handle) || !scalars(alpha, "alpha", beta, "beta", &b1), CUDNN_STATUS_BAD_PARAM);
	FAIL_IF(!conv_geometry("xDesc", xDesc, "dwDesc", dwDesc, convDesc, "dyDesc", dyDesc), CUDNN_STATUS_BAD_PARAM);
	g = geo(xDesc, dwDesc, convDesc, dyDesc);
	sup = bwd_filter_ws(&g, algo, &need);
	if (!workspace(sup, need, workSpace, workSpaceSizeInBytes, (int)algo, &st))
		goto out;
	fk_algo_used(2, (int)algo);
	lx = tlayout(xDesc);
	ldy = tlayout(dyDesc);
	ldw = flayout(dwDesc);
	fk_arg("x", x, &lx, FK_R, 0);
	fk_arg("dy", dy, &ldy, FK_R, 0);
	fk_arg("dw", dw, &ldw, FK_W | (b1 ? FK_R : 0), 0);
out:
	fk_end();
	return st;
}

/* ---- float32 values for the cheap calls (the test checks them) ---- */

/* C = alpha A + beta C over C's elements, A broadcast where its dimension
 * is 1 (beta 0: C is not read; it may hold anything, NaN included). */
static void axpby(const struct cudnnTensorStruct *a, const void *A, const struct cudnnTensorStruct *c, void *C,
		  const void *alpha, const void *beta)
{
	const float *av = (const float *)A, al = *(const float *)alpha, be = *(const float *)beta;
	float *cv = (float *)C;
	int idx[CUDNN_DIM_MAX] = { 0 }, last = c->nd - 1;
	int64_t sa, sc;

	if (c->dt != CUDNN_DATA_FLOAT || !fk_values_on())
		return;
	while (last > 0 && c->dim[last] == 1) /* the inner loop over the last dimension above 1 */
		last--;
	sa = a->dim[last] == 1 ? 0 : a->str[last];
	sc = c->str[last];
	for (;;) {
		uint64_t oc = 0, oa = 0;
		int i;

		for (i = 0; i < last; i++) {
			oc += (uint64_t)idx[i] * (uint64_t)c->str[i];
			oa += (uint64_t)(a->dim[i] == 1 ? 0 : idx[i]) * (uint64_t)a->str[i];
		}
		for (int64_t j = 0; j < c->dim[last]; j++)
			cv[oc + j * sc] = al * av[oa + j * sa] + (be != 0 ? be * cv[oc + j * sc] : 0.0f);
		for (i = last - 1; i >= 0; i--) {
			if (++idx[i] < c->dim[i])
				break;
			idx[i] = 0;
		}
		if (i < 0)
			return;
	}
}

cudnnStatus_t cudnnConvolutionBackwardBias(cudnnHandle_t handle, const void *alpha,
					   const cudnnTensorDescriptor_t dyDesc, const void *dy, const void *beta,
					   const cudnnTensorDescriptor_t dbDesc, void *db)
{
	cudnnStatus_t st = CUDNN_STATUS_SUCCESS;
	struct fk_layout ldy, ldb;
	char s1[128], s2[128];
	bool b1;

	fk_call("cudnnConvolutionBackwardBias");
	FAIL_IF(fk_inject(), CUDNN_STATUS_EXECUTION_FAILED);
	FAIL_IF(!handle_ok(handle) || !scalars(alpha, "alpha", beta, "beta", &b1), CUDNN_STATUS_BAD_PARAM);
	FAIL_IF(!OK_T(dyDesc, "dyDesc") || !OK_T(dbDesc, "dbDesc"), CUDNN_STATUS_BAD_PARAM);
	{
		bool shape = dbDesc->nd == dyDesc->nd && dyDesc->nd >= 4 && dbDesc->dim[1] == dyDesc->dim[1];

		for (int i = 0; shape && i < dbDesc->nd; i++)
			shape = i == 1 || dbDesc->dim[i] == 1;
		if (!shape || dbDesc->dt != dyDesc->dt) {
			fk_fail("dbDesc %s must be [1, C, 1, ...] of dyDesc %s, same type",
				dims_str(dbDesc->dim, dbDesc->nd, s1, 128), dims_str(dyDesc->dim, dyDesc->nd, s2, 128));
			st = CUDNN_STATUS_BAD_PARAM;
			goto out;
		}
	}
	ldy = tlayout(dyDesc);
	ldb = tlayout(dbDesc);
	fk_arg("dy", dy, &ldy, FK_R, 0);
	fk_arg("db", db, &ldb, FK_W | (b1 ? FK_R : 0), 0);
	if (fk_end() == 0 && dyDesc->dt == CUDNN_DATA_FLOAT && fk_values_on()) {
		const float *g = (const float *)dy;
		float *b = (float *)db, a = *(const float *)alpha, be = *(const float *)beta;
		int inner = 1;

		for (int i = 2; i < dyDesc->nd; i++)
			inner *= dyDesc->dim[i];
		for (int k = 0; k < dyDesc->dim[1]; k++) {
			double s = 0;

			for (int n = 0; n < dyDesc->dim[0]; n++) {
				int idx[CUDNN_DIM_MAX] = { 0 };

				for (int e = 0; e < inner; e++) {
					uint64_t off = (uint64_t)n * (uint64_t)dyDesc->str[0] +
						       (uint64_t)k * (uint64_t)dyDesc->str[1];
					int r = e;

					for (int i = dyDesc->nd - 1; i >= 2; i--) {
						idx[i] = r % dyDesc->dim[i];
						r /= dyDesc->dim[i];
						off += (uint64_t)idx[i] * (uint64_t)dyDesc->str[i];
					}
					s += g[off];
				}
			}
			b[(uint64_t)k * (uint64_t)dbDesc->str[1]] =
				(float)(a * s) + (be != 0 ? be * b[(uint64_t)k * (uint64_t)dbDesc->str[1]] : 0.0f);
		}
	}
	return st;
out:
	fk_end();
	return st;
}

cudnnStatus_t cudnnAddTensor(cudnnHandle_t handle, const void *alpha, const cudnnTensorDescriptor_t aDesc,
			     const void *A, const void *beta, const cudnnTensorDescriptor_t cDesc, void *C)
{
	cudnnStatus_t st = CUDNN_STATUS_SUCCESS;
	struct fk_layout la, lc;
	char s1[128], s2[128];
	bool b1;

	fk_call("cudnnAddTensor");
	FAIL_IF(fk_inject(), CUDNN_STATUS_EXECUTION_FAILED);
	FAIL_IF(!handle_ok(handle) || !scalars(alpha, "alpha", beta, "beta", &b1), CUDNN_STATUS_BAD_PARAM);
	FAIL_IF(!OK_T(aDesc, "aDesc") || !OK_T(cDesc, "cDesc"), CUDNN_STATUS_BAD_PARAM);
	if (aDesc->nd != cDesc->nd || cDesc->nd > 5 || aDesc->dt != cDesc->dt) {
		fk_fail("aDesc %s and cDesc %s: same number of dimensions (at most 5) and type wanted",
			dims_str(aDesc->dim, aDesc->nd, s1, 128), dims_str(cDesc->dim, cDesc->nd, s2, 128));
		st = CUDNN_STATUS_BAD_PARAM;
		goto out;
	}
	for (int i = 0; i < cDesc->nd; i++)
		if (aDesc->dim[i] != cDesc->dim[i] && aDesc->dim[i] != 1) {
			fk_fail("aDesc %s does not broadcast to cDesc %s (dimension %d)",
				dims_str(aDesc->dim, aDesc->nd, s1, 128), dims_str(cDesc->dim, cDesc->nd, s2, 128), i);
			st = CUDNN_STATUS_BAD_PARAM;
			goto out;
		}
	la = tlayout(aDesc);
	lc = tlayout(cDesc);
	/* elementwise: C may be A itself */
	fk_arg("A", A, &la, FK_R, 1);
	fk_arg("C", C, &lc, FK_W | (b1 ? FK_R : 0), 1);
	if (fk_end() == 0)
		axpby(aDesc, A, cDesc, C, alpha, beta);
	return st;
out:
	fk_end();
	return st;
}

cudnnStatus_t cudnnTransformTensor(cudnnHandle_t handle, const void *alpha, const cudnnTensorDescriptor_t xDesc,
				   const void *x, const void *beta, const cudnnTensorDescriptor_t yDesc, void *y)
{
	cudnnStatus_t st = CUDNN_STATUS_SUCCESS;
	struct fk_layout lx, ly;
	bool b1;

	fk_call("cudnnTransformTensor");
	FAIL_IF(fk_inject(), CUDNN_STATUS_EXECUTION_FAILED);
	FAIL_IF(!handle_ok(handle) || !scalars(alpha, "alpha", beta, "beta", &b1), CUDNN_STATUS_BAD_PARAM);
	FAIL_IF(!OK_T(xDesc, "xDesc") || !OK_T(yDesc, "yDesc"), CUDNN_STATUS_BAD_PARAM);
	FAIL_IF(!need_same("xDesc", xDesc, "yDesc", yDesc), CUDNN_STATUS_BAD_PARAM);
	lx = tlayout(xDesc);
	ly = tlayout(yDesc);
	fk_arg("x", x, &lx, FK_R, 0);
	fk_arg("y", y, &ly, FK_W | (b1 ? FK_R : 0), 0);
	if (fk_end() == 0)
		axpby(xDesc, x, yDesc, y, alpha, beta);
	return st;
out:
	fk_end();
	return st;
}

/* ---- pooling ---- */

cudnnStatus_t cudnnCreatePoolingDescriptor(cudnnPoolingDescriptor_t *poolingDesc)
{
	if (!poolingDesc)
		return CUDNN_STATUS_BAD_PARAM;
	if (fk_inject())
		return CUDNN_STATUS_ALLOC_FAILED;
	*poolingDesc = (cudnnPoolingDescriptor_t)obj_new(sizeof(struct cudnnPoolingStruct), M_POOL, FK_OBJ_POOL);
	return *poolingDesc ? CUDNN_STATUS_SUCCESS : CUDNN_STATUS_ALLOC_FAILED;
}

cudnnStatus_t cudnnDestroyPoolingDescriptor(cudnnPoolingDescriptor_t poolingDesc)
{
	return obj_destroy("cudnnDestroyPoolingDescriptor", poolingDesc, M_POOL, FK_OBJ_POOL);
}

cudnnStatus_t cudnnSetPoolingNdDescriptor(cudnnPoolingDescriptor_t poolingDesc, const cudnnPoolingMode_t mode,
					  const cudnnNanPropagation_t maxpoolingNanOpt, int nbDims,
					  const int windowDimA[], const int paddingA[], const int strideA[])
{
	cudnnStatus_t st = CUDNN_STATUS_SUCCESS;

	fk_call("cudnnSetPoolingNdDescriptor");
	if (fk_inject())
		st = CUDNN_STATUS_BAD_PARAM;
	else if (!obj_ok(poolingDesc, M_POOL, FK_OBJ_POOL, "poolingDesc", false))
		st = CUDNN_STATUS_BAD_PARAM;
	else if (mode != CUDNN_POOLING_MAX && mode != CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING &&
		 mode != CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING && mode != CUDNN_POOLING_MAX_DETERMINISTIC) {
		fk_fail("mode %d", (int)mode);
		st = CUDNN_STATUS_BAD_PARAM;
	} else if (maxpoolingNanOpt != CUDNN_NOT_PROPAGATE_NAN && maxpoolingNanOpt != CUDNN_PROPAGATE_NAN) {
		fk_fail("maxpoolingNanOpt %d", (int)maxpoolingNanOpt);
		st = CUDNN_STATUS_BAD_PARAM;
	} else if (nbDims < 1 || nbDims > 3 || !windowDimA || !paddingA || !strideA) {
		fk_fail("nbDims %d (pooling has 1 to 3 spatial dimensions)", nbDims);
		st = CUDNN_STATUS_BAD_PARAM;
	} else {
		for (int i = 0; i < nbDims; i++)
			if (windowDimA[i] < 1 || paddingA[i] < 0 || strideA[i] < 1) {
				fk_fail("dimension %d: window %d, pad %d, stride %d", i, windowDimA[i], paddingA[i],
					strideA[i]);
				st = CUDNN_STATUS_BAD_PARAM;
			}
		if (st == CUDNN_STATUS_SUCCESS) {
			poolingDesc->mode = mode;
			poolingDesc->n = nbDims;
			memcpy(poolingDesc->win, windowDimA, (size_t)nbDims * sizeof(int));
			memcpy(poolingDesc->pad, paddingA, (size_t)nbDims * sizeof(int));
			memcpy(poolingDesc->stride, strideA, (size_t)nbDims * sizeof(int));
			poolingDesc->h.set = true;
		}
	}
	fk_end();
	return st;
}

/* y = pooling of x: N, C equal, each spatial 1 + (in + 2 pad - window) / stride. */
static bool pool_geometry(const struct cudnnPoolingStruct *p, const char *xn, const struct cudnnTensorStruct *x,
			  const char *yn, const struct cudnnTensorStruct *y)
{
	char s1[128], s2[128];
	int want[CUDNN_DIM_MAX];

	if (!obj_ok(p, M_POOL, FK_OBJ_POOL, "poolingDesc", true) || !OK_T(x, xn) || !OK_T(y, yn))
		return false;
	if (x->nd != p->n + 2 || y->nd != x->nd || x->nd < 4 || x->dt != y->dt) {
		fk_fail("%s has %d dimensions, %s %d, the pooling %d spatial (4 or 5 dimensions, one type)", xn, x->nd,
			yn, y->nd, p->n);
		return false;
	}
	want[0] = x->dim[0];
	want[1] = x->dim[1];
	for (int i = 0; i < p->n; i++) {
		int in = x->dim[2 + i] + 2 * p->pad[i];

		if (in < p->win[i]) {
			fk_fail("spatial dimension %d: window %d exceeds the padded input %d", i, p->win[i], in);
			return false;
		}
		want[2 + i] = 1 + (in - p->win[i]) / p->stride[i];
	}
	if (memcmp(want, y->dim, (size_t)y->nd * sizeof(int))) {
		fk_fail("%s is %s, pooling %s %s gives %s", yn, dims_str(y->dim, y->nd, s1, 128), xn,
			dims_str(x->dim, x->nd, s2, 64), dims_str(want, y->nd, s2 + 64, 64));
		return false;
	}
	return true;
}

cudnnStatus_t cudnnPoolingForward(cudnnHandle_t handle, const cudnnPoolingDescriptor_t poolingDesc, const void *alpha,
				  const cudnnTensorDescriptor_t xDesc, const void *x, const void *beta,
				  const cudnnTensorDescriptor_t yDesc, void *y)
{
	cudnnStatus_t st = CUDNN_STATUS_SUCCESS;
	struct fk_layout lx, ly;
	bool b1;

	fk_call("cudnnPoolingForward");
	FAIL_IF(fk_inject(), CUDNN_STATUS_EXECUTION_FAILED);
	FAIL_IF(!handle_ok(handle) || !scalars(alpha, "alpha", beta, "beta", &b1), CUDNN_STATUS_BAD_PARAM);
	FAIL_IF(!pool_geometry(poolingDesc, "xDesc", xDesc, "yDesc", yDesc), CUDNN_STATUS_BAD_PARAM);
	lx = tlayout(xDesc);
	ly = tlayout(yDesc);
	fk_arg("x", x, &lx, FK_R, 0);
	fk_arg("y", y, &ly, FK_W | (b1 ? FK_R : 0), 0);
out:
	fk_end();
	return st;
}

cudnnStatus_t cudnnPoolingBackward(cudnnHandle_t handle, const cudnnPoolingDescriptor_t poolingDesc,
				   const void *alpha, const cudnnTensorDescriptor_t yDesc, const void *y,
				   const cudnnTensorDescriptor_t dyDesc, const void *dy,
				   const cudnnTensorDescriptor_t xDesc, const void *x, const void *beta,
				   const cudnnTensorDescriptor_t dxDesc, void *dx)
{
	cudnnStatus_t st = CUDNN_STATUS_SUCCESS;
	struct fk_layout lx, ly, ldx, ldy;
	bool b1;
	unsigned xy;

	fk_call("cudnnPoolingBackward");
	FAIL_IF(fk_inject(), CUDNN_STATUS_EXECUTION_FAILED);
	FAIL_IF(!handle_ok(handle) || !scalars(alpha, "alpha", beta, "beta", &b1), CUDNN_STATUS_BAD_PARAM);
	FAIL_IF(!pool_geometry(poolingDesc, "xDesc", xDesc, "yDesc", yDesc), CUDNN_STATUS_BAD_PARAM);
	FAIL_IF(!OK_T(dyDesc, "dyDesc") || !OK_T(dxDesc, "dxDesc"), CUDNN_STATUS_BAD_PARAM);
	FAIL_IF(!need_same("yDesc", yDesc, "dyDesc", dyDesc) || !need_same("xDesc", xDesc, "dxDesc", dxDesc),
		CUDNN_STATUS_BAD_PARAM);
	lx = tlayout(xDesc);
	ly = tlayout(yDesc);
	ldx = tlayout(dxDesc);
	ldy = tlayout(dyDesc);
	/* a max pool's gradient goes to the input that was the maximum: x, y
	 * and dy are read; an average pool's depends on dy alone, so x and y
	 * need only be valid pointers */
	xy = poolingDesc->mode == CUDNN_POOLING_MAX || poolingDesc->mode == CUDNN_POOLING_MAX_DETERMINISTIC ? FK_R
													     : FK_BOUNDS;
	fk_arg("y", y, &ly, xy, 0);
	fk_arg("dy", dy, &ldy, FK_R, 0);
	fk_arg("x", x, &lx, xy, 0);
	fk_arg("dx", dx, &ldx, FK_W | (b1 ? FK_R : 0), 0);
out:
	fk_end();
	return st;
}

/* ---- activation ---- */

cudnnStatus_t cudnnCreateActivationDescriptor(cudnnActivationDescriptor_t *activationDesc)
{
	if (!activationDesc)
		return CUDNN_STATUS_BAD_PARAM;
	if (fk_inject())
		return CUDNN_STATUS_ALLOC_FAILED;
	*activationDesc = (cudnnActivationDescriptor_t)obj_new(sizeof(struct cudnnActivationStruct), M_ACT, FK_OBJ_ACT);
	return *activationDesc ? CUDNN_STATUS_SUCCESS : CUDNN_STATUS_ALLOC_FAILED;
}

cudnnStatus_t cudnnDestroyActivationDescriptor(cudnnActivationDescriptor_t activationDesc)
{
	return obj_destroy("cudnnDestroyActivationDescriptor", activationDesc, M_ACT, FK_OBJ_ACT);
}

cudnnStatus_t cudnnSetActivationDescriptor(cudnnActivationDescriptor_t activationDesc, cudnnActivationMode_t mode,
					   cudnnNanPropagation_t reluNanOpt, double coef)
{
	cudnnStatus_t st = CUDNN_STATUS_SUCCESS;

	fk_call("cudnnSetActivationDescriptor");
	if (fk_inject())
		st = CUDNN_STATUS_BAD_PARAM;
	else if (!obj_ok(activationDesc, M_ACT, FK_OBJ_ACT, "activationDesc", false))
		st = CUDNN_STATUS_BAD_PARAM;
	else if ((int)mode < (int)CUDNN_ACTIVATION_SIGMOID || (int)mode > (int)CUDNN_ACTIVATION_SWISH ||
		 (reluNanOpt != CUDNN_NOT_PROPAGATE_NAN && reluNanOpt != CUDNN_PROPAGATE_NAN) || !isfinite(coef)) {
		fk_fail("mode %d, nan %d, coef %g", (int)mode, (int)reluNanOpt, coef);
		st = CUDNN_STATUS_BAD_PARAM;
	} else {
		activationDesc->mode = mode;
		activationDesc->coef = coef;
		activationDesc->h.set = true;
	}
	fk_end();
	return st;
}

cudnnStatus_t cudnnActivationForward(cudnnHandle_t handle, cudnnActivationDescriptor_t activationDesc,
				     const void *alpha, const cudnnTensorDescriptor_t xDesc, const void *x,
				     const void *beta, const cudnnTensorDescriptor_t yDesc, void *y)
{
	cudnnStatus_t st = CUDNN_STATUS_SUCCESS;
	struct fk_layout lx, ly;
	bool b1;

	fk_call("cudnnActivationForward");
	FAIL_IF(fk_inject(), CUDNN_STATUS_EXECUTION_FAILED);
	FAIL_IF(!handle_ok(handle) || !scalars(alpha, "alpha", beta, "beta", &b1), CUDNN_STATUS_BAD_PARAM);
	FAIL_IF(!obj_ok(activationDesc, M_ACT, FK_OBJ_ACT, "activationDesc", true), CUDNN_STATUS_BAD_PARAM);
	FAIL_IF(!OK_T(xDesc, "xDesc") || !OK_T(yDesc, "yDesc") || !need_same("xDesc", xDesc, "yDesc", yDesc),
		CUDNN_STATUS_BAD_PARAM);
	lx = tlayout(xDesc);
	ly = tlayout(yDesc);
	/* "This function allows in-place operation: x and y may be the same" */
	fk_arg("x", x, &lx, FK_R, 1);
	fk_arg("y", y, &ly, FK_W | (b1 ? FK_R : 0), 1);
out:
	fk_end();
	return st;
}

cudnnStatus_t cudnnActivationBackward(cudnnHandle_t handle, cudnnActivationDescriptor_t activationDesc,
				      const void *alpha, const cudnnTensorDescriptor_t yDesc, const void *y,
				      const cudnnTensorDescriptor_t dyDesc, const void *dy,
				      const cudnnTensorDescriptor_t xDesc, const void *x, const void *beta,
				      const cudnnTensorDescriptor_t dxDesc, void *dx)
{
	cudnnStatus_t st = CUDNN_STATUS_SUCCESS;
	struct fk_layout lx, ly, ldx, ldy;
	bool b1;

	fk_call("cudnnActivationBackward");
	FAIL_IF(fk_inject(), CUDNN_STATUS_EXECUTION_FAILED);
	FAIL_IF(!handle_ok(handle) || !scalars(alpha, "alpha", beta, "beta", &b1), CUDNN_STATUS_BAD_PARAM);
	FAIL_IF(!obj_ok(activationDesc, M_ACT, FK_OBJ_ACT, "activationDesc", true), CUDNN_STATUS_BAD_PARAM);
	FAIL_IF(!OK_T(yDesc, "yDesc") || !OK_T(dyDesc, "dyDesc") || !OK_T(xDesc, "xDesc") || !OK_T(dxDesc, "dxDesc"),
		CUDNN_STATUS_BAD_PARAM);
	FAIL_IF(!need_same("yDesc", yDesc, "dyDesc", dyDesc) || !need_same("xDesc", xDesc, "dxDesc", dxDesc) ||
			!need_same("xDesc", xDesc, "yDesc", yDesc),
		CUDNN_STATUS_BAD_PARAM);
	lx = tlayout(xDesc);
	ly = tlayout(yDesc);
	ldx = tlayout(dxDesc);
	ldy = tlayout(dyDesc);
	/* in place: dy and dx may be the same */
	fk_arg("y", y, &ly, FK_R, 0);
	fk_arg("dy", dy, &ldy, FK_R, 1);
	fk_arg("x", x, &lx, FK_R, 0);
	fk_arg("dx", dx, &ldx, FK_W | (b1 ? FK_R : 0), 1);
out:
	fk_end();
	return st;
}

/* ---- LRN ---- */

cudnnStatus_t cudnnCreateLRNDescriptor(cudnnLRNDescriptor_t *normDesc)
{
	if (!normDesc)
		return CUDNN_STATUS_BAD_PARAM;
	if (fk_inject())
		return CUDNN_STATUS_ALLOC_FAILED;
	*normDesc = (cudnnLRNDescriptor_t)obj_new(sizeof(struct cudnnLRNStruct), M_LRN, FK_OBJ_LRN);
	return *normDesc ? CUDNN_STATUS_SUCCESS : CUDNN_STATUS_ALLOC_FAILED;
}

cudnnStatus_t cudnnDestroyLRNDescriptor(cudnnLRNDescriptor_t lrnDesc)
{
	return obj_destroy("cudnnDestroyLRNDescriptor", lrnDesc, M_LRN, FK_OBJ_LRN);
}

cudnnStatus_t cudnnSetLRNDescriptor(cudnnLRNDescriptor_t normDesc, unsigned lrnN, double lrnAlpha, double lrnBeta,
				    double lrnK)
{
	cudnnStatus_t st = CUDNN_STATUS_SUCCESS;

	fk_call("cudnnSetLRNDescriptor");
	if (fk_inject())
		st = CUDNN_STATUS_BAD_PARAM;
	else if (!obj_ok(normDesc, M_LRN, FK_OBJ_LRN, "normDesc", false))
		st = CUDNN_STATUS_BAD_PARAM;
	else if (lrnN < CUDNN_LRN_MIN_N || lrnN > CUDNN_LRN_MAX_N || lrnK < CUDNN_LRN_MIN_K ||
		 lrnBeta < CUDNN_LRN_MIN_BETA || !isfinite(lrnAlpha)) {
		fk_fail("n %u (%d to %d), k %g (>= %g), beta %g (>= %g)", lrnN, CUDNN_LRN_MIN_N, CUDNN_LRN_MAX_N, lrnK,
			CUDNN_LRN_MIN_K, lrnBeta, CUDNN_LRN_MIN_BETA);
		st = CUDNN_STATUS_BAD_PARAM;
	} else {
		normDesc->n = lrnN;
		normDesc->alpha = lrnAlpha;
		normDesc->beta = lrnBeta;
		normDesc->k = lrnK;
		normDesc->h.set = true;
	}
	fk_end();
	return st;
}

cudnnStatus_t cudnnLRNCrossChannelForward(cudnnHandle_t handle, cudnnLRNDescriptor_t normDesc,
					  cudnnLRNMode_t lrnMode, const void *alpha,
					  const cudnnTensorDescriptor_t xDesc, const void *x, const void *beta,
					  const cudnnTensorDescriptor_t yDesc, void *y)
{
	cudnnStatus_t st = CUDNN_STATUS_SUCCESS;
	struct fk_layout lx, ly;
	bool b1;

	fk_call("cudnnLRNCrossChannelForward");
	FAIL_IF(fk_inject(), CUDNN_STATUS_EXECUTION_FAILED);
	FAIL_IF(!handle_ok(handle) || !scalars(alpha, "alpha", beta, "beta", &b1), CUDNN_STATUS_BAD_PARAM);
	FAIL_IF(!obj_ok(normDesc, M_LRN, FK_OBJ_LRN, "normDesc", true), CUDNN_STATUS_BAD_PARAM);
	if (lrnMode != CUDNN_LRN_CROSS_CHANNEL_DIM1) {
		fk_fail("lrnMode %d", (int)lrnMode);
		st = CUDNN_STATUS_BAD_PARAM;
		goto out;
	}
	FAIL_IF(!OK_T(xDesc, "xDesc") || !OK_T(yDesc, "yDesc") || !need_same("xDesc", xDesc, "yDesc", yDesc),
		CUDNN_STATUS_BAD_PARAM);
	if (xDesc->nd < 4 || xDesc->nd > 5) {
		fk_fail("xDesc has %d dimensions (LRN takes 4 or 5)", xDesc->nd);
		st = CUDNN_STATUS_NOT_SUPPORTED;
		goto out;
	}
	lx = tlayout(xDesc);
	ly = tlayout(yDesc);
	fk_arg("x", x, &lx, FK_R, 0);
	fk_arg("y", y, &ly, FK_W | (b1 ? FK_R : 0), 0);
out:
	fk_end();
	return st;
}

cudnnStatus_t cudnnLRNCrossChannelBackward(cudnnHandle_t handle, cudnnLRNDescriptor_t normDesc,
					   cudnnLRNMode_t lrnMode, const void *alpha,
					   const cudnnTensorDescriptor_t yDesc, const void *y,
					   const cudnnTensorDescriptor_t dyDesc, const void *dy,
					   const cudnnTensorDescriptor_t xDesc, const void *x, const void *beta,
					   const cudnnTensorDescriptor_t dxDesc, void *dx)
{
	cudnnStatus_t st = CUDNN_STATUS_SUCCESS;
	struct fk_layout lx, ly, ldx, ldy;
	bool b1;

	fk_call("cudnnLRNCrossChannelBackward");
	FAIL_IF(fk_inject(), CUDNN_STATUS_EXECUTION_FAILED);
	FAIL_IF(!handle_ok(handle) || !scalars(alpha, "alpha", beta, "beta", &b1), CUDNN_STATUS_BAD_PARAM);
	FAIL_IF(!obj_ok(normDesc, M_LRN, FK_OBJ_LRN, "normDesc", true), CUDNN_STATUS_BAD_PARAM);
	if (lrnMode != CUDNN_LRN_CROSS_CHANNEL_DIM1) {
		fk_fail("lrnMode %d", (int)lrnMode);
		st = CUDNN_STATUS_BAD_PARAM;
		goto out;
	}
	FAIL_IF(!OK_T(yDesc, "yDesc") || !OK_T(dyDesc, "dyDesc") || !OK_T(xDesc, "xDesc") || !OK_T(dxDesc, "dxDesc"),
		CUDNN_STATUS_BAD_PARAM);
	FAIL_IF(!need_same("yDesc", yDesc, "dyDesc", dyDesc) || !need_same("xDesc", xDesc, "dxDesc", dxDesc) ||
			!need_same("xDesc", xDesc, "yDesc", yDesc),
		CUDNN_STATUS_BAD_PARAM);
	lx = tlayout(xDesc);
	ly = tlayout(yDesc);
	ldx = tlayout(dxDesc);
	ldy = tlayout(dyDesc);
	fk_arg("y", y, &ly, FK_R, 0);
	fk_arg("dy", dy, &ldy, FK_R, 0);
	fk_arg("x", x, &lx, FK_R, 0);
	fk_arg("dx", dx, &ldx, FK_W | (b1 ? FK_R : 0), 0);
out:
	fk_end();
	return st;
}

/* ---- batch norm ---- */

static cudnnDataType_t bn_type(cudnnDataType_t x)
{
	return x == CUDNN_DATA_DOUBLE ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
}

cudnnStatus_t cudnnDeriveBNTensorDescriptor(cudnnTensorDescriptor_t derivedBnDesc,
					    const cudnnTensorDescriptor_t xDesc, cudnnBatchNormMode_t mode)
{
	cudnnStatus_t st = CUDNN_STATUS_SUCCESS;

	fk_call("cudnnDeriveBNTensorDescriptor");
	if (fk_inject())
		st = CUDNN_STATUS_BAD_PARAM;
	else if (!obj_ok(derivedBnDesc, M_TENSOR, FK_OBJ_TENSOR, "derivedBnDesc", false) || !OK_T(xDesc, "xDesc"))
		st = CUDNN_STATUS_BAD_PARAM;
	else if (xDesc->nd != 4 && xDesc->nd != 5) {
		fk_fail("xDesc has %d dimensions (batch norm takes 4 or 5)", xDesc->nd);
		st = CUDNN_STATUS_BAD_PARAM;
	} else if (mode != CUDNN_BATCHNORM_SPATIAL && mode != CUDNN_BATCHNORM_PER_ACTIVATION &&
		   mode != CUDNN_BATCHNORM_SPATIAL_PERSISTENT) {
		fk_fail("mode %d", (int)mode);
		st = CUDNN_STATUS_BAD_PARAM;
	} else {
		int s = 1;

		derivedBnDesc->dt = bn_type(xDesc->dt);
		derivedBnDesc->nd = xDesc->nd;
		derivedBnDesc->dim[0] = 1;
		for (int i = 1; i < xDesc->nd; i++)
			derivedBnDesc->dim[i] = i == 1 || mode == CUDNN_BATCHNORM_PER_ACTIVATION ? xDesc->dim[i] : 1;
		for (int i = xDesc->nd - 1; i >= 0; i--) {
			derivedBnDesc->str[i] = s;
			s *= derivedBnDesc->dim[i];
		}
		derivedBnDesc->h.set = true;
	}
	fk_end();
	return st;
}

/* The shared descriptor of scale, bias, mean and variance: [1, C, 1...]. */
static bool bn_param_desc(const char *pn, const struct cudnnTensorStruct *p, const struct cudnnTensorStruct *x,
			  cudnnBatchNormMode_t mode)
{
	char s1[128], s2[128];
	bool ok;

	if (!OK_T(p, pn))
		return false;
	if (mode != CUDNN_BATCHNORM_SPATIAL && mode != CUDNN_BATCHNORM_SPATIAL_PERSISTENT) {
		fk_fail("mode %d (the fake checks spatial batch norm only)", (int)mode);
		return false;
	}
	ok = p->nd == x->nd && p->dt == bn_type(x->dt) && p->dim[0] == 1 && p->dim[1] == x->dim[1];
	for (int i = 2; ok && i < p->nd; i++)
		ok = p->dim[i] == 1;
	if (!ok)
		fk_fail("%s %s (type %d) is not the derived [1, C, 1...] of xDesc %s", pn,
			dims_str(p->dim, p->nd, s1, 128), (int)p->dt, dims_str(x->dim, x->nd, s2, 128));
	return ok;
}

cudnnStatus_t cudnnBatchNormalizationForwardTraining(cudnnHandle_t handle, cudnnBatchNormMode_t mode,
						     const void *alpha, const void *beta,
						     const cudnnTensorDescriptor_t xDesc, const void *x,
						     const cudnnTensorDescriptor_t yDesc, void *y,
						     const cudnnTensorDescriptor_t bnScaleBiasMeanVarDesc,
						     const void *bnScale, const void *bnBias,
						     double exponentialAverageFactor, void *resultRunningMean,
						     void *resultRunningVariance, double epsilon,
						     void *resultSaveMean, void *resultSaveInvVariance)
{
	cudnnStatus_t st = CUDNN_STATUS_SUCCESS;
	struct fk_layout lx, ly, lp;
	bool b1;

	fk_call("cudnnBatchNormalizationForwardTraining");
	FAIL_IF(fk_inject(), CUDNN_STATUS_EXECUTION_FAILED);
	FAIL_IF(!handle_ok(handle) || !scalars(alpha, "alpha", beta, "beta", &b1), CUDNN_STATUS_BAD_PARAM);
	FAIL_IF(!OK_T(xDesc, "xDesc") || !OK_T(yDesc, "yDesc") || !need_same("xDesc", xDesc, "yDesc", yDesc),
		CUDNN_STATUS_BAD_PARAM);
	FAIL_IF(!bn_param_desc("bnScaleBiasMeanVarDesc", bnScaleBiasMeanVarDesc, xDesc, mode), CUDNN_STATUS_BAD_PARAM);
	if (epsilon < CUDNN_BN_MIN_EPSILON || !isfinite(exponentialAverageFactor)) {
		fk_fail("epsilon %g (>= %g), exponentialAverageFactor %g", epsilon, CUDNN_BN_MIN_EPSILON,
			exponentialAverageFactor);
		st = CUDNN_STATUS_BAD_PARAM;
		goto out;
	}
	if (!resultRunningMean != !resultRunningVariance || !resultSaveMean != !resultSaveInvVariance) {
		fk_fail("running mean %p and variance %p, saved mean %p and inverse variance %p: each pair both NULL or "
			"neither",
			resultRunningMean, resultRunningVariance, resultSaveMean, resultSaveInvVariance);
		st = CUDNN_STATUS_BAD_PARAM;
		goto out;
	}
	lx = tlayout(xDesc);
	ly = tlayout(yDesc);
	lp = tlayout(bnScaleBiasMeanVarDesc);
	fk_arg("x", x, &lx, FK_R, 0);
	fk_arg("y", y, &ly, FK_W | (b1 ? FK_R : 0), 0);
	fk_arg("bnScale", bnScale, &lp, FK_R, 0);
	fk_arg("bnBias", bnBias, &lp, FK_R, 0);
	if (resultRunningMean) {
		fk_arg("resultRunningMean", resultRunningMean, &lp, FK_R | FK_W, 0);
		fk_arg("resultRunningVariance", resultRunningVariance, &lp, FK_R | FK_W, 0);
	}
	if (resultSaveMean) {
		fk_arg("resultSaveMean", resultSaveMean, &lp, FK_W, 0);
		fk_arg("resultSaveInvVariance", resultSaveInvVariance, &lp, FK_W, 0);
	}
out:
	fk_end();
	return st;
}

cudnnStatus_t cudnnBatchNormalizationBackward(cudnnHandle_t handle, cudnnBatchNormMode_t mode,
					      const void *alphaDataDiff, const void *betaDataDiff,
					      const void *alphaParamDiff, const void *betaParamDiff,
					      const cudnnTensorDescriptor_t xDesc, const void *x,
					      const cudnnTensorDescriptor_t dyDesc, const void *dy,
					      const cudnnTensorDescriptor_t dxDesc, void *dx,
					      const cudnnTensorDescriptor_t dBnScaleBiasDesc, const void *bnScale,
					      void *dBnScaleResult, void *dBnBiasResult, double epsilon,
					      const void *savedMean, const void *savedInvVariance)
{
	cudnnStatus_t st = CUDNN_STATUS_SUCCESS;
	struct fk_layout lx, ldy, ldx, lp;
	bool bd, bp;

	fk_call("cudnnBatchNormalizationBackward");
	FAIL_IF(fk_inject(), CUDNN_STATUS_EXECUTION_FAILED);
	FAIL_IF(!handle_ok(handle) || !scalars(alphaDataDiff, "alphaDataDiff", betaDataDiff, "betaDataDiff", &bd) ||
			!scalars(alphaParamDiff, "alphaParamDiff", betaParamDiff, "betaParamDiff", &bp),
		CUDNN_STATUS_BAD_PARAM);
	FAIL_IF(!OK_T(xDesc, "xDesc") || !OK_T(dyDesc, "dyDesc") || !OK_T(dxDesc, "dxDesc"), CUDNN_STATUS_BAD_PARAM);
	FAIL_IF(!need_same("xDesc", xDesc, "dyDesc", dyDesc) || !need_same("xDesc", xDesc, "dxDesc", dxDesc),
		CUDNN_STATUS_BAD_PARAM);
	FAIL_IF(!bn_param_desc("dBnScaleBiasDesc", dBnScaleBiasDesc, xDesc, mode), CUDNN_STATUS_BAD_PARAM);
	if (epsilon < CUDNN_BN_MIN_EPSILON) {
		fk_fail("epsilon %g", epsilon);
		st = CUDNN_STATUS_BAD_PARAM;
		goto out;
	}
	if (!savedMean != !savedInvVariance) {
		fk_fail("savedMean %p and savedInvVariance %p: both NULL or neither", savedMean, savedInvVariance);
		st = CUDNN_STATUS_BAD_PARAM;
		goto out;
	}
	if (!x || !dy || !dx || !bnScale || !dBnScaleResult || !dBnBiasResult) {
		fk_fail("x %p, dy %p, dx %p, bnScale %p, dBnScaleResult %p, dBnBiasResult %p: none may be NULL", x, dy,
			dx, bnScale, dBnScaleResult, dBnBiasResult);
		st = CUDNN_STATUS_BAD_PARAM;
		goto out;
	}
	lx = tlayout(xDesc);
	ldy = tlayout(dyDesc);
	ldx = tlayout(dxDesc);
	lp = tlayout(dBnScaleBiasDesc);
	fk_arg("x", x, &lx, FK_R, 0);
	fk_arg("dy", dy, &ldy, FK_R, 0);
	fk_arg("dx", dx, &ldx, FK_W | (bd ? FK_R : 0), 0);
	fk_arg("bnScale", bnScale, &lp, FK_R, 0);
	fk_arg("dBnScaleResult", dBnScaleResult, &lp, FK_W | (bp ? FK_R : 0), 0);
	fk_arg("dBnBiasResult", dBnBiasResult, &lp, FK_W | (bp ? FK_R : 0), 0);
	if (savedMean) {
		fk_arg("savedMean", savedMean, &lp, FK_R, 0);
		fk_arg("savedInvVariance", savedInvVariance, &lp, FK_R, 0);
	}
out:
	fk_end();
	return st;
}

/* ---- softmax ---- */

static bool softmax_modes(cudnnSoftmaxAlgorithm_t algo, cudnnSoftmaxMode_t mode)
{
	if ((algo != CUDNN_SOFTMAX_FAST && algo != CUDNN_SOFTMAX_ACCURATE && algo != CUDNN_SOFTMAX_LOG) ||
	    (mode != CUDNN_SOFTMAX_MODE_INSTANCE && mode != CUDNN_SOFTMAX_MODE_CHANNEL)) {
		fk_fail("algo %d, mode %d", (int)algo, (int)mode);
		return false;
	}
	return true;
}

cudnnStatus_t cudnnSoftmaxForward(cudnnHandle_t handle, cudnnSoftmaxAlgorithm_t algo, cudnnSoftmaxMode_t mode,
				  const void *alpha, const cudnnTensorDescriptor_t xDesc, const void *x,
				  const void *beta, const cudnnTensorDescriptor_t yDesc, void *y)
{
	cudnnStatus_t st = CUDNN_STATUS_SUCCESS;
	struct fk_layout lx, ly;
	bool b1;

	fk_call("cudnnSoftmaxForward");
	FAIL_IF(fk_inject(), CUDNN_STATUS_EXECUTION_FAILED);
	FAIL_IF(!handle_ok(handle) || !scalars(alpha, "alpha", beta, "beta", &b1) || !softmax_modes(algo, mode),
		CUDNN_STATUS_BAD_PARAM);
	FAIL_IF(!OK_T(xDesc, "xDesc") || !OK_T(yDesc, "yDesc") || !need_same("xDesc", xDesc, "yDesc", yDesc),
		CUDNN_STATUS_BAD_PARAM);
	if (xDesc->nd < 4 || xDesc->nd > 5) {
		fk_fail("xDesc has %d dimensions (softmax takes 4 or 5)", xDesc->nd);
		st = CUDNN_STATUS_BAD_PARAM;
		goto out;
	}
	lx = tlayout(xDesc);
	ly = tlayout(yDesc);
	fk_arg("x", x, &lx, FK_R, 0);
	fk_arg("y", y, &ly, FK_W | (b1 ? FK_R : 0), 0);
out:
	fk_end();
	return st;
}

cudnnStatus_t cudnnSoftmaxBackward(cudnnHandle_t handle, cudnnSoftmaxAlgorithm_t algo, cudnnSoftmaxMode_t mode,
				   const void *alpha, const cudnnTensorDescriptor_t yDesc, const void *y,
				   const cudnnTensorDescriptor_t dyDesc, const void *dy, const void *beta,
				   const cudnnTensorDescriptor_t dxDesc, void *dx)
{
	cudnnStatus_t st = CUDNN_STATUS_SUCCESS;
	struct fk_layout ly, ldy, ldx;
	bool b1;

	fk_call("cudnnSoftmaxBackward");
	FAIL_IF(fk_inject(), CUDNN_STATUS_EXECUTION_FAILED);
	FAIL_IF(!handle_ok(handle) || !scalars(alpha, "alpha", beta, "beta", &b1) || !softmax_modes(algo, mode),
		CUDNN_STATUS_BAD_PARAM);
	FAIL_IF(!OK_T(yDesc, "yDesc") || !OK_T(dyDesc, "dyDesc") || !OK_T(dxDesc, "dxDesc"), CUDNN_STATUS_BAD_PARAM);
	FAIL_IF(!need_same("yDesc", yDesc, "dyDesc", dyDesc) || !need_same("yDesc", yDesc, "dxDesc", dxDesc),
		CUDNN_STATUS_BAD_PARAM);
	ly = tlayout(yDesc);
	ldy = tlayout(dyDesc);
	ldx = tlayout(dxDesc);
	fk_arg("y", y, &ly, FK_R, 0);
	fk_arg("dy", dy, &ldy, FK_R, 0);
	fk_arg("dx", dx, &ldx, FK_W | (b1 ? FK_R : 0), 0);
out:
	fk_end();
	return st;
}

/* ---- dropout ---- */

#define STATES_BYTES ((size_t)1 << 20)

cudnnStatus_t cudnnCreateDropoutDescriptor(cudnnDropoutDescriptor_t *dropoutDesc)
{
	if (!dropoutDesc)
		return CUDNN_STATUS_BAD_PARAM;
	if (fk_inject())
		return CUDNN_STATUS_ALLOC_FAILED;
	*dropoutDesc = (cudnnDropoutDescriptor_t)obj_new(sizeof(struct cudnnDropoutStruct), M_DROP, FK_OBJ_DROPOUT);
	return *dropoutDesc ? CUDNN_STATUS_SUCCESS : CUDNN_STATUS_ALLOC_FAILED;
}

cudnnStatus_t cudnnDestroyDropoutDescriptor(cudnnDropoutDescriptor_t dropoutDesc)
{
	return obj_destroy("cudnnDestroyDropoutDescriptor", dropoutDesc, M_DROP, FK_OBJ_DROPOUT);
}

cudnnStatus_t cudnnDropoutGetStatesSize(cudnnHandle_t handle, size_t *sizeInBytes)
{
	cudnnStatus_t st = CUDNN_STATUS_SUCCESS;

	fk_call("cudnnDropoutGetStatesSize");
	if (fk_inject())
		st = CUDNN_STATUS_INTERNAL_ERROR;
	else if (!handle_ok(handle) || !sizeInBytes)
		st = CUDNN_STATUS_BAD_PARAM;
	else
		*sizeInBytes = STATES_BYTES;
	fk_end();
	return st;
}

/* One byte per element (memplan-net(5)'s mask; MIOpen's too). */
static size_t reserve_of(const struct cudnnTensorStruct *x)
{
	size_t n = 1;

	for (int i = 0; i < x->nd; i++)
		n *= (size_t)x->dim[i];
	return n;
}

cudnnStatus_t cudnnDropoutGetReserveSpaceSize(cudnnTensorDescriptor_t xdesc, size_t *sizeInBytes)
{
	cudnnStatus_t st = CUDNN_STATUS_SUCCESS;

	fk_call("cudnnDropoutGetReserveSpaceSize");
	if (fk_inject())
		st = CUDNN_STATUS_INTERNAL_ERROR;
	else if (!OK_T(xdesc, "xdesc") || !sizeInBytes)
		st = CUDNN_STATUS_BAD_PARAM;
	else
		*sizeInBytes = reserve_of(xdesc);
	fk_end();
	return st;
}

cudnnStatus_t cudnnSetDropoutDescriptor(cudnnDropoutDescriptor_t dropoutDesc, cudnnHandle_t handle, float dropout,
					void *states, size_t stateSizeInBytes, unsigned long long seed)
{
	cudnnStatus_t st = CUDNN_STATUS_SUCCESS;
	struct fk_layout ls = fk_bytes(stateSizeInBytes);

	(void)seed;
	fk_call("cudnnSetDropoutDescriptor");
	if (fk_inject()) {
		st = CUDNN_STATUS_BAD_PARAM;
		goto out;
	}
	FAIL_IF(!handle_ok(handle) || !obj_ok(dropoutDesc, M_DROP, FK_OBJ_DROPOUT, "dropoutDesc", false),
		CUDNN_STATUS_BAD_PARAM);
	if (!(dropout >= 0 && dropout < 1)) {
		fk_fail("dropout %g", (double)dropout);
		st = CUDNN_STATUS_BAD_PARAM;
		goto out;
	}
	if (states && stateSizeInBytes < STATES_BYTES) {
		fk_fail("stateSizeInBytes %zu < cudnnDropoutGetStatesSize's %zu", stateSizeInBytes, STATES_BYTES);
		st = CUDNN_STATUS_INVALID_VALUE;
		goto out;
	}
	/* the random states are initialised here (a kernel on the stream) */
	if (states)
		fk_arg("states", states, &ls, FK_W, 0);
	dropoutDesc->p = dropout;
	dropoutDesc->states = states;
	dropoutDesc->state_bytes = stateSizeInBytes;
	dropoutDesc->h.set = true;
out:
	fk_end();
	return st;
}

static bool dropout_args(cudnnDropoutDescriptor_t d, const struct cudnnTensorStruct *x, void *reserve, size_t have)
{
	struct fk_layout ls;

	if (!obj_ok(d, M_DROP, FK_OBJ_DROPOUT, "dropoutDesc", true))
		return false;
	if (!d->states) {
		fk_fail("the dropout descriptor has no states");
		return false;
	}
	if (have < reserve_of(x)) {
		fk_fail("reserveSpaceSizeInBytes %zu < cudnnDropoutGetReserveSpaceSize's %zu", have, reserve_of(x));
		return false;
	}
	ls = fk_bytes(d->state_bytes);
	fk_arg("states", d->states, &ls, FK_R | FK_W, 0);
	ls = fk_bytes(have);
	fk_arg("reserveSpace (whole size)", reserve, &ls, FK_BOUNDS, 0);
	return true;
}

cudnnStatus_t cudnnDropoutForward(cudnnHandle_t handle, const cudnnDropoutDescriptor_t dropoutDesc,
				  const cudnnTensorDescriptor_t xdesc, const void *x, const cudnnTensorDescriptor_t ydesc,
				  void *y, void *reserveSpace, size_t reserveSpaceSizeInBytes)
{
	cudnnStatus_t st = CUDNN_STATUS_SUCCESS;
	struct fk_layout lx, ly, lr;

	fk_call("cudnnDropoutForward");
	FAIL_IF(fk_inject(), CUDNN_STATUS_EXECUTION_FAILED);
	FAIL_IF(!handle_ok(handle), CUDNN_STATUS_BAD_PARAM);
	FAIL_IF(!OK_T(xdesc, "xdesc") || !OK_T(ydesc, "ydesc") || !need_same("xdesc", xdesc, "ydesc", ydesc),
		CUDNN_STATUS_BAD_PARAM);
	FAIL_IF(!dropout_args(dropoutDesc, xdesc, reserveSpace, reserveSpaceSizeInBytes), CUDNN_STATUS_BAD_PARAM);
	lx = tlayout(xdesc);
	ly = tlayout(ydesc);
	lr = fk_bytes(reserve_of(xdesc));
	fk_arg("x", x, &lx, FK_R, 0);
	fk_arg("y", y, &ly, FK_W, 0);
	fk_arg("reserveSpace", reserveSpace, &lr, FK_W, 0);
out:
	fk_end();
	return st;
}

cudnnStatus_t cudnnDropoutBackward(cudnnHandle_t handle, const cudnnDropoutDescriptor_t dropoutDesc,
				   const cudnnTensorDescriptor_t dydesc, const void *dy,
				   const cudnnTensorDescriptor_t dxdesc, void *dx, void *reserveSpace,
				   size_t reserveSpaceSizeInBytes)
{
	cudnnStatus_t st = CUDNN_STATUS_SUCCESS;
	struct fk_layout ldy, ldx, lr;

	fk_call("cudnnDropoutBackward");
	FAIL_IF(fk_inject(), CUDNN_STATUS_EXECUTION_FAILED);
	FAIL_IF(!handle_ok(handle), CUDNN_STATUS_BAD_PARAM);
	FAIL_IF(!OK_T(dydesc, "dydesc") || !OK_T(dxdesc, "dxdesc") || !need_same("dydesc", dydesc, "dxdesc", dxdesc),
		CUDNN_STATUS_BAD_PARAM);
	FAIL_IF(!dropout_args(dropoutDesc, dydesc, reserveSpace, reserveSpaceSizeInBytes), CUDNN_STATUS_BAD_PARAM);
	ldy = tlayout(dydesc);
	ldx = tlayout(dxdesc);
	lr = fk_bytes(reserve_of(dydesc));
	fk_arg("dy", dy, &ldy, FK_R, 0);
	fk_arg("dx", dx, &ldx, FK_W, 0);
	fk_arg("reserveSpace", reserveSpace, &lr, FK_R, 0);
out:
	fk_end();
	return st;
}
