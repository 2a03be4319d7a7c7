/*
 * net: the network at tensor granularity, and its loader.  A Net is a DAG of
 * ops (forward, backward, optimizer) over tensors; users usually write layers,
 * which net_load lowers to ops with the tensors each layer type's backward
 * really reads (the table in memplan-net(5) is the contract).  A loaded Net
 * owns everything it points to; net_free releases it once.
 */
#ifndef MP_NET_H
#define MP_NET_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "../base/device.h"
#include "../base/util.h"

enum mp_tensor_kind {
	MP_TK_INPUT,        /* produced by a data layer, or resident at start */
	MP_TK_ACTIVATION,   /* forward outputs and what backward saves from them */
	MP_TK_GRADIENT,     /* gradients of activations */
	MP_TK_PARAM,        /* weights: resident for the whole iteration */
	MP_TK_PARAM_GRAD,
	MP_TK_OPT_STATE,    /* optimizer state: resident for the whole iteration */
	MP_TK_WORKSPACE,    /* scratch of one op, live only while it runs */
	MP_TK__COUNT
};
const char *mp_tensor_kind_name(enum mp_tensor_kind k);

enum mp_phase { MP_PHASE_FWD, MP_PHASE_BWD, MP_PHASE_OPT };
const char *mp_phase_name(enum mp_phase p);

enum mp_layer_type {
	MP_L_DATA, MP_L_CONV, MP_L_FC, MP_L_RELU, MP_L_SIGMOID, MP_L_TANH,
	MP_L_ELU, MP_L_GELU, MP_L_SILU, MP_L_POOL, MP_L_LRN, MP_L_BN,
	MP_L_LAYERNORM, MP_L_DROPOUT, MP_L_SOFTMAX, MP_L_LOSS, MP_L_ADD,
	MP_L_CONCAT, MP_L_EMBEDDING, MP_L_ATTENTION, MP_L_RESHAPE, MP_L_CUSTOM,
	MP_L_RELU6,         /* min(max(x, 0), 6): cuDNN's clipped relu, PyTorch's hardtanh */
	MP_L_RMSNORM,       /* x * rsqrt(mean(x^2)) * weight: saves x and 1 float32 per row */
	MP_L_ROPE,          /* rotary position embedding: saves nothing (cos, sin are constants) */
	MP_L_MUL,           /* elementwise product of its inputs (SwiGLU's gate): saves them */
	MP_L_OP,            /* an op written directly in "ops" */
	MP_L__COUNT
};
const char *mp_layer_type_name(enum mp_layer_type t);
int mp_layer_type_parse(const char *s); /* aliases: linear, matmul -> fc; -1 */

/* Whose saved tensors the lowering follows (memplan-net(5), "framework"):
 * cuDNN's kernels (the default), or PyTorch's autograd. */
enum mp_framework { MP_FW_CUDNN, MP_FW_PYTORCH };
const char *mp_framework_name(enum mp_framework f);
int mp_framework_parse(const char *s);            /* -1 when unknown */

enum mp_optimizer { MP_OPT_NONE, MP_OPT_SGD, MP_OPT_MOMENTUM, MP_OPT_ADAM, MP_OPT_ADAMW, MP_OPT__COUNT };
const char *mp_optimizer_name(enum mp_optimizer o);
int mp_optimizer_parse(const char *s);            /* -1 when unknown */
unsigned mp_optimizer_states(enum mp_optimizer o); /* state tensors per parameter */
extern const char mp_optimizer_list[];            /* "none, sgd, momentum, adam, adamw" */

/*
 * Numeric precision of training (memplan-net(5), PRECISION): the dtype of
 * activations, parameters, their gradients, fp32 master weights (mixed
 * precision keeps them beside low-precision parameters) and optimizer state.
 * A named policy sets them all; a file may override each.
 */
enum mp_precision_policy {
	MP_PREC_NONE,       /* no "precision": everything in the layer's dtype */
	MP_PREC_FP32, MP_PREC_BF16_MIXED, MP_PREC_FP16_MIXED, MP_PREC_BF16_PURE,
	MP_PREC_BF16_AUTOCAST, MP_PREC_FP16_AUTOCAST,
	MP_PREC__COUNT
};
struct mp_precision {
	enum mp_precision_policy policy;
	enum mp_dtype act, params, grads, state;
	int master;         /* enum mp_dtype, or -1: no master weights */
	bool loss_scale;    /* fp16: GradScaler's scale and growth tracker */
	bool autocast;      /* torch.autocast: fc and conv compute in act from
			     * low-precision copies of their weight and input */
};
const char *mp_precision_name(enum mp_precision_policy p);
extern const char mp_precision_list[];            /* "fp32, bf16-mixed, fp16-mixed, bf16-pure" */
/* No "precision": every kind in the layer's dtype, no master weights. */
void mp_precision_none(struct mp_precision *out);
/* The policy's dtypes into *out; -1 for an unknown name. */
int mp_precision_preset(const char *name, struct mp_precision *out);
/*
 * Bytes of n elements of optimizer state in dtype dt: int8 is
 * bitsandbytes' blockwise 8-bit state (1 byte per element and a float32
 * scale per block of 2048), kept in float32 for tensors under 4096
 * elements as bitsandbytes does.
 */
