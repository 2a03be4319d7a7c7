/*
 * Precision policies, optimizers and frozen parameters (memplan-net(5),
 * PRECISION and "frozen"): the persistent state of each policy to the byte,
 * on one fc layer whose weight is [64, 256] and bias [64]: 16448 parameters.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "../../analysis/net/net.h"
#include "unit.h"

#define N_W 16384u
#define N_B 64u
#define N (N_W + N_B)

static struct mp_net *load_fc(const char *optimizer, const char *precision)
{
	char text[1024];
	struct mp_error err = { "" };
	json_error_t jerr;
	json_t *root;
	struct mp_net *net;

	snprintf(text, sizeof(text),
		 "{\"format\": \"memplan-net/1\", \"name\": \"fc\", \"optimizer\": \"%s\"%s%s,"
		 " \"layers\": [{\"name\": \"x\", \"type\": \"data\", \"shape\": [4, 256]},"
		 "  {\"name\": \"fc\", \"type\": \"fc\", \"inputs\": [\"x\"], \"shape\": [4, 64], \"params\": [[64, 256], [64]]},"
		 "  {\"name\": \"loss\", \"type\": \"loss\", \"inputs\": [\"fc\"], \"shape\": [4]}]}",
		 optimizer, precision ? ", \"precision\": " : "", precision ? precision : "");
	root = json_loads(text, 0, &jerr);
	if (!root) {
		fprintf(stderr, "inline JSON: %s\n", jerr.text);
		CHECK(root != NULL);
		return NULL;
	}
	net = net_load_json(root, &err);
	json_decref(root);
	if (!net)
		fprintf(stderr, "%s / %s: %s\n", optimizer, precision ? precision : "-", err.msg);
	CHECK(net != NULL);
	return net;
}

static uint64_t tensor_bytes(const struct mp_net *net, const char *name)
{
	int32_t t = net_find_tensor(net, name);

	if (t < 0)
		fprintf(stderr, "no tensor '%s'\n", name);
	return t < 0 ? 0 : net->tensors[t].bytes;
}

/* Parameters, their gradients and optimizer state (master weights and the
 * grad scaler included) of one policy and optimizer. */
static void expect(const char *opt, const char *prec, uint64_t params, uint64_t grads, uint64_t state)
{
	struct mp_net *net = load_fc(opt, prec);

	if (!net)
		return;
	CHECK_U64(net_bytes_of_kind(net, MP_TK_PARAM), params);
	CHECK_U64(net_bytes_of_kind(net, MP_TK_PARAM_GRAD), grads);
	CHECK_U64(net_bytes_of_kind(net, MP_TK_OPT_STATE), state);
	net_free(net);
}

