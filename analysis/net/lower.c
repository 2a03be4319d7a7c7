/*
 * Lowering layers to ops (memplan-net(5), the lowering table): what each
 * layer type's backward reads, the checks that an in-place layer destroys
 * nothing a reader needs, Kahn's order over the layers (a cycle is an
 * error), then forward, backward and optimizer ops with the tensors they
 * read and write: outputs, masks, statistics, workspace, gradients,
 * parameter gradients and optimizer state, and under "grads": "keep" the op
 * that adds new parameter gradients into the kept ones.
 * O(layers + parameters + inputs).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loader.h"

/* An output of one element per channel: [N, C, 1, 1, ...]. */
static bool global_map(const struct mp_shape *y)
{
	if (y->nd < 3)
		return false;
	for (unsigned k = 2; k < y->nd; k++)
		if (y->d[k] != 1)
			return false;
	return true;
}

/*
 * What PyTorch's autograd saves where it differs from cuDNN's kernels
 * (tools/autograd/derivatives.yaml, torch 1.13 and 2.x): hardtanh (ReLU6)
 * and a non-in-place elu their input; max pool its input and int64 indices;
 * avg pool its input, except the global average pool that
 * adaptive_avg_pool2d computes as a mean (which keeps only sizes).  Else -1.
 */
static int pytorch_saves(const struct lspec *s, const struct mp_shape *out)
{
	switch (s->type) {
	case MP_L_RELU6: return SAVE_INPUT;
	case MP_L_ELU: return s->inplace ? SAVE_OUTPUT : SAVE_INPUT;
	case MP_L_POOL:
		if (s->pool_max)
			return SAVE_INPUT | SAVE_INDICES;
		return global_map(out) ? 0 : SAVE_INPUT;
	default: return -1;
	}
}

/*
 * What Hugging Face's eager modules keep under PyTorch's autograd beyond
 * the fused kernels memplan's layer types stand for (memplan-net(5),
 * FRAMEWORK), as extra saved bytes of the layer (its .saved or .probs
 * tensor) or workspace; a layer that says what it "saves" gets none.
 * RMSNorm (LlamaRMSNorm: x.float(), pow(2), mean, rsqrt, x * rsqrt,
 * .to(dtype), weight *): in float32 x.pow(2), which mean keeps (measured:
 * torch 1.13 frees it in mean's backward), and x * rsqrt, which the
 * weight's product keeps when the weight trains; below float32 x's float32
 * copy, which pow and x * rsqrt keep, pow's result, and the cast of x *
 * rsqrt back to x's dtype when the weight trains, less x itself, which
 * memplan keeps as the layer's input and PyTorch does not.  Eager attention with
 * fewer kv-heads than heads: repeat_kv's expanded copies of k and v, which
 * the two matmuls keep instead of k and v.  The loss (cross_entropy:
 * log_softmax, then nll_loss): log_softmax's output beside its input in the
 * forward, and nll_loss's dense gradient of it in the backward, each the
 * size of the logits: workspace of both ops.
 */
static void pytorch_extras(const struct loader *L, struct lspec *s)
{
	uint64_t q, k, v;

	switch (s->type) {
	case MP_L_RMSNORM:
		if (s->saves_given)
			break;
		if (s->dtype == MP_DT_FLOAT32)
			s->probs_bytes = (s->frozen ? 1 : 2) * 4 * s->elems;
		else
			s->probs_bytes = 8 * s->elems + (s->frozen ? 0 : s->out_bytes) -
					 (s->n_inputs ? L->ls[s->inputs[0]].out_bytes : 0);
		break;
	case MP_L_ATTENTION:
		if (!s->probs_bytes || s->n_inputs != 3 || s->saves_given) /* eager only */
			break;
		q = L->ls[s->inputs[0]].out_bytes;
		k = L->ls[s->inputs[1]].out_bytes;
		v = L->ls[s->inputs[2]].out_bytes;
		if (k < q && v < q)
			s->probs_bytes += 2 * q - k - v;
		break;
	case MP_L_LOSS:
		if (!s->ws_bytes && !s->saves_given && s->n_inputs) {
			s->ws_bytes = L->ls[s->inputs[0]].out_bytes;
			s->ws_per_sample = L->ls[s->inputs[0]].per_sample;
		}
		break;
	default:
		break;
	}
}

