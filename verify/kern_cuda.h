/*
 * kern_cuda: real cuDNN and cuBLAS kernels for ops with shapes (issue 5),
 * shared by memplan verify's CUDA backend (backend_cuda.cu) and memplan profile
 * (profile_cuda.cu).  C++ (nvcc) only; included by .cu files.
 *
 * cuDNN and cuBLAS are loaded at run time (dlopen), so memplan starts, and
 * verify falls back to timed kernels, where they are not installed; the
 * library search path (LD_LIBRARY_PATH) decides which copy is used, e.g. the
 * one inside a PyTorch environment.  What an op runs is decided on the host
 * by kop_build (verify/kop.h); this file only turns a kop into descriptors
 * and calls.  Setup (kern_prepare) creates every descriptor and chooses every
 * algorithm; kern_run only issues calls, so a measured iteration does no
 * descriptor work and no allocation.
 */
#ifndef MP_KERN_CUDA_H
#define MP_KERN_CUDA_H

#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>

#ifndef _Noreturn
#define _Noreturn [[noreturn]] /* analysis/base/util.h is C11 */
#endif
extern "C" {
#include "kop.h"
}

struct kern_lib;
struct kern;

/* The byte scratch and profiled buffers are filled with: small finite values
 * in every type (0x3c3c3c3c is about 0.0115 in float32, 0x3c3c 1.06 in
 * float16 and 0.0115 in bfloat16), so kernels never run on NaNs they made. */
#define KERN_FILL_BYTE 0x3c

/* Device 0, its context created (backend_cuda.cu).  0; EXEC_NO_DEVICE
 * (verify/exec.h) or -1 with *err. */
int cuda_open_device(struct mp_error *err, cudaDeviceProp *prop);

/* Load cuDNN and cuBLAS and create their handles on stream st.  0; -1 with
 * why (a library is missing or fails): the caller runs every op timed. */
int kern_lib_open(struct kern_lib **out, cudaStream_t st, char *why, size_t n);
void kern_lib_close(struct kern_lib *L);
/* "cuDNN 9.19.0, cuBLAS 13.0.0" */
const char *kern_lib_versions(const struct kern_lib *L);
/* Device bytes the kernels hold outside the plan's arena (dropout states,
 * the scratch gradients). */
uint64_t kern_lib_bytes(const struct kern_lib *L);

/* One micro-batch: batch samples with the algorithm named algo (NULL: the
 * op's default implementation). */
struct kern_mb {
	uint32_t batch;
	const char *algo;
};

/*
 * Prepare op kop (not KOP_TIMED) to run as the micro-batches mb[0..n_mb)
 * (their batches sum to kop->n; only convolutions take more than one) within
 * ws_bytes of workspace.  A conv algorithm is the named one's cuDNN
 * algorithms (see kern_conv_family) when they are supported and fit ws_bytes,
 * else cuDNN's heuristic choice that fits.  0 with *out; -1 with why: the op
 * cannot run for real here (unsupported by cuDNN, workspace too small, a
 * mask too small for cuDNN's reserve space), and runs timed.
 */
int kern_prepare(struct kern_lib *L, const struct mp_net *net, const struct mp_kop *kop,
		 const struct kern_mb *mb, uint32_t n_mb, uint64_t ws_bytes, struct kern **out,
		 char *why, size_t n);
void kern_free(struct kern_lib *L, struct kern *K);

/* Did every micro-batch get the algorithm it named?  (A substitute was
 * chosen because the named one was unsupported or did not fit.) */
bool kern_algo_substituted(const struct kern *K);
/* Does running it again give the same bytes (for recompute checks)?  False
 * for dropout, whose cuDNN random state advances. */
bool kern_deterministic(const struct kern *K);
/* Do two preparations of one op write the same bytes from the same inputs
 * (both timed, NULL; or the same deterministic kernel with the same
 * micro-batches and algorithms)?  A recompute is checked against the first
 * run only then: different cuDNN algorithms round differently. */
bool kern_same_run(const struct kern *A, const struct kern *B);
/* The workspace it really uses (<= the ws_bytes it was prepared with). */
uint64_t kern_ws_bytes(const struct kern *K);

/* The device address of tensor t. */
typedef void *(*kern_addr_fn)(void *ctx, int32_t t);

/* Issue the op's calls on the library's stream.  0; -1 with why (a cuDNN or
 * cuBLAS error). */
int kern_run(struct kern_lib *L, const struct kern *K, kern_addr_fn addr, void *ctx, void *ws,
	     char *why, size_t n);

/* A named conv algorithm ("implicit_gemm", "winograd", ...) as cuDNN's
 * forward, backward-data and backward-filter algorithms: 0, or -1 if the name
 * is not one of cuDNN's. */
struct kern_family {
	const char *name;
	int fwd, bwd_data, bwd_filter;
};
int kern_conv_family(const char *name, struct kern_family *out);
/* The families profile measures, in order: [n]. */
const struct kern_family *kern_conv_families(uint32_t *n);

#endif