static void test_policies(void)
{
	/* no policy: everything float32, one state per parameter byte */
	expect("sgd", NULL, 4 * N, 4 * N, 0);
	expect("momentum", NULL, 4 * N, 4 * N, 4 * N);
	expect("adam", NULL, 4 * N, 4 * N, 8 * N);
	expect("adamw", NULL, 4 * N, 4 * N, 8 * N);
	expect("adamw", "\"fp32\"", 4 * N, 4 * N, 8 * N);
	/* bf16-mixed: 2 + 2 bytes, then fp32 master and moments: 16 per parameter */
	expect("adamw", "\"bf16-mixed\"", 2 * N, 2 * N, 4 * N + 8 * N);
	expect("momentum", "\"bf16-mixed\"", 2 * N, 2 * N, 4 * N + 4 * N);
	expect("sgd", "\"bf16-mixed\"", 2 * N, 2 * N, 4 * N);
	/* fp16-mixed: the same and GradScaler's scale and growth tracker */
	expect("adam", "\"fp16-mixed\"", 2 * N, 2 * N, 12 * N + 8);
	/* bf16-pure: 8 bytes per parameter with Adam, no master */
	expect("adam", "\"bf16-pure\"", 2 * N, 2 * N, 4 * N);
	/* overrides: fp32 gradients; no master; bitsandbytes' 8-bit Adam state
	 * (the weight: 16384 bytes and a float32 scale per 2048-element block;
	 * the 64-element bias stays float32 below 4096 elements) */
	expect("adamw", "{\"policy\": \"bf16-mixed\", \"grads\": \"float32\"}", 2 * N, 4 * N, 12 * N);
	expect("adamw", "{\"policy\": \"bf16-mixed\", \"master\": \"none\"}", 2 * N, 2 * N, 8 * N);
	expect("adamw", "{\"policy\": \"bf16-mixed\", \"optimizer_state\": \"int8\"}", 2 * N, 2 * N,
	       4 * N + 2 * (N_W + 4 * (N_W / 2048)) + 2 * 4 * N_B);
	{
		struct mp_net *net = load_fc("adamw", "\"bf16-mixed\"");

		if (net) {
			CHECK(net->dtype == MP_DT_BFLOAT16); /* activations follow the policy */
			CHECK_U64(tensor_bytes(net, "fc.out"), 2 * 4 * 64);
			CHECK_U64(tensor_bytes(net, "fc.param0.master"), 4 * N_W);
			CHECK_U64(tensor_bytes(net, "fc.param0.m"), 4 * N_W);
			CHECK_U64(tensor_bytes(net, "fc.param0.grad"), 2 * N_W);
			CHECK_U64(tensor_bytes(net, "fc.param0"), 2 * N_W);
			net_free(net);
		}
		net = load_fc("adamw", "{\"policy\": \"bf16-mixed\", \"grads\": \"float32\", \"optimizer_state\": \"int8\"}");
		if (net) {
			CHECK_U64(tensor_bytes(net, "fc.param0.grad"), 4 * N_W);
			CHECK_U64(tensor_bytes(net, "fc.param0.v"), N_W + 4 * (N_W / 2048));
			CHECK_U64(tensor_bytes(net, "fc.param1.v"), 4 * N_B);
			CHECK_U64(tensor_bytes(net, "fc.param1.master"), 4 * N_B);
			net_free(net);
		}
	}
	/* torch.autocast: float32 parameters, gradients and moments, no master
	 * (fp16: GradScaler's 8 bytes); the fc keeps a bfloat16 copy of its
	 * weight (16384 * 2 bytes), and of its input when that is float32
	 * (4 * 256 * 2 = 2048 more), instead of the input */
	expect("adamw", "\"bf16-autocast\"", 4 * N, 4 * N, 8 * N);
	expect("adam", "\"fp16-autocast\"", 4 * N, 4 * N, 8 * N + 8);
	{
		static const char text[] =
			"{\"format\": \"memplan-net/1\", \"name\": \"fc\", \"optimizer\": \"adamw\", \"precision\": \"bf16-autocast\","
			" \"layers\": [{\"name\": \"x\", \"type\": \"data\", \"shape\": [4, 256], \"dtype\": \"float32\"},"
			"  {\"name\": \"fc\", \"type\": \"fc\", \"inputs\": [\"x\"], \"shape\": [4, 64], \"params\": [[64, 256], [64]]},"
			"  {\"name\": \"loss\", \"type\": \"loss\", \"inputs\": [\"fc\"], \"shape\": [4]}]}";
		struct mp_net *net = load_fc("adamw", "\"bf16-autocast\"");
		struct mp_error err = { "" };
		json_t *root;

		if (net) {
			CHECK(net->precision.autocast);
			CHECK_U64(tensor_bytes(net, "fc.out"), 2 * 4 * 64);
			CHECK_U64(tensor_bytes(net, "fc.param0"), 4 * N_W);
			CHECK_U64(tensor_bytes(net, "fc.wcopy"), 2 * N_W);
			CHECK(net_find_tensor(net, "fc.saved") < 0); /* x is bfloat16 already */
			CHECK(net_find_tensor(net, "fc.wcopy") >= 0 &&
			      !net->tensors[net_find_tensor(net, "fc.wcopy")].per_sample);
			CHECK(net_find_tensor(net, "fc.param0.master") < 0);
			net_free(net);
		}
		root = json_loads(text, 0, NULL);
		net = root ? net_load_json(root, &err) : NULL;
		json_decref(root);
		CHECK(net != NULL);
		if (net) {
			int32_t bwd = net_find_op(net, "fc.bwd"), x = net_find_tensor(net, "x.out");

			CHECK_U64(tensor_bytes(net, "fc.wcopy"), 2 * N_W);
			CHECK_U64(tensor_bytes(net, "fc.saved"), 2 * 4 * 256);
			CHECK(bwd >= 0 && x >= 0);
			for (uint32_t k = 0; bwd >= 0 && k < net->ops[bwd].n_in; k++)
				CHECK(net->ops[bwd].in[k] != x); /* the copy, not the input */
			net_free(net);
		} else {
			fprintf(stderr, "autocast: %s\n", err.msg);
		}
	}
	CHECK_U64(mp_state_bytes(4095, MP_DT_INT8), 4 * 4095);
	CHECK_U64(mp_state_bytes(4096, MP_DT_INT8), 4096 + 4 * 2);
	CHECK_U64(mp_state_bytes(4097, MP_DT_INT8), 4097 + 4 * 3);
}

