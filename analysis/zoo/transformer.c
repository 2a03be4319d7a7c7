/*
 * The zoo's transformers: a GPT-2 decoder, a BERT encoder with its
 * pre-training heads and the Llama family (with LoRA), as Hugging Face
 * builds them, attention as one fused (flash) kernel unless asked eager.
 * O(layers).
 */
#include <stdio.h>
#include <string.h>

#include "build.h"

/* What both accept: depth 1..1024, hidden 1..65536, seq 1..2^20, and heads
 * 1..hidden dividing hidden. */
static int check_transformer(const struct zb *b, const struct zoo_opts *o)
{
	if (check_range(b->model, "layers (depth)", o->depth, 1, 1024, b->err) < 0 ||
	    check_range(b->model, "hidden", o->hidden, 1, 65536, b->err) < 0 ||
	    check_range(b->model, "seq", o->seq, 1, 1048576, b->err) < 0)
		return -1;
	if (check_range(b->model, "heads", o->heads, 1, o->hidden, b->err) < 0)
		return -1;
	if (o->hidden % o->heads) {
		mp_error_set(b->err, "%s: hidden %u is not a multiple of heads %u", b->model, o->hidden, o->heads);
		return -1;
	}
	return 0;
}

/* GPT-2 (Radford et al. 2019; Hugging Face GPT2LMHeadModel): pre-LN blocks,
 * GELU MLP of 4x width, dropout 0.1 on embeddings and residual branches,
 * 50257-token vocabulary, learned positions for max(1024, seq), the LM head
 * tied to the token embedding (an fc with no weight of its own). */
static void gen_gpt2(struct zb *b, uint32_t batch, uint32_t seq, uint32_t layers, uint32_t hidden)
{
	const uint64_t vocab = 50257, npos = seq > 1024 ? seq : 1024;
	struct zt ids = data(b, "tokens", 2, batch, seq, 0, 0, MP_DT_INT64), x, t, u;

	x = embedding(b, &ids, vocab, hidden, "wte");
	t = embedding(b, &ids, npos, hidden, "wpe");
	x = add2(b, &x, &t, "embed");
	x = dropout(b, &x, "drop");
	for (uint32_t i = 0; i < layers && !b->failed; i++) {
		size_t save = zb_push(b, "h.%u", i);

		t = layernorm(b, &x, "ln_1");
		t = fc(b, &t, 3 * (uint64_t)hidden, true, "attn.c_attn");
		t = attention(b, &t, true, "attn.core");
		t = fc(b, &t, hidden, true, "attn.c_proj");
		t = dropout(b, &t, "attn.resid_drop");
		x = add2(b, &x, &t, "residual_1");
		u = layernorm(b, &x, "ln_2");
		u = fc(b, &u, 4 * (uint64_t)hidden, true, "mlp.c_fc");
		u = act(b, &u, "gelu", false, "mlp.gelu");
		u = fc(b, &u, hidden, true, "mlp.c_proj");
		u = dropout(b, &u, "mlp.drop");
		x = add2(b, &x, &u, "residual_2");
		zb_pop(b, save);
	}
	x = layernorm(b, &x, "ln_f");
	x = fc_rows(b, &x, (uint64_t)batch * seq, hidden, vocab, false, false, NULL, "lm_head");
	comment_last(b, "weight tied to wte (memplan-net/1 has no shared parameters)");
	loss(b, &x, "loss");
}

int zoo_build_gpt2(struct zb *b, const struct zoo_opts *o)
{
	if (check_transformer(b, o) < 0)
		return -1;
	gen_gpt2(b, o->batch, o->seq, o->depth, o->hidden);
	snprintf(b->name, sizeof(b->name), "gpt2-%ux%u", o->depth, o->hidden);
	snprintf(b->desc, sizeof(b->desc), "GPT-2 decoder (Hugging Face GPT2LMHeadModel), %u layers, hidden %u, %u heads, seq %u, batch %u; attention as one fused (flash) kernel.",
		 o->depth, o->hidden, o->heads, o->seq, o->batch);
	return 0;
}

/* BERT (Devlin et al. 2019; Hugging Face BertForPreTraining): post-LN
 * encoder, 30522-token vocabulary, 512 positions, 2 segment types, pooler,
 * masked-LM head (decoder tied to the word embedding, its own bias) and
 * next-sentence head. */