/*
 * torch.autocast (a "-autocast" precision): an fc or conv layer computes in
 * the activations' dtype from a copy of its float32 weight in that dtype
 * (autocast's cache keeps one per weight for the step) and, when its input
 * is in another dtype, a copy of the input; its backward keeps both copies,
 * not the input itself: L.wcopy (not per-sample) and L.saved.
 */
static void autocast_extras(const struct loader *L, struct lspec *s)
{
	enum mp_dtype low = L->net->precision.act;
	const struct lspec *in;

	if ((s->type != MP_L_FC && s->type != MP_L_CONV) || !s->n_params || s->saves_given)
		return;
	s->wcopy_bytes = s->param_elems[0] * mp_dtype_bytes(low);
	in = s->n_inputs ? &L->ls[s->inputs[0]] : NULL;
	if (in && in->dtype != low && (s->saves & SAVE_INPUT)) {
		s->probs_bytes += in->elems * mp_dtype_bytes(low);
		s->saves &= ~SAVE_INPUT;
	}
}

/* The lowering table of memplan-net(5). */
unsigned default_saves(const struct lspec *s, const struct mp_shape *out, enum mp_framework fw)
{
	int p = fw == MP_FW_PYTORCH ? pytorch_saves(s, out) : -1;

	if (p >= 0)
		return (unsigned)p;
	switch (s->type) {
	case MP_L_CONV: case MP_L_FC: return SAVE_INPUT | SAVE_PARAMS;
	case MP_L_RELU: case MP_L_SIGMOID: case MP_L_TANH: case MP_L_ELU:
	case MP_L_RELU6: case MP_L_SOFTMAX: return SAVE_OUTPUT;
	case MP_L_GELU: case MP_L_SILU: case MP_L_LOSS: case MP_L_EMBEDDING:
		return SAVE_INPUT;
	case MP_L_POOL: return s->pool_max ? SAVE_INPUT | SAVE_OUTPUT : 0;
	case MP_L_LRN: return SAVE_INPUT | SAVE_OUTPUT;
	case MP_L_BN: case MP_L_LAYERNORM: case MP_L_RMSNORM: return SAVE_INPUT | SAVE_STATS | SAVE_PARAMS;
	case MP_L_MUL: return SAVE_INPUT;
	case MP_L_DROPOUT: return SAVE_MASK;
	case MP_L_ATTENTION: return SAVE_INPUT | SAVE_OUTPUT | SAVE_STATS | SAVE_PARAMS;
	case MP_L_CUSTOM: return SAVE_INPUT | SAVE_OUTPUT | SAVE_PARAMS;
	default: return 0;
	}
}

/*
 * Bytes of layer s's parameter k's gradient, fp32 master copy (0: none) or
 * each optimizer state under the net's precision.  Without a policy all
 * three are the parameter's size (and no master).  A layer whose own
 * "dtype" differs from the policy's parameters keeps its gradients in that
 * dtype and needs no master copy of the master's dtype.
 */
enum { PS_GRAD, PS_MASTER, PS_STATE };
static uint64_t param_state_bytes(const struct mp_net *net, const struct lspec *s, uint32_t k, int what)
{
	const struct mp_precision *p = &net->precision;
	uint64_t n = s->param_elems[k];

	if (p->policy == MP_PREC_NONE)
		return what == PS_MASTER ? 0 : s->param_bytes[k];
	switch (what) {
	case PS_GRAD: return n * mp_dtype_bytes(s->pdtype == p->params ? p->grads : s->pdtype);
	case PS_MASTER: return p->master >= 0 && (enum mp_dtype)p->master != s->pdtype ?
			       n * mp_dtype_bytes((enum mp_dtype)p->master) : 0;
	default: return mp_state_bytes(n, p->state);
	}
}

static int lspec_algo_ws(const struct lspec *s)
{
	for (uint32_t k = 0; k < s->n_algos; k++)
		if (s->algos[k].ws)
			return 1;
	return 0;
}

/* In-place output aliases the input tensor: check no reader can see the
 * overwrite (memplan-net(5), "in place"). */