/*
 * fc1 -> fc2 (frozen) -> fc3: fc2 has no gradient, state or update; its
 * backward still computes fc1's output gradient from its weight, without
 * reading its input (that is only for the weight's gradient).
 */
static void test_frozen(void)
{
	static const char text[] =
		"{\"format\": \"memplan-net/1\", \"name\": \"frozen\", \"optimizer\": \"adam\","
		" \"layers\": [{\"name\": \"x\", \"type\": \"data\", \"shape\": [2, 8]},"
		"  {\"name\": \"fc1\", \"type\": \"fc\", \"inputs\": [\"x\"], \"shape\": [2, 8], \"params\": [[8, 8]]},"
		"  {\"name\": \"fc2\", \"type\": \"fc\", \"inputs\": [\"fc1\"], \"shape\": [2, 8], \"params\": [[8, 8]], \"frozen\": true},"
		"  {\"name\": \"fc3\", \"type\": \"fc\", \"inputs\": [\"fc2\"], \"shape\": [2, 8], \"params\": [[8, 8]]},"
		"  {\"name\": \"loss\", \"type\": \"loss\", \"inputs\": [\"fc3\"], \"shape\": [2]}]}";
	struct mp_error err = { "" };
	json_t *root = json_loads(text, 0, NULL);
	struct mp_net *net = root ? net_load_json(root, &err) : NULL;
	int32_t bwd;

	json_decref(root);
	CHECK(net != NULL);
	if (!net) {
		fprintf(stderr, "frozen: %s\n", err.msg);
		return;
	}
	CHECK(net_find_tensor(net, "fc2.param0") >= 0);
	CHECK(net_find_tensor(net, "fc2.param0.grad") < 0);
	CHECK(net_find_tensor(net, "fc2.param0.m") < 0);
	CHECK(net_find_op(net, "fc2.update") < 0);
	CHECK(net_find_op(net, "fc3.update") >= 0);
	/* two trainable 8x8 weights: gradients and two Adam moments */
	CHECK_U64(net_bytes_of_kind(net, MP_TK_PARAM), 3 * 256);
	CHECK_U64(net_bytes_of_kind(net, MP_TK_PARAM_GRAD), 2 * 256);
	CHECK_U64(net_bytes_of_kind(net, MP_TK_OPT_STATE), 4 * 256);
	bwd = net_find_op(net, "fc2.bwd");
	CHECK(bwd >= 0);
	if (bwd >= 0) {
		const struct mp_op *op = &net->ops[bwd];
		bool weight = false, input = false, dx = false;

		for (uint32_t k = 0; k < op->n_in; k++) {
			weight |= op->in[k] == net_find_tensor(net, "fc2.param0");
			input |= op->in[k] == net_find_tensor(net, "fc1.out");
		}
		for (uint32_t k = 0; k < op->n_out; k++)
			dx |= op->out[k] == net_find_tensor(net, "fc1.dout");
		CHECK(weight && !input && dx);
		CHECK_U64(op->n_out, 1);
	}
	net_free(net);
}