static void gen_bert(struct zb *b, uint32_t batch, uint32_t seq, uint32_t layers, uint32_t hidden)
{
	const uint64_t vocab = 30522, npos = seq > 512 ? seq : 512;
	struct zt ids = data(b, "input_ids", 2, batch, seq, 0, 0, MP_DT_INT64);
	struct zt seg = data(b, "token_type_ids", 2, batch, seq, 0, 0, MP_DT_INT64);
	struct zt e[3], x, t, p;
	const struct zt *ep[3] = { &e[0], &e[1], &e[2] };

	e[0] = embedding(b, &ids, vocab, hidden, "embeddings.word");
	e[1] = embedding(b, &ids, npos, hidden, "embeddings.position");
	e[2] = embedding(b, &seg, 2, hidden, "embeddings.token_type");
	x = add(b, 3, ep, "embeddings.sum");
	x = layernorm(b, &x, "embeddings.ln");
	x = dropout(b, &x, "embeddings.drop");
	for (uint32_t i = 0; i < layers && !b->failed; i++) {
		size_t save = zb_push(b, "encoder.%u", i);

		t = fc(b, &x, 3 * (uint64_t)hidden, true, "attn.qkv");
		t = attention(b, &t, false, "attn.core");
		t = fc(b, &t, hidden, true, "attn.dense");
		t = dropout(b, &t, "attn.drop");
		x = add2(b, &t, &x, "attn.residual");
		x = layernorm(b, &x, "attn.ln");
		t = fc(b, &x, 4 * (uint64_t)hidden, true, "ffn.intermediate");
		t = act(b, &t, "gelu", false, "ffn.gelu");
		t = fc(b, &t, hidden, true, "ffn.dense");
		t = dropout(b, &t, "ffn.drop");
		x = add2(b, &t, &x, "ffn.residual");
		x = layernorm(b, &x, "ffn.ln");
		zb_pop(b, save);
	}
	/* pooler: the first token of each sequence */
	zt_dims(&p, 2, batch, hidden, 0, 0);
	p = fc_rows(b, &x, batch, hidden, hidden, true, true, &p, "pooler.dense");
	comment_last(b, "reads the first token of each sequence");
	p = act(b, &p, "tanh", false, "pooler.tanh");
	t = fc(b, &x, hidden, true, "mlm.transform");
	t = act(b, &t, "gelu", false, "mlm.gelu");
	t = layernorm(b, &t, "mlm.ln");
	t = fc_rows(b, &t, (uint64_t)batch * seq, hidden, vocab, false, true, NULL, "mlm.decoder");
	comment_last(b, "weight tied to embeddings.word (memplan-net/1 has no shared parameters); the parameter is the bias");
	loss(b, &t, "mlm.loss");
	p = fc(b, &p, 2, true, "nsp.fc");
	loss(b, &p, "nsp.loss");
}

int zoo_build_bert(struct zb *b, const struct zoo_opts *o)
{
	if (check_transformer(b, o) < 0)
		return -1;
	gen_bert(b, o->batch, o->seq, o->depth, o->hidden);
	snprintf(b->name, sizeof(b->name), "bert-%ux%u", o->depth, o->hidden);
	snprintf(b->desc, sizeof(b->desc), "BERT encoder with pre-training heads (Hugging Face BertForPreTraining), %u layers, hidden %u, %u heads, seq %u, batch %u; attention as one fused (flash) kernel.",
		 o->depth, o->hidden, o->heads, o->seq, o->batch);
	return 0;
}

/* ---- Llama ------------------------------------------------------------ */

/* Bits of the projections, in the order of a block. */
struct llama_cfg {
	uint32_t batch, seq, layers, hidden, heads, kv_heads, ffn, vocab;
	bool tied, qkv_bias, eager;
	uint32_t lora_rank;
	unsigned lora_targets;
	enum mp_quant quant;     /* of the frozen projections (QLoRA) */
	bool f32_stream;         /* autocast: the embedding, the norms and the
				  * residual stream stay float32 */
};

/* y * a constant (LoRA's alpha / r): autograd keeps nothing of a scalar. */
static struct zt scaled(struct zb *b, const struct zt *y, const char *suffix)
{
	const struct zt *in[1] = { y };
	struct zt o = *y;
	json_t *l = emit(b, &o, suffix, "custom", 1, in);

	json_object_set_new(l, "saves", json_array());
	finish(b, l, (double)zt_elems(y), NULL, NULL);
	return o;
}

/*
 * A projection of a block: an fc, frozen under LoRA, with adapters when it
 * is a target (PEFT's LoraLayer: base(x) + lora_B(lora_A(x)) * scaling,
 * lora_dropout 0): lora_A [r, in] and lora_B [out, r], no biases.
 */