uint64_t mp_state_bytes(uint64_t n, enum mp_dtype dt);

/*
 * A frozen fc's 4-bit weight (memplan-net(5), "quant"; QLoRA, bitsandbytes'
 * Params4bit): NF4 codes, two per byte, in blocks of 64 with a float32
 * absolute maximum per block, or (nf4-dq, "double quantization") those
 * maxima themselves in 8 bits per block of 256 with a float32 scale each and
 * one float32 offset; plus the 16-entry float32 code book every weight
 * carries.
 */
enum mp_quant { MP_Q_NONE, MP_Q_NF4, MP_Q_NF4_DQ, MP_Q__COUNT };
const char *mp_quant_name(enum mp_quant q);
int mp_quant_parse(const char *s);                /* -1 when unknown */
uint64_t mp_quant_bytes(uint64_t n, enum mp_quant q);

struct mp_tensor {
	const char *name;
	uint64_t bytes;
	enum mp_tensor_kind kind;
	int32_t producer;   /* first op writing it; -1: resident at iteration start */
	int32_t layer;      /* layer it belongs to, -1 for explicit tensors */
	enum mp_dtype dtype;
	bool per_sample;    /* bytes proportional to the batch (memplan capacity) */
	uint64_t qelems;    /* a quantized weight's elements (net_param_count); else 0 */
};

/* An alternative implementation of an op (e.g. a cuDNN conv algorithm). */
struct mp_algo {
	const char *name;
	uint64_t workspace_bytes;
	double ms;
	uint32_t batch;        /* micro-batch size measured at; 0: the op's batch */
};

struct mp_op {
	const char *name;      /* "conv1.fwd", "conv1.bwd", "conv1.update" */
	enum mp_phase phase;
	enum mp_layer_type type;
	int32_t layer;         /* -1 for explicit ops */
	double ms;             /* default implementation */
	uint32_t n_in, n_out;
	int32_t *in;           /* [n_in] distinct tensor ids read */
	int32_t *out;          /* [n_out] distinct tensor ids written */
	int32_t ws;            /* workspace tensor (default impl), -1 if none */
	uint32_t n_algos;
	struct mp_algo *algos; /* [n_algos], this op's phase */
	int32_t fwd;           /* backward op: its forward op; else -1 */
	bool recomputable;     /* forward op that may be re-run to rebuild outputs */
	uint32_t index;        /* position in file order, for deterministic routes */
	uint32_t batch;        /* samples (first dimension of the layer's shape), 1 if unknown */
	int32_t json_index;    /* explicit ops: index in "ops" (for error paths); else -1 */
	uint32_t *in_json;     /* explicit ops: [n_in] index in "inputs" of each; else NULL */
};

/* A tensor's shape as the file gave it; nd 0: given as bytes, or a dimension
 * above UINT32_MAX (unknown). */
#define MP_MAX_DIMS 8
struct mp_shape {
	uint8_t nd;
	uint32_t d[MP_MAX_DIMS]; /* [nd] */
};

/*
 * Convolution and pooling geometry over nsp spatial dimensions (1-3), per
 * dimension: out = floor((in + 2 pad - dilation (kernel - 1) - 1) / stride) + 1.
 * nsp 0: none (not conv or pool, shapes unknown, or the inference of
 * memplan-net(5) found none).  given: the file spelled it out.
 */
struct mp_geom {
	uint8_t nsp;
	uint32_t kernel[3], stride[3], pad[3], dilation[3];
	uint32_t groups;       /* conv; 1 for pool */
	bool given;
};

