/*
 * The Net's vocabulary and what callers ask of a loaded one: the names of
 * tensor kinds, phases, layer types and optimizers, the bytes of a kind, the
 * parameter count, lookups by name, and net_free.  Loading is load.c's, a
 * copy at another batch scale.c's.  O(1) per name, O(tensors) or O(ops) per
 * query.
 */
#include "net.h"

#include <stdlib.h>
#include <string.h>

static const char *const kind_names[MP_TK__COUNT] = {
	"input", "activation", "gradient", "parameter", "parameter_gradient",
	"optimizer_state", "workspace",
};

const char *mp_tensor_kind_name(enum mp_tensor_kind k)
{
	return k < MP_TK__COUNT ? kind_names[k] : "?";
}

const char *mp_phase_name(enum mp_phase p)
{
	return p == MP_PHASE_FWD ? "forward" : p == MP_PHASE_BWD ? "backward" : "optimizer";
}

static const char *const type_names[MP_L__COUNT] = {
	"data", "conv", "fc", "relu", "sigmoid", "tanh", "elu", "gelu", "silu",
	"pool", "lrn", "bn", "layernorm", "dropout", "softmax", "loss", "add",
	"concat", "embedding", "attention", "reshape", "custom", "relu6", "rmsnorm", "rope", "mul", "op",
};

const char *mp_layer_type_name(enum mp_layer_type t)
{
	return t < MP_L__COUNT ? type_names[t] : "?";
}

int mp_layer_type_parse(const char *s)
{
	static const struct { const char *alias; enum mp_layer_type t; } aliases[] = {
		{ "linear", MP_L_FC }, { "matmul", MP_L_FC }, { "batchnorm", MP_L_BN },
		{ "flatten", MP_L_RESHAPE }, { "view", MP_L_RESHAPE },
		{ "input", MP_L_DATA }, { "swish", MP_L_SILU },
	};
	for (int i = 0; i < MP_L_OP; i++)
		if (!strcmp(s, type_names[i]))
			return i;
	for (size_t i = 0; i < sizeof(aliases) / sizeof(aliases[0]); i++)
		if (!strcmp(s, aliases[i].alias))
			return (int)aliases[i].t;
	return -1;
}

static const char *const frameworks[] = { [MP_FW_CUDNN] = "cudnn", [MP_FW_PYTORCH] = "pytorch" };

const char *mp_framework_name(enum mp_framework f)
{
	return f <= MP_FW_PYTORCH ? frameworks[f] : "?";
}

int mp_framework_parse(const char *s)
{
	for (int i = 0; i <= MP_FW_PYTORCH; i++)
		if (!strcmp(s, frameworks[i]))
			return i;
	return -1;
}

static const struct {
	const char *name;
	unsigned states;
} optimizers[MP_OPT__COUNT] = {
	[MP_OPT_NONE] = { "none", 0 }, [MP_OPT_SGD] = { "sgd", 0 },
	[MP_OPT_MOMENTUM] = { "momentum", 1 }, [MP_OPT_ADAM] = { "adam", 2 },
	[MP_OPT_ADAMW] = { "adamw", 2 },
};
const char mp_optimizer_list[] = "none, sgd, momentum, adam, adamw";

const char *mp_optimizer_name(enum mp_optimizer o)
{
	return o < MP_OPT__COUNT ? optimizers[o].name : "?";
}

int mp_optimizer_parse(const char *s)
{
	for (int i = 0; i < MP_OPT__COUNT; i++)
		if (!strcmp(s, optimizers[i].name))
			return i;
	return -1;
}

unsigned mp_optimizer_states(enum mp_optimizer o)
{
	return o < MP_OPT__COUNT ? optimizers[o].states : 0;
}