static int check_inplace(struct loader *L, uint32_t idx)
{
	struct lspec *s = &L->ls[idx];
	char path[64];

	if (s->type == MP_L_RESHAPE) {
		if (s->n_inputs != 1) {
			mp_error_set(L->err, "layers[%u].inputs: a reshape layer has exactly one input", idx);
			return -1;
		}
		if (s->out_bytes != L->ls[s->inputs[0]].out_bytes) {
			mp_error_set(L->err, "layers[%u].shape: a reshape keeps its input's size: '%s' is %llu bytes, its input '%s' is %llu bytes",
				     idx, s->name, (unsigned long long)s->out_bytes, L->ls[s->inputs[0]].name,
				     (unsigned long long)L->ls[s->inputs[0]].out_bytes);
			return -1;
		}
		return 0; /* a view writes nothing */
	}
	snprintf(path, sizeof(path), "layers[%u].inplace", idx);
	if (s->n_inputs != 1) {
		mp_error_set(L->err, "%s: an in-place layer has exactly one input", path);
		return -1;
	}
	if (s->out_bytes != L->ls[s->inputs[0]].out_bytes) {
		mp_error_set(L->err, "%s: output of '%s' (%llu bytes) differs from its input '%s' (%llu bytes)",
			     path, s->name, (unsigned long long)s->out_bytes,
			     L->ls[s->inputs[0]].name, (unsigned long long)L->ls[s->inputs[0]].out_bytes);
		return -1;
	}
	if (s->needs_grad && (s->saves & SAVE_INPUT)) {
		mp_error_set(L->err, "%s: '%s' saves its input for backward, which updating it in place destroys (\"framework\": \"pytorch\" saves a copy)", path, s->name);
		return -1;
	}
	/* walk back the chain of layers sharing this buffer */
	for (int32_t cur = s->inputs[0];;) {
		struct lspec *c = &L->ls[cur];

		if (c->n_consumers > 1) {
			mp_error_set(L->err, "%s: '%s' overwrites the output of '%s', which %u layers read",
				     path, s->name, c->name, c->n_consumers);
			return -1;
		}
		if (c->needs_grad && ((c->saves & SAVE_OUTPUT) ||
				      (c->inplace && c->type != MP_L_RESHAPE && (c->saves & SAVE_INPUT)))) {
			mp_error_set(L->err, "%s: '%s' overwrites the output of '%s', which its backward reads",
				     path, s->name, c->name);
			return -1;
		}
		if (!c->inplace)
			break;
		cur = c->inputs[0];
	}
	return 0;
}

/* Push layer i on the min-heap h of nh layers (by file position). */
static void ready_push(uint32_t *h, uint32_t *nh, uint32_t i)
{
	uint32_t c = (*nh)++;

	while (c && h[(c - 1) / 2] > i) {
		h[c] = h[(c - 1) / 2];
		c = (c - 1) / 2;
	}
	h[c] = i;
}

static uint32_t ready_pop(uint32_t *h, uint32_t *nh)
{
	uint32_t top = h[0], x = h[--*nh], c = 0;

	for (;;) {
		uint32_t k = 2 * c + 1;

		if (k >= *nh)
			break;
		if (k + 1 < *nh && h[k + 1] < h[k])
			k++;
		if (h[k] >= x)
			break;
		h[c] = h[k];
		c = k;
	}
	if (*nh)
		h[c] = x;
	return top;
}

/* Kahn's order over layers, the earliest in the file first among those
 * ready: a file already in order keeps its order, and one whose inputs come
 * later is lowered after them.  A cycle is reported with a layer on it. */
