/*
 * The zoo's recurrent network: an LSTM seq2seq with additive attention as
 * TF-NMT builds it, the model of tf-swap-out-in 3.2, unrolled over its
 * steps: O(seq * depth) layers.
 */
#include <stdio.h>
#include <stdlib.h>

#include "build.h"

/*
 * An LSTM cell step as a custom layer.  Its output is [B, 6, H]: h, c and
 * the four gate activations, which is what the step's backward reads (cuDNN
 * keeps them in its reserve space); the next step and the layer above read
 * it.  The weights [4H, in+H] and bias [4H] are shared by all steps of the
 * layer; they are listed on step 0 only, as memplan-net/1 has no shared
 * parameters, so the model's parameter count is right.
 */
static struct zt lstm_cell(struct zb *b, unsigned n_in, const struct zt *const *in,
			   uint64_t in_f, uint64_t batch, uint64_t hidden, bool params,
			   const char *suffix)
{
	struct zt o;
	json_t *l;
	double io;

	zt_dims(&o, 3, batch, 6, hidden, 0);
	l = emit(b, &o, suffix, "custom", n_in, in);
	json_object_set_new(l, "comment", json_string(params ?
		"LSTM cell: output h, c and 4 gates; weights shared by all steps, listed here" :
		"LSTM cell: output h, c and 4 gates; weights on step 0"));
	if (params) {
		add_param4(b, l, 2, 4 * hidden, in_f + hidden, 0, 0);
		add_param4(b, l, 1, 4 * hidden, 0, 0, 0);
	}
	/* bytes: x_t, h and c in, the output, the weights */
	io = (double)batch * (double)(in_f + 2 * hidden) * b->esz + zt_bytes(&o) +
	     (double)(4 * hidden * (in_f + hidden + 1)) * b->esz;
	b->io_bytes = io;
	if (!params)
		b->param_bytes = 0;
	finish(b, l, 2.0 * (double)batch * (double)(4 * hidden) * (double)(in_f + hidden) +
		     10.0 * (double)batch * (double)hidden, NULL, NULL);
	return o;
}

/*
 * LSTM encoder-decoder with additive (Bahdanau) attention as TF-NMT builds
 * it, the model of tf-swap-out-in 3.2: depth LSTM layers each side, unrolled
 * over seq steps; decoder state starts from the encoder's final state; input
 * feeding (the previous attention output joins the embedding); at each
 * decoder step the score v^T tanh(keys + W q) keeps a [B, T, H] intermediate
 * for backward, O(T^2 B H) in all (the memory 3.2.1 targets); an attention
 * layer W_a [h; context] without bias; a vocabulary projection without bias.
 * Vocabulary 32000 on both sides.
 */
