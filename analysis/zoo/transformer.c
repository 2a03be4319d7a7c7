/*
 * The zoo's transformers: a GPT-2 decoder and a BERT encoder with its
 * pre-training heads, as Hugging Face builds them, attention as one fused
 * (flash) kernel.  O(layers).
 */
#include <stdio.h>

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