struct mp_layer {
	const char *name;
	enum mp_layer_type type;
	uint32_t n_inputs;
	int32_t *inputs;       /* [n_inputs] layer ids */
	int32_t out;           /* output tensor (aliases input's if in place) */
	int32_t dout;          /* gradient of the output, -1 when none (no
				* backward, or the layer ends the forward pass) */
	int32_t mask, stats;   /* saved mask and statistics tensors, -1 when none */
	int32_t fwd_op, bwd_op, upd_op; /* -1 when absent */
	bool inplace;
	uint8_t pool_mode;     /* pool: 0 max, 1 avg */
	uint8_t quant;         /* enum mp_quant of its weight (parameter 0) */
	enum mp_dtype dtype;   /* of the output and the parameters */
	struct mp_shape shape; /* the output's */
	uint32_t n_params;
	struct mp_shape *params; /* [n_params] each parameter's shape (nd 0 if
				  * given as param_bytes), in the net's arena */
	struct mp_geom geom;   /* conv and pool layers */
};

/*
 * One job of a net that merges several (analysis/jobs.h): its names carry
 * prefix, and its ops, tensors and layers are the ranges [begin, end) of the
 * merged net's arrays, in the job's own order.
 */
struct mp_job {
	const char *name;      /* the job's net's name, or "j0", "j1", ... */
	const char *prefix;    /* name + "/" */
	const char *file;      /* the net file it came from, or NULL */
	double offset_ms;      /* when it starts on the shared compute engine */
	uint32_t op_begin, op_end, tensor_begin, tensor_end, layer_begin, layer_end;
	double alone_ms;       /* its iteration alone (liveness, default algorithms) */
	uint64_t alone_peak;   /* its liveness peak alone */
};

struct mp_net {
	const char *name;
	const char *time_source;  /* "measured", "roofline:v100-16g", ... or NULL */
	enum mp_dtype dtype;
	enum mp_optimizer optimizer;
	bool grads_keep;          /* "grads": "keep": parameter gradients live
				   * across iterations, as PyTorch's .grad before
				   * zero_grad(set_to_none=True) */
	enum mp_framework framework;
	struct mp_precision precision;
	bool has_device;
	struct mp_device device;
	uint32_t n_tensors, n_ops, n_layers;
	struct mp_tensor *tensors; /* [n_tensors] */
	struct mp_op *ops;         /* [n_ops] */
	struct mp_layer *layers;   /* [n_layers] */
	uint32_t n_untimed;        /* layers/ops given no time (0 ms assumed) */
	uint32_t batch;            /* the first data layer's batch; 0 without one */
	struct mp_arena arena;     /* names and small arrays */
	const struct mp_net *parent; /* net_scaled: the net whose names and arrays
				      * this one borrows (must outlive it) */
	int32_t *order;           /* [n_ops] a fixed execution order that
				   * route_build keeps (several jobs merged),
				   * in the arena; NULL: route the DAG */
	uint32_t n_jobs;          /* jobs merged into this net; 0: one net */
	struct mp_job *jobs;      /* [n_jobs], in the arena */
};

/*
 * Load and validate a memplan-net/1 file.  Returns a new Net (free with
 * net_free) or NULL with *err holding "JSON.path: what was expected"; the
 * caller prefixes the file name.  Never prints.
 */
struct mp_net *net_load_file(const char *path, struct mp_error *err);
struct mp_net *net_load_json(json_t *root, struct mp_error *err);
/* As net_load_file, also handing back the parsed JSON (*root: the caller's
 * reference, NULL on failure). */
struct mp_net *net_load_file_json(const char *path, json_t **root, struct mp_error *err);

void net_free(struct mp_net *net);

/* Bytes of a tensor kind summed over the net (checked: sizes are <= 1 PiB). */
uint64_t net_bytes_of_kind(const struct mp_net *net, enum mp_tensor_kind k);

/*
 * A copy of net for another batch size and GPU: per-sample tensors (outputs,
 * gradients, masks, per-row statistics and workspace of layers with a
 * batch-first shape) scaled by batch / net->batch, rounded up; op and
 * algorithm times scaled by the same ratio (time proportional to the work)
 * and then by compute_factor for conv, fc, attention and embedding ops and by
 * memory_factor for the others (a roofline change of GPU).  Layer shapes
 * whose first dimension is the net's batch take the new batch (parameter
 * shapes and geometry stay).  The copy borrows
 * net's names and arrays: free it (net_free) before net.  NULL with *err
 * when the net has no batch (no data layer with a shape).
 */
struct mp_net *net_scaled(const struct mp_net *net, uint32_t batch, double compute_factor,
			  double memory_factor, struct mp_error *err);

/* Number of parameter elements (parameter bytes over each one's dtype). */
uint64_t net_param_count(const struct mp_net *net);

/* Tensor id by name, -1 if none (O(n); for tests and tools, not hot paths). */
int32_t net_find_tensor(const struct mp_net *net, const char *name);
int32_t net_find_op(const struct mp_net *net, const char *name);

#endif