static void gen_seq2seq(struct zb *b, uint32_t batch, uint32_t seq, uint32_t layers, uint32_t hidden)
{
	const uint64_t vocab = 32000, B = batch, H = hidden, T = seq;
	struct zt src = data(b, "src_ids", 2, B, T, 0, 0, MP_DT_INT64);
	struct zt tgt = data(b, "tgt_ids", 2, B, T, 0, 0, MP_DT_INT64);
	struct zt semb, temb, keys, mem, shape, prev_attn;
	struct zt *enc = mp_xcalloc((size_t)layers * seq, sizeof(*enc));
	struct zt *dec = mp_xcalloc(layers, sizeof(*dec));
	struct zt *outs = mp_xcalloc(seq, sizeof(*outs));
	const struct zt **xs = mp_xcalloc(seq > 3 ? seq : 3, sizeof(*xs));
	char nm[64];

	semb = embedding(b, &src, vocab, H, "src_embed");
	temb = embedding(b, &tgt, vocab, H, "tgt_embed");
	for (uint32_t t = 0; t < seq && !b->failed; t++)
		for (uint32_t l = 0; l < layers; l++) {
			const struct zt *in[2];
			unsigned n = 0;

			in[n++] = l ? &enc[(size_t)(l - 1) * seq + t] : &semb;
			if (t)
				in[n++] = &enc[(size_t)l * seq + t - 1];
			snprintf(nm, sizeof(nm), "enc.l%u.t%u", l, t);
			enc[(size_t)l * seq + t] = lstm_cell(b, n, in, H, B, H, t == 0, nm);
		}
	/* encoder outputs (the top layer's h at every step) and keys W_1 h_s */
	for (uint32_t t = 0; t < seq; t++)
		xs[t] = &enc[(size_t)(layers - 1) * seq + t];
	zt_dims(&shape, 3, B, T, H, 0);
	shape.esz = b->esz;
	mem = concat(b, seq, xs, 1, &shape, "enc.memory");
	keys = fc(b, &mem, H, false, "attn.keys");
	for (uint32_t t = 0; t < seq && !b->failed; t++) {
		size_t save = zb_push(b, "dec.t%u", t);
		struct zt q, s, ctx, cat;
		bool first = t == 0;

		for (uint32_t l = 0; l < layers; l++) {
			const struct zt *in[3];
			unsigned n = 0;

			in[n++] = l ? &dec[l - 1] : &temb;
			if (l == 0 && !first)
				in[n++] = &prev_attn;
			in[n++] = first ? &enc[(size_t)l * seq + seq - 1] : &dec[l];
			snprintf(nm, sizeof(nm), "l%u", l);
			dec[l] = lstm_cell(b, n, in, l ? H : 2 * H, B, H, first, nm);
		}
		zt_dims(&q, 3, B, 1, H, 0); /* expanded over the T keys: broadcasts */
		q = fc_rows(b, &dec[layers - 1], B, H, H, first, false, &q, "query");
		s = add2(b, &keys, &q, "score_add");
		s = act(b, &s, "tanh", false, "score_tanh");
		s = fc_rows(b, &s, B * T, H, 1, first, false, NULL, "score");
		s = softmax(b, &s, "align");
		{
			const struct zt *in[2] = { &s, &mem };
			json_t *l;

			zt_dims(&ctx, 2, B, H, 0, 0);
			l = emit(b, &ctx, "context", "custom", 2, in);
			json_object_set_new(l, "comment", json_string("context: alignment-weighted sum of the encoder outputs"));
			finish(b, l, 2.0 * (double)(B * T * H), NULL, NULL);
		}
		{
			const struct zt *in[2] = { &dec[layers - 1], &ctx };

			zt_dims(&shape, 2, B, 2 * H, 0, 0);
			shape.esz = b->esz;
			cat = concat(b, 2, in, 1, &shape, "cat");
		}
		prev_attn = fc_rows(b, &cat, B, 2 * H, H, first, false, NULL, "attention");
		outs[t] = prev_attn;
		zb_pop(b, save);
	}
	for (uint32_t t = 0; t < seq; t++)
		xs[t] = &outs[t];
	zt_dims(&shape, 3, B, T, H, 0);
	shape.esz = b->esz;
	mem = concat(b, seq, xs, 1, &shape, "dec.outputs");
	mem = fc(b, &mem, vocab, false, "proj");
	loss(b, &mem, "loss");
	free(enc);
	free(dec);
	free(outs);
	free(xs);
}

int zoo_build_seq2seq(struct zb *b, const struct zoo_opts *o)
{
	/* it unrolls: about seq * (2 * depth + 8) layers */
	if (check_range(b->model, "LSTM layers (depth)", o->depth, 1, 16, b->err) < 0 ||
	    check_range(b->model, "hidden", o->hidden, 1, 65536, b->err) < 0 ||
	    check_range(b->model, "seq", o->seq, 1, 2048, b->err) < 0)
		return -1;
	gen_seq2seq(b, o->batch, o->seq, o->depth, o->hidden);
	snprintf(b->name, sizeof(b->name), "seq2seq-%ux%u-t%u", o->depth, o->hidden, o->seq);
	snprintf(b->desc, sizeof(b->desc), "LSTM seq2seq with additive attention and input feeding (TF-NMT, tf-swap-out-in 3.2), %u layers, hidden %u, %u steps unrolled, vocabulary 32000, batch %u.",
		 o->depth, o->hidden, o->seq, o->batch);
	return 0;
}
