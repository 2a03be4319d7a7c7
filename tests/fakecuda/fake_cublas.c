/*
 * fake_cublas: the cuBLAS functions verify/kern_cuda.cu loads (its
 * KERN_CUBLAS list and cublasGemmEx), built as libcublas.so.13 for
 * tests/unit/test_kern.cc (fakecuda.h).  cublasGemmEx checks what the
 * cuBLAS reference requires of its arguments (m, n, k >= 0; lda >= m or k
 * and ldb >= k or n as the operations say, ldc >= m; a type combination
 * valid for the compute type; host scalars), that each column-major matrix
 * lies inside one allocation, and that C overlaps neither A nor B; then, in
 * float32 when the test asks (fk_values), computes a sample of C's elements
 * for it to check.
 */
#include "fakecuda.h"

#include <cublas_v2.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

__attribute__((constructor)) static void loaded(void)
{
	fk_loaded_mark(2);
}

#define M_BLAS 0x424c4153

struct cublasContext {
	uint32_t magic;
	bool live;
	cudaStream_t stream;
};

cublasStatus_t cublasCreate_v2(cublasHandle_t *handle)
{
	struct cublasContext *h;

	if (!handle)
		return CUBLAS_STATUS_INVALID_VALUE;
	if (fk_inject())
		return CUBLAS_STATUS_ALLOC_FAILED;
	h = (struct cublasContext *)calloc(1, sizeof(*h));
	if (!h)
		return CUBLAS_STATUS_ALLOC_FAILED;
	h->magic = M_BLAS;
	h->live = true;
	fk_obj_new(FK_OBJ_CUBLAS);
	*handle = h;
	return CUBLAS_STATUS_SUCCESS;
}

static bool handle_ok(const char *fn, cublasHandle_t h)
{
	if (!h || h->magic != M_BLAS || !h->live) {
		fk_violation(fn, "not a live cuBLAS handle");
		return false;
	}
	return true;
}

