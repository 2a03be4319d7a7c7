/*
 * kop: the real kernel behind an op (memplan verify --device cuda and memplan
 * profile, issue 5).  A layer-lowered op whose layer has shapes maps to one
 * cuDNN or cuBLAS call sequence (conv forward, backward-data and
 * backward-filter; pool, activation, LRN, batch-norm, softmax and dropout;
 * fc as a GEMM; add and concat as small kernels); kop_build says which, with
 * every tensor in its role.  Any other op, or one whose reads and writes are
 * not exactly what its kernel touches (a "saves" override, an explicit op),
 * is KOP_TIMED, with the reason, and runs as a timed kernel of its modelled
 * duration.  Host code, no CUDA: the CUDA side (kern_cuda.cu) only turns a
 * kop into descriptors and calls, so everything decided here is tested in CI.
 *
 * Shapes are NCHW: a layer's shape [N, C, H, W] (or [N, C, D, H, W], or
 * [N, C, L]; fc and the elementwise layers [N, ...] flattened to [N, C, 1, 1]
 * where cuDNN wants four dimensions).
 */
#ifndef MP_KOP_H
#define MP_KOP_H

#include <stdbool.h>
#include <stdint.h>

#include "../analysis/net/net.h"

enum mp_kop_type {
	KOP_TIMED,      /* no real kernel: a timed kernel of the op's duration */
	KOP_CONV,       /* cuDNN convolution (+ bias add) */
	KOP_FC,         /* cuBLAS GEMM (+ bias add): y[N, K] = x[N, C] w[K, C]^T + b */
	KOP_POOL,       /* cuDNN pooling, max or average */
	KOP_ACT,        /* cuDNN activation: relu, sigmoid, tanh, elu */
	KOP_LRN,        /* cuDNN LRN cross-channel */
	KOP_BN,         /* cuDNN batch norm, spatial, training */
	KOP_SOFTMAX,    /* cuDNN softmax over C (accurate, per instance) */
	KOP_DROPOUT,    /* cuDNN dropout, p = 0.5, the mask as its reserve space */
	KOP_ADD,        /* y = sum of inputs; backward copies dy to each dx */
	KOP_CONCAT,     /* y = inputs along C; backward slices dy */
	KOP__COUNT
};
const char *mp_kop_type_name(enum mp_kop_type t);

enum mp_kop_act { KOP_ACT_RELU, KOP_ACT_SIGMOID, KOP_ACT_TANH, KOP_ACT_ELU, KOP_ACT_RELU6 };

#define KOP_MAX_IN 64   /* add and concat with more inputs run timed */

struct mp_kop {
	enum mp_kop_type type;
	enum mp_phase phase;       /* the op's: forward runs the forward call, backward
				    * the backward calls, optimizer ops are KOP_TIMED */
	const char *why;           /* KOP_TIMED: why there is no real kernel, a static
				    * string ("layer type gelu has no cuDNN kernel",
				    * ("a conv layer without geometry (...)", "an explicit op") */
	enum mp_dtype dtype;       /* float32, float16 or bfloat16; others run timed */
	uint8_t mode;              /* KOP_ACT: enum mp_kop_act; KOP_POOL: 0 max, 1 avg */
	/* geometry, NCHW with nsp spatial dimensions (1-3; 0 for [N, C]: fc,
	 * act, softmax, dropout and add are flattened so, see kop.c) */
	uint8_t nsp;
	uint32_t n, c, k;          /* batch, input channels, output channels (fc: rows,
				    * in, out features; concat: c = k = the output's) */
	uint32_t in_sp[3], out_sp[3];
	uint32_t kernel[3], stride[3], pad[3], dilation[3], groups; /* conv and pool
				    * (pool: groups 1); 0 for the other types */
	/* every tensor the op touches, by role; -1 where absent.  Forward:
	 * x[], w, b, y, stats (bn: saved mean and inverse variance), mask
	 * (dropout's reserve space), ws.  Backward: the same forward tensors it
	 * reads, dy, dx[] (-1 for inputs that need no gradient), dw, db, ws.
	 * dy is -1 when the layer ends the forward pass (no gradient tensor:
	 * the kernel gets a scratch dy).  x_c[i] is input i's channel count
	 * (concat). */
	uint32_t n_x;
	int32_t x[KOP_MAX_IN], dx[KOP_MAX_IN];
	uint32_t x_c[KOP_MAX_IN];
	bool dx_accumulate[KOP_MAX_IN]; /* dx[i] is also read: add to it (beta 1), as
					 * gradients of a tensor read by several layers do */
	int32_t w, b, y, dy, dw, db, stats, mask, ws; /* bn: w scale, b bias */
};

/*
 * The kernel for op o of net.  Always fills *k: KOP_TIMED with k->why when
 * the op has no real kernel here.  Checks that the roles cover exactly the
 * op's reads and writes; any difference makes the op KOP_TIMED.  O(inputs +
 * outputs + the layer's tensors).
 */
void kop_build(const struct mp_net *net, int32_t o, struct mp_kop *k);

#endif