/*
 * QLoRA's 4-bit base ("quant"): a frozen fc whose [128, 256] weight (32768
 * elements, 512 blocks of 64) is NF4: 16384 bytes of codes, a float32
 * maximum per block (2048) and the 16-entry code book (64): 18496; with
 * double quantization the maxima take a byte each (512), a float32 per 256
 * of them (8) and an offset (4): 16972.  Forward and backward (which
 * computes fc0's output gradient) dequantize it into float32 workspace
 * (131072 bytes), which is not per-sample.
 */
static void test_quant(void)
{
	static const char *const q[] = { "nf4", "nf4-dq" };
	static const uint64_t wbytes[] = { 18496, 16972 };

	CHECK_U64(mp_quant_bytes(32768, MP_Q_NF4), 18496);
	CHECK_U64(mp_quant_bytes(32768, MP_Q_NF4_DQ), 16972);
	/* a partial block, an odd count: 65 elements, two blocks */
	CHECK_U64(mp_quant_bytes(65, MP_Q_NF4), 33 + 8 + 64);
	CHECK_U64(mp_quant_bytes(65, MP_Q_NF4_DQ), 33 + 2 + 4 + 4 + 64);
	for (int i = 0; i < 2; i++) {
		char text[1024];
		struct mp_error err = { "" };
		json_t *root;
		struct mp_net *net;
		int32_t w, op;

		snprintf(text, sizeof(text),
			 "{\"format\": \"memplan-net/1\", \"name\": \"q\", \"optimizer\": \"adam\", \"batch\": 4,"
			 " \"layers\": [{\"name\": \"x\", \"type\": \"data\", \"shape\": [4, 256]},"
			 "  {\"name\": \"fc0\", \"type\": \"fc\", \"inputs\": [\"x\"], \"shape\": [4, 256], \"params\": [[256, 256]]},"
			 "  {\"name\": \"fc\", \"type\": \"fc\", \"inputs\": [\"fc0\"], \"shape\": [4, 128],"
			 "   \"params\": [[128, 256], [128]], \"frozen\": true, \"quant\": \"%s\"},"
			 "  {\"name\": \"head\", \"type\": \"fc\", \"inputs\": [\"fc\"], \"shape\": [4, 8], \"params\": [[8, 128]]},"
			 "  {\"name\": \"loss\", \"type\": \"loss\", \"inputs\": [\"head\"], \"shape\": [4]}]}", q[i]);
		root = json_loads(text, 0, NULL);
		net = root ? net_load_json(root, &err) : NULL;
		json_decref(root);
		CHECK(net != NULL);
		if (!net) {
			fprintf(stderr, "quant %s: %s\n", q[i], err.msg);
			continue;
		}
		w = net_find_tensor(net, "fc.param0");
		CHECK(w >= 0);
		if (w >= 0)
			CHECK_U64(net->tensors[w].bytes, wbytes[i]);
		CHECK_U64(tensor_bytes(net, "fc.param1"), 128 * 4); /* the bias stays float32 */
		CHECK_U64(net_param_count(net), 65536 + 32768 + 128 + 8 * 128);
		CHECK(net_find_tensor(net, "fc.param0.grad") < 0);
		CHECK_U64(tensor_bytes(net, "fc.fwd.ws"), 32768 * 4);
		CHECK_U64(tensor_bytes(net, "fc.bwd.ws"), 32768 * 4);
		op = net_find_tensor(net, "fc.fwd.ws");
		CHECK(op >= 0 && !net->tensors[op].per_sample);
		op = net_find_op(net, "fc.fwd");
		CHECK(op >= 0 && net->ops[op].ws == net_find_tensor(net, "fc.fwd.ws"));
		net_free(net);
	}
}

int main(void)
{
	test_policies();
	test_frozen();
	test_quant();
	return unit_report("test_precision");
}