cublasStatus_t cublasDestroy_v2(cublasHandle_t handle)
{
	if (!handle_ok("cublasDestroy_v2", handle))
		return CUBLAS_STATUS_NOT_INITIALIZED;
	handle->live = false;
	handle->magic = 0;
	fk_obj_gone(FK_OBJ_CUBLAS);
	free(handle);
	return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetStream_v2(cublasHandle_t handle, cudaStream_t streamId)
{
	if (fk_inject())
		return CUBLAS_STATUS_INTERNAL_ERROR;
	if (!handle_ok("cublasSetStream_v2", handle))
		return CUBLAS_STATUS_NOT_INITIALIZED;
	handle->stream = streamId;
	return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGetProperty(libraryPropertyType type, int *value)
{
	if (!value)
		return CUBLAS_STATUS_INVALID_VALUE;
	switch (type) {
	case MAJOR_VERSION: *value = CUBLAS_VER_MAJOR; return CUBLAS_STATUS_SUCCESS;
	case MINOR_VERSION: *value = CUBLAS_VER_MINOR; return CUBLAS_STATUS_SUCCESS;
	case PATCH_LEVEL: *value = CUBLAS_VER_PATCH; return CUBLAS_STATUS_SUCCESS;
	default: return CUBLAS_STATUS_INVALID_VALUE;
	}
}

static uint32_t type_size(cudaDataType t)
{
	switch (t) {
	case CUDA_R_32F: return 4;
	case CUDA_R_64F: return 8;
	case CUDA_R_16F: case CUDA_R_16BF: return 2;
	case CUDA_R_8I: return 1;
	case CUDA_R_32I: return 4;
	default: return 0;
	}
}

/* The type combinations the cuBLAS reference lists for cublasGemmEx with
 * these compute types (real types only). */
static bool types_ok(cublasComputeType_t ct, cudaDataType a, cudaDataType b, cudaDataType c)
{
	if (a != b)
		return false;
	switch (ct) {
	case CUBLAS_COMPUTE_32F: case CUBLAS_COMPUTE_32F_PEDANTIC:
	case CUBLAS_COMPUTE_32F_FAST_16F: case CUBLAS_COMPUTE_32F_FAST_16BF: case CUBLAS_COMPUTE_32F_FAST_TF32:
		return (a == CUDA_R_32F && c == CUDA_R_32F) || (a == CUDA_R_16F && (c == CUDA_R_16F || c == CUDA_R_32F)) ||
		       (a == CUDA_R_16BF && (c == CUDA_R_16BF || c == CUDA_R_32F)) || (a == CUDA_R_8I && c == CUDA_R_32F);
	case CUBLAS_COMPUTE_16F: case CUBLAS_COMPUTE_16F_PEDANTIC:
		return a == CUDA_R_16F && c == CUDA_R_16F;
	case CUBLAS_COMPUTE_64F: case CUBLAS_COMPUTE_64F_PEDANTIC:
		return a == CUDA_R_64F && c == CUDA_R_64F;
	default:
		return false;
	}
}

/* A column-major rows x cols matrix with leading dimension ld. */
static struct fk_layout matrix(int rows, int cols, int ld, uint32_t es)
{
	struct fk_layout l;

	memset(&l, 0, sizeof(l));
	l.nd = 2;
	l.dim[0] = cols;
	l.str[0] = ld;
	l.dim[1] = rows;
	l.str[1] = 1;
	l.esize = es;
	return l;
}

static const char *op_name(cublasOperation_t o)
{
	return o == CUBLAS_OP_N ? "N" : o == CUBLAS_OP_T ? "T" : o == CUBLAS_OP_C ? "C" : "?";
}

cublasStatus_t cublasGemmEx(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n,
			    int k, const void *alpha, const void *A, cudaDataType Atype, int lda, const void *B,
			    cudaDataType Btype, int ldb, const void *beta, void *C, cudaDataType Ctype, int ldc,
			    cublasComputeType_t computeType, cublasGemmAlgo_t algo)
{
	cublasStatus_t st = CUBLAS_STATUS_SUCCESS;
	bool ta = transa != CUBLAS_OP_N, tb = transb != CUBLAS_OP_N;
	int ar = ta ? k : m, ac = ta ? m : k, br = tb ? n : k, bc = tb ? k : n;
	struct fk_layout la, lb, lc;
	float fa = 0, fb = 0;

	fk_call("cublasGemmEx");
	if (fk_inject()) {
		st = CUBLAS_STATUS_EXECUTION_FAILED;
		goto out;
	}
	if (!handle || handle->magic != M_BLAS || !handle->live) {
		fk_fail("not a live cuBLAS handle");
		st = CUBLAS_STATUS_NOT_INITIALIZED;
		goto out;
	}
	fk_call_stream(handle->stream);
	if ((transa != CUBLAS_OP_N && transa != CUBLAS_OP_T && transa != CUBLAS_OP_C) ||
	    (transb != CUBLAS_OP_N && transb != CUBLAS_OP_T && transb != CUBLAS_OP_C) || m < 0 || n < 0 || k < 0 ||
	    lda < (ar > 1 ? ar : 1) || ldb < (br > 1 ? br : 1) || ldc < (m > 1 ? m : 1)) {
		fk_fail("op(A) %s, op(B) %s, m %d, n %d, k %d: lda %d (>= %d), ldb %d (>= %d), ldc %d (>= %d)",
			op_name(transa), op_name(transb), m, n, k, lda, ar, ldb, br, ldc, m);
		st = CUBLAS_STATUS_INVALID_VALUE;
		goto out;
	}
	if (!types_ok(computeType, Atype, Btype, Ctype) || !type_size(Atype) || !type_size(Ctype)) {
		fk_fail("types A %d, B %d, C %d with compute type %d", (int)Atype, (int)Btype, (int)Ctype,
			(int)computeType);
		st = CUBLAS_STATUS_NOT_SUPPORTED;
		goto out;
	}
	if (algo != CUBLAS_GEMM_DEFAULT && algo != CUBLAS_GEMM_DEFAULT_TENSOR_OP &&
	    !(algo >= CUBLAS_GEMM_ALGO0 && algo <= CUBLAS_GEMM_ALGO23) &&
	    !(algo >= CUBLAS_GEMM_ALGO0_TENSOR_OP && algo <= CUBLAS_GEMM_ALGO15_TENSOR_OP)) {
		fk_fail("algo %d", (int)algo);
		st = CUBLAS_STATUS_INVALID_VALUE;
		goto out;
	}
	/* host pointer mode (the default): float scalars for the 32F types */
	if (!alpha || !beta) {
		fk_fail("alpha %p, beta %p", alpha, beta);
		st = CUBLAS_STATUS_INVALID_VALUE;
		goto out;
	}
	if (computeType != CUBLAS_COMPUTE_16F && computeType != CUBLAS_COMPUTE_16F_PEDANTIC &&
	    computeType != CUBLAS_COMPUTE_64F && computeType != CUBLAS_COMPUTE_64F_PEDANTIC) {
		fa = *(const float *)alpha;
		fb = *(const float *)beta;
		if (!isfinite(fa) || !isfinite(fb)) {
			fk_fail("alpha %g, beta %g", (double)fa, (double)fb);
			st = CUBLAS_STATUS_INVALID_VALUE;
			goto out;
		}
	}
	if (!m || !n)
		goto out;
	la = matrix(ar, ac, lda, type_size(Atype));
	lb = matrix(br, bc, ldb, type_size(Btype));
	lc = matrix(m, n, ldc, type_size(Ctype));
	if (k) {
		fk_arg("A", A, &la, FK_R, 0);
		fk_arg("B", B, &lb, FK_R, 0);
	}
	fk_arg("C", C, &lc, FK_W | (fb != 0 ? FK_R : 0), 0);
	if (fk_end() == 0 && Atype == CUDA_R_32F && Ctype == CUDA_R_32F && fk_values_on()) {
		const float *a = (const float *)A, *b = (const float *)B;
		float *c = (float *)C;
		uint64_t mn = (uint64_t)m * (uint64_t)n;

		for (uint64_t e = 0, st_ = fk_sample_stride(mn); e < mn; e += st_) {
			uint64_t i = e % (uint64_t)m, j = e / (uint64_t)m;
			double s = 0;

			for (uint64_t l = 0; l < (uint64_t)k; l++) {
				float av = ta ? a[l + i * (uint64_t)lda] : a[i + l * (uint64_t)lda];
				float bv = tb ? b[j + l * (uint64_t)ldb] : b[l + j * (uint64_t)ldb];

				s += (double)av * bv;
			}
			c[i + j * (uint64_t)ldc] = (float)(fa * s) + (fb != 0 ? fb * c[i + j * (uint64_t)ldc] : 0.0f);
		}
	}
	return st;
out:
	fk_end();
	return st;
}