static struct zt proj(struct zb *b, const struct llama_cfg *c, const struct zt *x, uint64_t nout,
		      bool bias, unsigned target, const char *name)
{
	struct zt y = fc(b, x, nout, bias, name), a, d;
	size_t save;

	if (!c->lora_rank)
		return y;
	freeze_last(b);
	if (c->quant)
		quantize_last(b, c->quant, (uint64_t)x->d[x->nd - 1] * nout);
	if (!(c->lora_targets & target))
		return y;
	save = zb_push(b, "%s", name);
	a = fc(b, x, c->lora_rank, false, "lora_A");
	d = fc(b, &a, nout, false, "lora_B");
	d = scaled(b, &d, "scaling");
	y = add2(b, &y, &d, "sum");
	zb_pop(b, save);
	return y;
}

/*
 * Llama (Touvron et al. 2023; Hugging Face LlamaForCausalLM, which Mistral
 * and Qwen2 share): pre-norm blocks of RMSNorm, q/k/v projections with
 * grouped-query heads and rotary embeddings on q and k, attention, o_proj,
 * RMSNorm and a SwiGLU MLP (down(silu(gate(x)) * up(x))); a final RMSNorm,
 * the LM head (tied to the embedding: no weight of its own) and the loss on
 * float32 logits (transformers >= 4.46: logits.float(), cross-entropy).
 * Everything but the adapters is frozen under LoRA.
 */
static void gen_llama(struct zb *b, const struct llama_cfg *c)
{
	const uint64_t hd = c->hidden / c->heads, kvd = hd * c->kv_heads;
	struct zt ids = data(b, "input_ids", 2, c->batch, c->seq, 0, 0, MP_DT_INT64), x, h, q, k, v, g, u;

	x = embedding(b, &ids, c->vocab, c->hidden, "embed_tokens");
	if (c->f32_stream)
		dtype_last(b, &x, MP_DT_FLOAT32);
	if (c->lora_rank)
		freeze_last(b);
	for (uint32_t i = 0; i < c->layers && !b->failed; i++) {
		size_t save = zb_push(b, "layers.%u", i);

		h = rmsnorm(b, &x, "input_layernorm");
		if (c->f32_stream)
			dtype_last(b, &h, MP_DT_FLOAT32);
		if (c->lora_rank)
			freeze_last(b);
		q = proj(b, c, &h, c->hidden, c->qkv_bias, ZOO_LORA_Q, "self_attn.q_proj");
		k = proj(b, c, &h, kvd, c->qkv_bias, ZOO_LORA_K, "self_attn.k_proj");
		v = proj(b, c, &h, kvd, c->qkv_bias, ZOO_LORA_V, "self_attn.v_proj");
		q = rope(b, &q, "self_attn.q_rope");
		k = rope(b, &k, "self_attn.k_rope");
		h = attention_gqa(b, &q, &k, &v, c->heads, c->eager, "self_attn.attn");
		h = proj(b, c, &h, c->hidden, false, ZOO_LORA_O, "self_attn.o_proj");
		x = add2(b, &x, &h, "residual_1");
		if (c->f32_stream)
			dtype_last(b, &x, MP_DT_FLOAT32);
		h = rmsnorm(b, &x, "post_attention_layernorm");
		if (c->f32_stream)
			dtype_last(b, &h, MP_DT_FLOAT32);
		if (c->lora_rank)
			freeze_last(b);
		g = proj(b, c, &h, c->ffn, false, ZOO_LORA_GATE, "mlp.gate_proj");
		u = proj(b, c, &h, c->ffn, false, ZOO_LORA_UP, "mlp.up_proj");
		g = act(b, &g, "silu", false, "mlp.act_fn");
		g = mul2(b, &g, &u, "mlp.mul");
		h = proj(b, c, &g, c->hidden, false, ZOO_LORA_DOWN, "mlp.down_proj");
		x = add2(b, &x, &h, "residual_2");
		if (c->f32_stream)
			dtype_last(b, &x, MP_DT_FLOAT32);
		zb_pop(b, save);
	}
	x = rmsnorm(b, &x, "norm");
	if (c->f32_stream)
		dtype_last(b, &x, MP_DT_FLOAT32);
	if (c->lora_rank)
		freeze_last(b);
	x = fc_rows(b, &x, (uint64_t)c->batch * c->seq, c->hidden, c->vocab, !c->tied, false, NULL, "lm_head");
	if (c->tied)
		comment_last(b, "weight tied to embed_tokens (memplan-net/1 has no shared parameters)");
	else if (c->lora_rank)
		freeze_last(b);
	x = cast(b, &x, MP_DT_FLOAT32, "logits_float");
	loss(b, &x, "loss");
}