static const struct {
	const char *name;
	struct mp_precision p;
} precisions[MP_PREC__COUNT] = {
	[MP_PREC_NONE] = { "none", { MP_PREC_NONE, MP_DT_FLOAT32, MP_DT_FLOAT32, MP_DT_FLOAT32, MP_DT_FLOAT32, -1, false } },
	[MP_PREC_FP32] = { "fp32", { MP_PREC_FP32, MP_DT_FLOAT32, MP_DT_FLOAT32, MP_DT_FLOAT32, MP_DT_FLOAT32, -1, false } },
	[MP_PREC_BF16_MIXED] = { "bf16-mixed", { MP_PREC_BF16_MIXED, MP_DT_BFLOAT16, MP_DT_BFLOAT16, MP_DT_BFLOAT16,
						 MP_DT_FLOAT32, MP_DT_FLOAT32, false } },
	[MP_PREC_FP16_MIXED] = { "fp16-mixed", { MP_PREC_FP16_MIXED, MP_DT_FLOAT16, MP_DT_FLOAT16, MP_DT_FLOAT16,
						 MP_DT_FLOAT32, MP_DT_FLOAT32, true } },
	[MP_PREC_BF16_PURE] = { "bf16-pure", { MP_PREC_BF16_PURE, MP_DT_BFLOAT16, MP_DT_BFLOAT16, MP_DT_BFLOAT16,
					       MP_DT_BFLOAT16, -1, false } },
	[MP_PREC_BF16_AUTOCAST] = { "bf16-autocast", { MP_PREC_BF16_AUTOCAST, MP_DT_BFLOAT16, MP_DT_FLOAT32,
						       MP_DT_FLOAT32, MP_DT_FLOAT32, -1, false, true } },
	[MP_PREC_FP16_AUTOCAST] = { "fp16-autocast", { MP_PREC_FP16_AUTOCAST, MP_DT_FLOAT16, MP_DT_FLOAT32,
						       MP_DT_FLOAT32, MP_DT_FLOAT32, -1, true, true } },
};

const char mp_precision_list[] = "fp32, bf16-mixed, fp16-mixed, bf16-pure, bf16-autocast, fp16-autocast";

void mp_precision_none(struct mp_precision *out)
{
	*out = precisions[MP_PREC_NONE].p;
}

const char *mp_precision_name(enum mp_precision_policy p)
{
	return p < MP_PREC__COUNT ? precisions[p].name : "?";
}

int mp_precision_preset(const char *name, struct mp_precision *out)
{
	for (int i = MP_PREC_FP32; i < MP_PREC__COUNT; i++)
		if (!strcmp(name, precisions[i].name)) {
			*out = precisions[i].p;
			return 0;
		}
	return -1;
}

uint64_t mp_state_bytes(uint64_t n, enum mp_dtype dt)
{
	if (dt != MP_DT_INT8)
		return n * mp_dtype_bytes(dt);
	if (n < 4096)
		return 4 * n;
	return n + 4 * ((n + 2047) / 2048);
}

static const char *const quant_names[MP_Q__COUNT] = { "none", "nf4", "nf4-dq" };

const char *mp_quant_name(enum mp_quant q)
{
	return quant_names[q];
}

int mp_quant_parse(const char *s)
{
	for (int i = 0; i < MP_Q__COUNT; i++)
		if (!strcmp(s, quant_names[i]))
			return i;
	return -1;
}

uint64_t mp_quant_bytes(uint64_t n, enum mp_quant q)
{
	uint64_t blocks = (n + 63) / 64;

	switch (q) {
	case MP_Q_NF4: return (n + 1) / 2 + 4 * blocks + 64;
	case MP_Q_NF4_DQ: return (n + 1) / 2 + blocks + 4 * ((blocks + 255) / 256) + 4 + 64;
	default: return n;
	}
}

void net_free(struct mp_net *net)
{
	if (!net)
		return;
	free(net->tensors);
	free(net->ops);
	free(net->layers);
	mp_arena_release(&net->arena); /* a scaled copy's own arena only */
	free(net);
}

uint64_t net_bytes_of_kind(const struct mp_net *net, enum mp_tensor_kind k)
{
	uint64_t sum = 0;

	for (uint32_t i = 0; i < net->n_tensors; i++)
		if (net->tensors[i].kind == k)
			sum += net->tensors[i].bytes; /* each <= 2^50, n < 2^32: no overflow */
	return sum;
}

uint64_t net_param_count(const struct mp_net *net)
{
	uint64_t n = 0;

	for (uint32_t i = 0; i < net->n_tensors; i++)
		if (net->tensors[i].kind == MP_TK_PARAM)
			n += net->tensors[i].qelems ? net->tensors[i].qelems :
			     net->tensors[i].bytes / mp_dtype_bytes(net->tensors[i].dtype);
	return n;
}

int32_t net_find_tensor(const struct mp_net *net, const char *name)
{
	for (uint32_t i = 0; i < net->n_tensors; i++)
		if (!strcmp(net->tensors[i].name, name))
			return (int32_t)i;
	return -1;
}

int32_t net_find_op(const struct mp_net *net, const char *name)
{
	for (uint32_t i = 0; i < net->n_ops; i++)
		if (!strcmp(net->ops[i].name, name))
			return (int32_t)i;
	return -1;
}
