/*
 * fakecuda: a CPU stand-in for the CUDA runtime, cuDNN and cuBLAS calls of
 * verify/kern_cuda.cu, so that tests/unit/test_kern.cc runs kern_cuda's real
 * code paths where there is no GPU.  Three shared libraries in
 * $(BUILD)/fakecuda:
 *
 *   libfakecudart.so  (fake_core.c)   cudaMalloc, cudaFree, cudaMemset,
 *                     cudaGetLastError, and for backend_cuda.cu (run by
 *                     tests/unit/test_backends.cc) streams, events, copies,
 *                     pinned memory and memory pools on a clock per stream;
 *                     the allocation registry, its shadow
 *                     bytes, the access log, violations and fault injection
 *                     below, shared by the other two and by the test
 *   libcudnn.so.9     (fake_cudnn.c)  every cuDNN function kern_cuda.cu loads
 *   libcublas.so.13   (fake_cublas.c) cublasCreate_v2 ... and cublasGemmEx
 *
 * and, for the gpu-dry memplan only (tests/cli/t0604), in its own directory,
 *   libcuda.so.1      (fake_driver.c) the driver calls of verify --probe
 *
 * named so that kern_lib_open's dlopen finds them first (the test is linked
 * with an RPATH to that directory, searched before LD_LIBRARY_PATH and the
 * system's cache).  The fakes compile against the real headers, so each
 * function has the real signature.  Descriptors are real structs holding
 * what was set; every call validates its arguments as cuDNN and cuBLAS
 * document them (dimensions from the convolution and pooling formulas,
 * channels and groups, broadcast rules, leading dimensions, workspace and
 * reserve sizes) and every pointer's extent against the live allocations,
 * and computes nothing unless asked to (fk_values: a few calls, so that the
 * test can check values).  A violation is printed and counted; the call returns
 * the status cuDNN or cuBLAS would (or success where the real library would
 * not notice, e.g. an access past the end of a buffer).
 *
 * Shadow bytes: each byte of an allocation has a state: whether it holds a
 * value from before the current op (the test marks the op's inputs so),
 * whether it was read since last written, and how many times this op wrote
 * it (saturating at 63).  A read must see a value from before or a write; a
 * write of a tensor must not overwrite this op's own unread value (a lost
 * accumulation).  Reads and writes are logged per call, so the test knows
 * which tensors each call read and wrote and how often each byte was
 * written.
 *
 * Stream order: each byte's runs also remember when each stream's last
 * write and read of them ends, on the streams' clocks; a call that starts
 * before another stream's write of its bytes ends (or, writing, before
 * another stream's read ends) is a violation, a wait missing between them
 * (fake_core.c, "stream order").
 */
#ifndef MP_FAKECUDA_H
#define MP_FAKECUDA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- for the test ---- */

/* Allocation tags: a tensor id (>= 0), or one of these. */
#define FK_TAG_INTERNAL (-1)  /* cudaMalloc'd by the code under test */
#define FK_TAG_WORKSPACE (-2) /* the workspace the test passes to kern_run */

/* Name an allocation (from cudaMalloc) as the test's: tag and name are kept. */
void fk_tag(const void *p, int32_t tag, const char *name);
/* Every byte of p's allocation holds a value from before the op (an input)
 * when defined, else nothing (an output); write counts restart at 0. */
void fk_define(const void *p, bool defined);
/* Write counts over the first n bytes of p's allocation: the least and the
 * most, and where the first byte with the least is.  *lo = 0 means a byte
 * was never written. */
void fk_write_counts(const void *p, uint64_t n, unsigned *lo, unsigned *hi, uint64_t *at_lo);

/* Bytes and number of live allocations with tag (FK_TAG_INTERNAL: what the
 * code under test holds). */
uint64_t fk_alloc_bytes(int32_t tag, uint32_t *count);

/* One logged access: call seq touched [lo, hi) of an allocation. */
struct fk_access {
	uint32_t seq;          /* the call's number since fk_log_clear */
	const char *call;      /* "cudnnConvolutionForward" (static) */
	const char *arg;       /* "y" (static) */
	int32_t tag;           /* the allocation's */
	uint64_t lo, hi;       /* byte offsets in the allocation (extent) */
	bool read, write;      /* a read of its values, a write */
	bool read_before;      /* the read saw a value from before the op */
	bool scratch;          /* a workspace: neither (bounds only) */
};
uint32_t fk_log_count(void);
const struct fk_access *fk_log_at(uint32_t i);
void fk_log_clear(void);

/* Convolution algorithms the compute calls used since fk_log_clear, one
 * bit per algorithm; dir 0 forward, 1 backward data, 2 backward filter. */
unsigned fk_algos_used(int dir);