int order_layers(struct loader *L, uint32_t n, int32_t *order)
{
	uint32_t *indeg = mp_xcalloc(n, sizeof(*indeg)), tail = 0, nh = 0;
	uint32_t *heap = mp_xmalloc((n + 1) * sizeof(*heap));
	uint32_t *cstart = mp_xcalloc(n + 1, sizeof(*cstart)), *cons;
	int rc = 0;

	for (uint32_t i = 0; i < n; i++)
		for (uint32_t k = 0; k < L->ls[i].n_inputs; k++)
			cstart[L->ls[i].inputs[k] + 1]++;
	for (uint32_t i = 0; i < n; i++)
		cstart[i + 1] += cstart[i];
	cons = mp_xmalloc((cstart[n] + 1) * sizeof(*cons));
	{
		uint32_t *fill = mp_xcalloc(n, sizeof(*fill));

		for (uint32_t i = 0; i < n; i++)
			for (uint32_t k = 0; k < L->ls[i].n_inputs; k++) {
				uint32_t src = (uint32_t)L->ls[i].inputs[k];

				cons[cstart[src] + fill[src]++] = i;
			}
		free(fill);
	}
	for (uint32_t i = 0; i < n; i++) {
		indeg[i] = L->ls[i].n_inputs;
		if (!indeg[i])
			ready_push(heap, &nh, i);
	}
	while (nh) {
		uint32_t u = ready_pop(heap, &nh);

		order[tail++] = (int32_t)u;
		for (uint32_t k = cstart[u]; k < cstart[u + 1]; k++)
			if (--indeg[cons[k]] == 0)
				ready_push(heap, &nh, cons[k]);
	}
	free(heap);
	if (tail < n) {
		/* every unordered layer has an unordered input: walk inputs until a repeat */
		uint32_t start = 0;
		uint8_t *seen = mp_xcalloc(n, 1);

		while (indeg[start] == 0)
			start++;
		while (!seen[start]) {
			seen[start] = 1;
			for (uint32_t k = 0; k < L->ls[start].n_inputs; k++)
				if (indeg[L->ls[start].inputs[k]]) {
					start = (uint32_t)L->ls[start].inputs[k];
					break;
				}
		}
		/* start is on the cycle; name it and the input that closes it */
		for (uint32_t k = 0; k < L->ls[start].n_inputs; k++)
			if (indeg[L->ls[start].inputs[k]]) {
				mp_error_set(L->err, "layers[%u].inputs[%u]: cycle: '%s' depends on itself through '%s'",
					     start, k, L->ls[start].name, L->ls[L->ls[start].inputs[k]].name);
				break;
			}
		free(seen);
		rc = -1;
	}
	free(indeg);
	free(cstart);
	free(cons);
	return rc;
}

/* "grads": "keep": layer idx's op L.accumulate adds the backward's new
 * gradients into the kept .grad tensors, in place (AccumulateGrad with a
 * .grad that exists).  Its time is not modelled (0 ms): an elementwise add of
 * the parameters' size. */
static int accumulate_grads(struct loader *L, uint32_t idx, uint32_t np,
			    const int32_t *fresh, int32_t *grad)
{
	struct mp_net *net = L->net;
	struct mp_op *op;
	int32_t id;
	int32_t *in = arena_array(net, 2 * np, sizeof(int32_t));

	op = add_op(L, fmt_name(net, L->ls[idx].name, ".accumulate"), MP_PHASE_BWD, MP_L_CUSTOM, (int32_t)idx, &id);
	if (!op)
		return -1;
	op->fwd = net->layers[idx].fwd_op;
	op->batch = 1;
	memcpy(in, fresh, np * sizeof(int32_t));
	memcpy(in + np, grad, np * sizeof(int32_t));
	op->in = in;
	op->n_in = 2 * np;
	op->out = grad;
	op->n_out = np;
	return 0;
}

