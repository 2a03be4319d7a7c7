/*
 * zoo: generators of memplan-net/1 descriptions of published networks
 * (memplan-gen(1)) at any batch, depth, image or sequence size, with
 * per-layer times estimated by a roofline model of a device.  The result is a
 * jansson object that net_load_json accepts; the caller owns it.  Never prints.
 */
#ifndef MP_ZOO_H
#define MP_ZOO_H

#include <jansson.h>
#include <stdint.h>

#include "../base/device.h"
#include "../net/net.h"
#include "../base/util.h"

/* The device whose roofline times a net gets when none is given. */
#define ZOO_DEFAULT_DEVICE "v100-16g"

/* Options a model may accept besides batch, dtype, optimizer and device. */
enum {
	ZOO_OPT_DEPTH = 1, ZOO_OPT_IMAGE = 2, ZOO_OPT_SEQ = 4, ZOO_OPT_HIDDEN = 8,
	ZOO_OPT_HEADS = 16, ZOO_OPT_KV_HEADS = 32, ZOO_OPT_FFN = 64, ZOO_OPT_VOCAB = 128,
	ZOO_OPT_LLAMA = 256,     /* --tied, --attn, --lora (llama) */
};
#define ZOO_N_OPTS 9

/* LoRA's targets: the projections of a Llama block (ZOO_LORA_QV default). */
enum {
	ZOO_LORA_Q = 1, ZOO_LORA_K = 2, ZOO_LORA_V = 4, ZOO_LORA_O = 8,
	ZOO_LORA_GATE = 16, ZOO_LORA_UP = 32, ZOO_LORA_DOWN = 64,
	ZOO_LORA_QV = ZOO_LORA_Q | ZOO_LORA_V, ZOO_LORA_ALL = 127,
};
/* "q,v" or "all" -> bits; 0 when a name is unknown. */
unsigned zoo_lora_targets(const char *list);

struct zoo_model {
	const char *name;       /* "resnet", "gpt2", ... */
	const char *summary;    /* one line: what it is and its defaults */
	unsigned options;       /* ZOO_OPT_* it accepts */
};

/* The models, in the order memplan-gen(1) lists them (static storage). */
unsigned zoo_model_count(void);
const struct zoo_model *zoo_model_at(unsigned i);

/*
 * Resolve a model name or an alias that presets options ("resnet50" is
 * resnet with depth 50, "gpt2-medium" is gpt2 with 24 layers, 1024 hidden,
 * 16 heads).  Returns the model, or NULL; *preset gets the ZOO_OPT_* bits the
 * alias fixes (may be NULL).
 */
const struct zoo_model *zoo_model_find(const char *name, unsigned *preset);

enum {
	ZOO_PREC_POLICY = 1, ZOO_PREC_PARAMS = 2, ZOO_PREC_GRADS = 4, ZOO_PREC_MASTER = 8,
	ZOO_PREC_STATE = 16,
};

struct zoo_opts {
	uint32_t batch;          /* 0: the model's default, for each of these */
	uint32_t depth;          /* resnet depth; transformer or LSTM layers */
	uint32_t image_h, image_w;
	uint32_t seq, hidden, heads;
	uint32_t kv_heads, ffn, vocab; /* llama: grouped-query heads, MLP width, vocabulary */
	int tied;                /* llama: LM head tied to the embedding; -1: the model's */
	int qkv_bias;            /* llama: q, k, v projections with a bias (Qwen2); -1: the model's */
	int attn;                /* llama: 0 flash (sdpa), 1 eager; -1: flash */
	uint32_t lora_rank;      /* llama: LoRA adapters of this rank; 0: full fine-tuning */
	unsigned lora_targets;   /* ZOO_LORA_*; 0: q and v */
	int quant;               /* llama: enum mp_quant of the frozen projections (QLoRA); 0: none */
	int dtype;               /* enum mp_dtype; -1: float32 */
	int optimizer;           /* enum mp_optimizer; -1: the model's default */
	int grads_keep;          /* "grads": 1 keep, 0 set_to_none; -1: not written */
	int framework;           /* enum mp_framework for "framework"; -1: not written */
	/* "precision": written when prec_given has ZOO_PREC_POLICY; the other
	 * bits say which of its dtypes override the policy's */
	struct mp_precision precision;
	unsigned prec_given;
	const struct mp_device *device; /* NULL: ZOO_DEFAULT_DEVICE */
};
void zoo_opts_init(struct zoo_opts *o);

/*
 * Build the memplan-net/1 description of model (a name or alias) under o.
 * Returns a new reference (json_decref it), or NULL with *err saying what is
 * wrong ("resnet: depth 60 is not 18, 34, 50, 101, 152 or 3*(6+32+n3+6)+2
 * with n3 >= 0").  Options the model does not take are refused.
 */
json_t *zoo_generate(const char *model, const struct zoo_opts *o, struct mp_error *err);

/*
 * The stage sizes of a ResNet of the given depth: torchvision's for 18, 34
 * (basic blocks), 50, 101, 152 (bottlenecks); otherwise SuperNeurons Table 4's
 * family depth = 3*(n1+n2+n3+n4)+2 with n1 = 6, n2 = 32, n4 = 6, where a
 * depth not of that form is rounded down (2500 -> n3 = 788, depth 2498, the
 * SuperNeurons "ResNet-2500").  Fills n[4], *bottleneck and *effective (the
 * depth built).  0, or -1 with *err for depths below 134 outside the list.
 */
int zoo_resnet_stages(uint32_t depth, uint32_t n[4], int *bottleneck,
		      uint32_t *effective, struct mp_error *err);

/*
 * The options that regenerate net, a net zoo_generate wrote (root is its
 * JSON): the model named in its "generator" (*model, borrowed from root),
 * the generator's sizes and the top-level dtype, precision, optimizer, grads
 * and framework, o->device NULL (the caller picks the device).  Checked by
 * regenerating on net's device: the layers must come back, times aside.
 * 0, or -1 with *err (no "generator", a key this reader does not know, a
 * net edited since, or written by another version).
 */
int zoo_opts_from_net(const json_t *root, const struct mp_net *net, const char **model, struct zoo_opts *o,
		      struct mp_error *err);

#endif