/* Violations so far (each printed to stderr, prefixed with the context). */
uint64_t fk_violations(void);
void fk_context(const char *what);
/* Print at most n further violations (then count them silently). */
void fk_print_limit(uint64_t n);

/* Fallible calls (descriptor creation and setting, workspace and size
 * queries, algorithm searches, compute calls, cudaMalloc, cudaMemset) made
 * so far; and fail the nth one from now (1: the next; 0: none). */
uint64_t fk_fallible_calls(void);
void fk_fail_at(uint64_t n);

/* Live objects by kind: handles and descriptors made and not destroyed. */
enum fk_obj {
	FK_OBJ_CUDNN, FK_OBJ_CUBLAS, FK_OBJ_TENSOR, FK_OBJ_FILTER, FK_OBJ_CONV, FK_OBJ_POOL,
	FK_OBJ_ACT, FK_OBJ_LRN, FK_OBJ_DROPOUT, FK_OBJ_STREAM, FK_OBJ_EVENT, FK_OBJ__COUNT
};
long fk_live(enum fk_obj k);
const char *fk_obj_name(enum fk_obj k);

/* Which fakes the dynamic loader brought in: 1 cuDNN, 2 cuBLAS. */
unsigned fk_loaded(void);

/* Compute values (float32) from now on: cudnnAddTensor,
 * cudnnTransformTensor and cudnnConvolutionBackwardBias all of their
 * output, cublasGemmEx the elements of C whose index i + j m is a multiple
 * of fk_sample_stride(m n) (the others are left as they were). */
void fk_values(bool on);
bool fk_values_on(void);
/* Hashed outputs from now on (FAKECUDA_OUTPUTS=hash sets it at the start):
 * a cuDNN or cuBLAS call computing no values writes bytes drawn from a hash
 * of its name and of what it only reads (fake_core.c, hash_outputs). */
void fk_outputs_hash(bool on);
#define FK_VALUE_SAMPLES 1021
static inline uint64_t fk_sample_stride(uint64_t n)
{
	return n > FK_VALUE_SAMPLES ? n / FK_VALUE_SAMPLES : 1;
}

/* The fake runtime's clocks (ns), one per stream (fake_core.c, "streams,
 * events, copies"): a CPU kernel of backend_cuda.cu's host build runs on
 * the stream fk_on_stream names (NULL: stream 0), reads its clock with
 * fk_clock_ns and advances it with fk_clock_advance. */
struct CUstream_st;
void fk_on_stream(struct CUstream_st *s);
/* The library call open now (after its fk_call) runs on stream s: its
 * handle's (fake_core.c, "stream order"). */
void fk_call_stream(struct CUstream_st *s);
uint64_t fk_clock_ns(void);
void fk_clock_advance(uint64_t ns);
/* A CPU kernel of backend_cuda.cu's host build read (FK_R) or wrote (FK_W)
 * n device bytes at p: checked and logged as a call. */
void fk_kernel(const char *name, const void *p, uint64_t n, unsigned how);

/* ---- for the fakes ---- */

/* A strided layout of elements: dim[i] elements at str[i] apart. */
#define FK_MAX_DIMS 8
struct fk_layout {
	int nd;
	int64_t dim[FK_MAX_DIMS], str[FK_MAX_DIMS];
	uint32_t esize;
};
/* nbytes contiguous bytes */
struct fk_layout fk_bytes(uint64_t nbytes);
/* Extent in bytes: (sum (dim - 1) str + 1) esize; 0 if a dimension is 0. */
uint64_t fk_extent(const struct fk_layout *l);

void fk_loaded_mark(unsigned which);
void fk_algo_used(int dir, int algo);
void fk_obj_new(enum fk_obj k);
void fk_obj_gone(enum fk_obj k);
/* The next fallible call: true if it is to fail (fault injection). */
bool fk_inject(void);

/* One call: fk_call, its pointer arguments with fk_arg, then fk_end, which
 * checks every extent against the allocations and argument overlaps, applies
 * reads then writes to the shadow bytes and logs them; it returns the
 * number of violations in the call (fk_fail's included). */
enum { FK_R = 1, FK_W = 2, FK_SCRATCH = 4, FK_BOUNDS = 8 };
void fk_call(const char *call);
/* how: FK_R, FK_W, FK_R | FK_W (beta != 0), FK_SCRATCH (workspace: bounds
 * only), FK_BOUNDS (the pointer must be valid, its values are not used).
 * inplace > 0: may be the same bytes, with the same layout, as another
 * argument of the same group. */
void fk_arg(const char *name, const void *p, const struct fk_layout *l, unsigned how, int inplace);
void fk_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int fk_end(void);
/* A violation outside a call (cudaFree, descriptor misuse) */
void fk_violation(const char *call, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#ifdef __cplusplus
}
#endif

#endif