int lower_layers(struct loader *L, uint32_t n, const int32_t *order)
{
	struct mp_net *net = L->net;
	unsigned n_states = mp_optimizer_states(net->optimizer);
	int32_t scaler = -1; /* fp16: GradScaler's state, read by every update */
	int32_t *dout = mp_xmalloc(n * sizeof(*dout)); /* gradient of each layer's output */
	struct idlist in = { 0 }, out = { 0 };
	int rc = -1;

	/* the net's batch: the file's "batch", else the first data layer's;
	 * layers with a shape whose first dimension is that batch hold
	 * per-sample tensors */
	for (uint32_t k = 0; k < n; k++)
		if (L->ls[k].type == MP_L_DATA && L->ls[k].has_shape) {
			if (net->batch && L->ls[k].batch != net->batch) {
				mp_error_set(L->err, "batch: %u, but data layer '%s' has a batch of %u",
					     net->batch, L->ls[k].name, L->ls[k].batch);
				goto out;
			}
			net->batch = L->ls[k].batch;
			break;
		}
	for (uint32_t k = 0; k < n; k++)
		L->ls[k].per_sample = net->batch && L->ls[k].has_shape && L->ls[k].batch == net->batch;
	if (net->framework == MP_FW_PYTORCH)
		for (uint32_t k = 0; k < n; k++)
			pytorch_extras(L, &L->ls[k]);
	if (net->precision.autocast)
		for (uint32_t k = 0; k < n; k++)
			autocast_extras(L, &L->ls[k]);
	/* needs_grad in topological order: params, or an input that needs it */
	for (uint32_t k = 0; k < n; k++) {
		struct lspec *s = &L->ls[order[k]];

		s->needs_grad = s->type != MP_L_DATA && s->n_params > 0 && !s->frozen;
		for (uint32_t i = 0; i < s->n_inputs; i++)
			if (L->ls[s->inputs[i]].needs_grad)
				s->needs_grad = true;
	}
	/* PyTorch: autograd clones the input of an in-place op whose
	 * backward reads it.  The clone and the updated buffer are two
	 * tensors alive exactly as an input and a separate output are, so the
	 * layer is lowered out of place: its input tensor holds what the clone
	 * holds, its own output the updated values.  All of them first:
	 * check_inplace walks back through inputs listed anywhere in the file. */
	for (uint32_t i = 0; i < n; i++) {
		struct lspec *s = &L->ls[i];

		if (s->inplace && s->type != MP_L_RESHAPE && s->needs_grad && (s->saves & SAVE_INPUT) &&
		    net->framework == MP_FW_PYTORCH)
			s->inplace = false;
	}
	for (uint32_t i = 0; i < n; i++)
		if (L->ls[i].inplace && check_inplace(L, i) < 0)
			goto out;

	net->n_layers = n;
	/* in order: a layer reads (or, in place, aliases) its inputs' outputs */
	for (uint32_t q = 0; q < n; q++) {
		uint32_t i = (uint32_t)order[q];
		struct lspec *s = &L->ls[i];
		struct mp_layer *ly = &net->layers[i];
		const char *nm = s->name;
		int32_t *pid = arena_array(net, s->n_params, sizeof(int32_t));
		int32_t mask = -1, stats = -1, indices = -1, probs = -1, wcopy = -1, op_id;
		struct mp_op *op;
		char path[64];

		snprintf(path, sizeof(path), "layers[%u]", i);
		ly->name = nm;
		ly->type = s->type;
		ly->n_inputs = s->n_inputs;
		ly->inputs = s->inputs;
		ly->inplace = s->inplace;
		ly->quant = s->quant;
		ly->fwd_op = ly->bwd_op = ly->upd_op = -1;
		ly->pool_mode = s->type == MP_L_POOL && !s->pool_max;
		ly->dtype = s->dtype;
		ly->n_params = s->n_params; /* shape, params and geom: parse_layer and layer_geometry */
		ly->dout = ly->mask = ly->stats = -1;
		dout[i] = -1;
		if (s->inplace) {
			ly->out = net->layers[s->inputs[0]].out;
		} else {
			ly->out = add_tensor(L, fmt_name(net, nm, ".out"), s->out_bytes,
					     s->type == MP_L_DATA ? MP_TK_INPUT : MP_TK_ACTIVATION, (int32_t)i);
			if (ly->out < 0)
				goto dup_tensor;
			net->tensors[ly->out].per_sample = s->per_sample;
		}
		for (uint32_t k = 0; k < s->n_params; k++) {
			char suf[32];

			snprintf(suf, sizeof(suf), ".param%u", k);
			pid[k] = add_tensor(L, fmt_name(net, nm, suf), s->param_bytes[k], MP_TK_PARAM, (int32_t)i);
			if (pid[k] < 0)
				goto dup_tensor;
			if (k == 0 && s->quant)
				net->tensors[pid[k]].qelems = s->param_elems[0];
		}
		if (s->needs_grad && (s->saves & SAVE_MASK)) {
			uint64_t mb = s->elems; /* one byte per element */

			mask = add_tensor(L, fmt_name(net, nm, ".mask"), mb ? mb : 1, MP_TK_ACTIVATION, (int32_t)i);
			if (mask < 0)
				goto dup_tensor;
			net->tensors[mask].per_sample = s->per_sample;
		}
		if (s->needs_grad && (s->saves & SAVE_STATS)) {
			stats = add_tensor(L, fmt_name(net, nm, ".stats"), s->stats_bytes, MP_TK_ACTIVATION, (int32_t)i);
			if (stats < 0)
				goto dup_tensor;
			net->tensors[stats].per_sample = s->per_sample && s->type != MP_L_BN;
		}
		if (s->needs_grad && (s->saves & SAVE_INDICES)) {
			uint64_t ib;

			if (mp_mul_u64(s->elems ? s->elems : 1, 8, &ib) < 0 || ib > MP_MAX_BYTES) {
				mp_error_set(L->err, "%s: the max pool's int64 indices would be larger than 1 PiB", path);
				goto out;
			}
			indices = add_tensor(L, fmt_name(net, nm, ".indices"), ib, MP_TK_ACTIVATION, (int32_t)i);
			if (indices < 0)
				goto dup_tensor;
			net->tensors[indices].per_sample = s->per_sample;
		}
		if (s->needs_grad && s->probs_bytes) {
			probs = add_tensor(L, fmt_name(net, nm, s->type == MP_L_ATTENTION ? ".probs" : ".saved"), s->probs_bytes, MP_TK_ACTIVATION, (int32_t)i);
			if (probs < 0)
				goto dup_tensor;
			net->tensors[probs].per_sample = s->per_sample;
		}
		if (s->needs_grad && s->wcopy_bytes) {
			wcopy = add_tensor(L, fmt_name(net, nm, ".wcopy"), s->wcopy_bytes, MP_TK_ACTIVATION, (int32_t)i);
			if (wcopy < 0)
				goto dup_tensor;
		}
		ly->mask = mask;
		ly->stats = stats;
		/* forward op */
		op = add_op(L, fmt_name(net, nm, ".fwd"), MP_PHASE_FWD, s->type, (int32_t)i, &op_id);
		if (!op)
			goto dup_op;
		ly->fwd_op = op_id;
		op->ms = s->ms[0] >= 0 ? s->ms[0] : 0;
		op->recomputable = s->type != MP_L_DATA;
		for (uint32_t k = 0; k < s->n_inputs; k++)
			idl_add(&in, net->layers[s->inputs[k]].out);
		for (uint32_t k = 0; k < s->n_params; k++)
			idl_add(&in, pid[k]);
		/* a view writes nothing: its tensor keeps the version its
		 * producer left (a max pool re-run for its indices rebuilds
		 * what the flatten after it hands on) */
		if (s->type != MP_L_RESHAPE)
			idl_add(&out, ly->out);
		if (mask >= 0)
			idl_add(&out, mask);
		if (stats >= 0)
			idl_add(&out, stats);
		if (indices >= 0)
			idl_add(&out, indices);
		if (probs >= 0)
			idl_add(&out, probs);
		if (wcopy >= 0)
			idl_add(&out, wcopy);
		op->in = idl_commit(net, &in, &op->n_in);
		op->out = idl_commit(net, &out, &op->n_out);
		op->batch = s->batch;
		if (s->ws_bytes || s->dq_bytes || lspec_algo_ws(s)) {
			/* (a quantized weight's dequantized copy is not per-sample) */
			op->ws = add_tensor(L, fmt_name(net, nm, ".fwd.ws"), s->ws_bytes + s->dq_bytes, MP_TK_WORKSPACE, (int32_t)i);
			if (op->ws < 0)
				goto dup_tensor;
			net->tensors[op->ws].per_sample = (s->per_sample || s->ws_per_sample) && !s->dq_bytes;
		}
		for (uint32_t k = 0; k < s->n_algos; k++)
			if (s->algos[k].ms[0] >= 0)
				op->n_algos++;
		op->algos = arena_array(net, op->n_algos, sizeof(*op->algos));
		op->n_algos = 0;
		for (uint32_t k = 0; k < s->n_algos; k++)
			if (s->algos[k].ms[0] >= 0)
				op->algos[op->n_algos++] = (struct mp_algo){ s->algos[k].name, s->algos[k].ws, s->algos[k].ms[0], s->algos[k].batch };
		if (!s->timed && s->type != MP_L_DATA && s->type != MP_L_RESHAPE)
			net->n_untimed++;

		if (!s->needs_grad)
			continue;
		/* gradient of this layer's output, unless it ends the forward pass */
		if (s->n_consumers > 0) {
			dout[i] = add_tensor(L, fmt_name(net, nm, ".dout"), s->out_bytes, MP_TK_GRADIENT, (int32_t)i);
			if (dout[i] < 0)
				goto dup_tensor;
			net->tensors[dout[i]].per_sample = s->per_sample;
			ly->dout = dout[i];
		}
	}
	/* backward and optimizer ops, after all gradients exist */
	for (uint32_t i = 0; i < n; i++) {
		struct lspec *s = &L->ls[i];
		struct mp_layer *ly = &net->layers[i];
		const struct mp_op *fop = &net->ops[ly->fwd_op];
		const char *nm = s->name;
		struct mp_op *op;
		int32_t op_id, first_param = -1;
		uint32_t np = 0;

		if (!s->needs_grad)
			continue;
		for (uint32_t k = 0; k < fop->n_in; k++)
			if (net->tensors[fop->in[k]].kind == MP_TK_PARAM) {
				if (first_param < 0)
					first_param = (int32_t)k;
				np++;
			}
		if (s->frozen)
			np = 0; /* no parameter gradients: only the inputs' */
		op = add_op(L, fmt_name(net, nm, ".bwd"), MP_PHASE_BWD, s->type, (int32_t)i, &op_id);
		if (!op)
			goto dup_op;
		fop = &net->ops[ly->fwd_op]; /* add_op may move the array */
		ly->bwd_op = op_id;
		op->fwd = ly->fwd_op;
		op->ms = s->ms[1] >= 0 ? s->ms[1] : 0;
		/* a frozen conv or fc needs its input only for the weight's gradient */
		if ((s->saves & SAVE_INPUT) && !(s->frozen && (s->type == MP_L_CONV || s->type == MP_L_FC)))
			for (uint32_t k = 0; k < s->n_inputs; k++)
				idl_add(&in, net->layers[s->inputs[k]].out);
		if (s->saves & SAVE_OUTPUT)
			idl_add(&in, ly->out);
		if (s->saves & SAVE_PARAMS) {
			/* weights: conv and fc read the first parameter, others all */
			for (uint32_t k = 0; k < fop->n_in; k++)
				if (net->tensors[fop->in[k]].kind == MP_TK_PARAM &&
				    (!(s->type == MP_L_CONV || s->type == MP_L_FC) || (int32_t)k == first_param))
					idl_add(&in, fop->in[k]);
		}
		for (uint32_t k = 1; k < fop->n_out; k++) /* mask, stats, indices, probs, wcopy */
			idl_add(&in, fop->out[k]);
		if (dout[i] >= 0)
			idl_add(&in, dout[i]);
		for (uint32_t k = 0; k < s->n_inputs; k++) {
			int32_t src = s->inputs[k];

			if (L->ls[src].needs_grad && dout[src] >= 0) {
				/* an in-place layer's input gradient is its own dout's buffer
				 * in frameworks; memplan keeps them separate (conservative) */
				idl_add(&out, dout[src]);
				if (net->tensors[dout[src]].producer < 0)
					net->tensors[dout[src]].producer = op_id;
			}
		}
		{
			int32_t *pg = arena_array(net, np, sizeof(int32_t));
			int32_t *fresh = net->grads_keep ? arena_array(net, np, sizeof(int32_t)) : NULL;
			uint32_t j = 0;

			for (uint32_t k = 0; k < fop->n_in; k++) {
				const struct mp_tensor *pt = &net->tensors[fop->in[k]];
				const char *pname = pt->name;
				uint64_t pbytes;

				if (pt->kind != MP_TK_PARAM || s->frozen)
					continue;
				pbytes = param_state_bytes(net, s, j, PS_GRAD);
				pg[j] = add_tensor(L, fmt_name(net, pname, ".grad"), pbytes, MP_TK_PARAM_GRAD, (int32_t)i);
				if (pg[j] < 0)
					goto dup_tensor;
				if (fresh) {
					/* keep: .grad stays; the backward makes a new one
					 * that accumulate_grads adds into it */
					fresh[j] = add_tensor(L, fmt_name(net, pname, ".grad.new"), pbytes, MP_TK_GRADIENT, (int32_t)i);
					if (fresh[j] < 0)
						goto dup_tensor;
					net->tensors[fresh[j]].producer = op_id;
					idl_add(&out, fresh[j]);
				} else {
					net->tensors[pg[j]].producer = op_id;
					idl_add(&out, pg[j]);
				}
				j++;
			}
			op = &net->ops[op_id];
			op->in = idl_commit(net, &in, &op->n_in);
			op->out = idl_commit(net, &out, &op->n_out);
			op->batch = s->batch;
			if (s->ws_bytes || s->dq_bytes || lspec_algo_ws(s)) {
				/* (a quantized weight's dequantized copy is not per-sample) */
				op->ws = add_tensor(L, fmt_name(net, nm, ".bwd.ws"), s->ws_bytes + s->dq_bytes, MP_TK_WORKSPACE, (int32_t)i);
				if (op->ws < 0)
					goto dup_tensor;
				net->tensors[op->ws].per_sample = (s->per_sample || s->ws_per_sample) && !s->dq_bytes;
			}
			for (uint32_t k = 0; k < s->n_algos; k++)
				if (s->algos[k].ms[1] >= 0)
					op->n_algos++;
			op->algos = arena_array(net, op->n_algos, sizeof(*op->algos));
			op->n_algos = 0;
			for (uint32_t k = 0; k < s->n_algos; k++)
				if (s->algos[k].ms[1] >= 0)
					op->algos[op->n_algos++] = (struct mp_algo){ s->algos[k].name, s->algos[k].ws, s->algos[k].ms[1], s->algos[k].batch };
			if (fresh && np && accumulate_grads(L, i, np, fresh, pg) < 0)
				goto dup_op;

			if (net->optimizer == MP_OPT_NONE || np == 0)
				continue;
			/* optimizer update: reads grads and state, writes params and state */
			struct mp_op *u = add_op(L, fmt_name(net, nm, ".update"), MP_PHASE_OPT, s->type, (int32_t)i, &op_id);
			if (!u)
				goto dup_op;
			ly->upd_op = op_id;
			u->ms = s->ms[2] >= 0 ? s->ms[2] : 0;
			u->batch = 1;
			fop = &net->ops[ly->fwd_op];
			j = 0;
			for (uint32_t k = 0; k < fop->n_in; k++) {
				int32_t pt = fop->in[k];

				if (net->tensors[pt].kind != MP_TK_PARAM)
					continue;
				uint64_t mb = param_state_bytes(net, s, j, PS_MASTER);

				idl_add(&in, pt);
				idl_add(&in, pg[j]);
				idl_add(&out, pt);
				if (mb) {
					/* mixed precision: the update runs on fp32 master
					 * weights and casts them back into the parameter */
					int32_t mid = add_tensor(L, fmt_name(net, net->tensors[pt].name, ".master"),
								 mb, MP_TK_OPT_STATE, (int32_t)i);
					if (mid < 0)
						goto dup_tensor;
					idl_add(&in, mid);
					idl_add(&out, mid);
				}
				for (unsigned st = 0; st < n_states; st++) {
					int32_t sid = add_tensor(L, fmt_name(net, net->tensors[pt].name, st ? ".v" : ".m"),
								 param_state_bytes(net, s, j, PS_STATE), MP_TK_OPT_STATE, (int32_t)i);
					if (sid < 0)
						goto dup_tensor;
					idl_add(&in, sid);
					idl_add(&out, sid);
				}
				j++;
			}
			if (net->precision.loss_scale) {
				if (scaler < 0 && (scaler = add_tensor(L, "amp.grad_scaler", 8, MP_TK_OPT_STATE, -1)) < 0)
					goto dup_tensor;
				idl_add(&in, scaler);
				idl_add(&out, scaler);
			}
			u = &net->ops[op_id];
			u->in = idl_commit(net, &in, &u->n_in);
			u->out = idl_commit(net, &out, &u->n_out);
		}
	}
	rc = 0;
	goto out;
dup_tensor:
	mp_error_set(L->err, "a generated tensor name collides with another tensor; rename the layer");
	goto out;
dup_op:
	mp_error_set(L->err, "a generated op name collides with another op; rename the layer");
out:
	idl_release(&in);
	idl_release(&out);
	free(dout);
	return rc;
}