int zoo_build_llama(struct zb *b, const struct zoo_opts *o)
{
	struct llama_cfg c = {
		o->batch, o->seq, o->depth, o->hidden, o->heads, o->kv_heads, o->ffn, o->vocab,
		o->tied > 0, o->qkv_bias > 0, o->attn > 0, o->lora_rank,
		o->lora_targets ? o->lora_targets : ZOO_LORA_QV, (enum mp_quant)o->quant,
		(o->prec_given & ZOO_PREC_POLICY) && o->precision.autocast,
	};
	static const char *const tnames[] = { "q", "k", "v", "o", "gate", "up", "down" };
	char targets[64] = "";

	if (check_transformer(b, o) < 0)
		return -1;
	if (!c.kv_heads)
		c.kv_heads = c.heads;
	if (!c.ffn) /* Llama's: 2/3 of 4x, rounded up to a multiple of 256 */
		c.ffn = (uint32_t)((8ull * c.hidden / 3 + 255) / 256 * 256);
	if (!c.vocab)
		c.vocab = 32000;
	if (check_range(b->model, "kv-heads", c.kv_heads, 1, c.heads, b->err) < 0 ||
	    check_range(b->model, "ffn", c.ffn, 1, 1048576, b->err) < 0 ||
	    check_range(b->model, "vocab", c.vocab, 1, 4194304, b->err) < 0 ||
	    (c.lora_rank && check_range(b->model, "lora rank", c.lora_rank, 1, c.hidden, b->err) < 0))
		return -1;
	if (c.quant && !c.lora_rank) {
		mp_error_set(b->err, "%s: a 4-bit base (--quant) is frozen: it needs --lora (QLoRA)", b->model);
		return -1;
	}
	if (c.heads % c.kv_heads) {
		mp_error_set(b->err, "%s: heads %u is not a multiple of kv-heads %u", b->model, c.heads, c.kv_heads);
		return -1;
	}
	gen_llama(b, &c);
	for (unsigned i = 0; i < 7; i++)
		if (c.lora_targets & (1u << i))
			snprintf(targets + strlen(targets), sizeof(targets) - strlen(targets), "%s%s",
				 targets[0] ? "," : "", tnames[i]);
	json_object_set_new(b->gen, "kv_heads", json_integer(c.kv_heads));
	json_object_set_new(b->gen, "ffn", json_integer(c.ffn));
	json_object_set_new(b->gen, "vocab", json_integer(c.vocab));
	json_object_set_new(b->gen, "tied", json_boolean(c.tied));
	json_object_set_new(b->gen, "qkv_bias", json_boolean(c.qkv_bias));
	json_object_set_new(b->gen, "attn", json_string(c.eager ? "eager" : "flash"));
	if (c.lora_rank) {
		json_object_set_new(b->gen, "lora_rank", json_integer(c.lora_rank));
		json_object_set_new(b->gen, "lora_targets", json_string(targets));
	}
	if (c.quant)
		json_object_set_new(b->gen, "quant", json_string(mp_quant_name(c.quant)));
	snprintf(b->name, sizeof(b->name), "llama-%ux%u", c.layers, c.hidden);
	snprintf(b->desc, sizeof(b->desc),
		 "Llama-family decoder (Hugging Face LlamaForCausalLM), %u layers, hidden %u, %u heads, %u kv-heads, ffn %u, vocab %u%s%s, seq %u, batch %u; attention %s%s%s%s%s%s.",
		 c.layers, c.hidden, c.heads, c.kv_heads, c.ffn, c.vocab, c.tied ? ", tied head" : "",
		 c.qkv_bias ? ", q/k/v biases" : "", c.seq, c.batch,
		 c.eager ? "eager (probabilities saved)" : "as one fused (flash) kernel",
		 c.lora_rank ? "; LoRA on " : "", c.lora_rank ? targets : "",
		 c.lora_rank ? ", the rest frozen" : "", c.quant ? ", its projections in 4 bits, " : "",
		 c.quant ? mp_quant_name(c.quant) : "");
	return 0;
}

unsigned zoo_lora_targets(const char *list)
{
	static const struct { const char *name; unsigned bits; } names[] = {
		{ "q", ZOO_LORA_Q }, { "k", ZOO_LORA_K }, { "v", ZOO_LORA_V }, { "o", ZOO_LORA_O },
		{ "gate", ZOO_LORA_GATE }, { "up", ZOO_LORA_UP }, { "down", ZOO_LORA_DOWN },
		{ "all", ZOO_LORA_ALL },
	};
	unsigned bits = 0;

	while (*list) {
		size_t n = strcspn(list, ","), k;

		for (k = 0; k < sizeof(names) / sizeof(names[0]); k++)
			if (n == strlen(names[k].name) && !strncmp(list, names[k].name, n))
				break;
		if (k == sizeof(names) / sizeof(names[0]))
			return 0;
		bits |= names[k].bits;
		list += n + (list[n] == ',');
	}
	return bits;
}
