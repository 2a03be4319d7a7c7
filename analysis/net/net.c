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
	"concat", "embedding", "attention", "reshape", "custom", "relu6", "op",
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

const char *mp_optimizer_name(enum mp_optimizer o)
{
	static const char *const n[] = { "none", "sgd", "momentum", "adam" };
	return n[o];
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
			n += net->tensors[i].bytes / mp_dtype_bytes(net->tensors[i].dtype);
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
