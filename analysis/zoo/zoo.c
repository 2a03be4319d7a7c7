/*
 * Model zoo (memplan-gen(1)): the table of models, each with its line in the
 * listing, its defaults and its build function, and zoo_generate, which
 * resolves a name or an alias, checks and completes the options, has the
 * model's build function write the layers and adds the net's top-level keys.
 * The build functions are by family in cnn.c, transformer.c and rnn.c, over
 * the layer vocabulary of layers.c (build.h).  O(models + aliases), then
 * the build function's O(layers).
 */
#include "zoo.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../net/net.h"
#include "build.h"

/* A model: its line in memplan-gen(1), its defaults (0 for the options it
 * does not take; heads: hidden / 64, or 1 when hidden is not a multiple of
 * 64) and its build function. */
struct zoo_entry {
	struct zoo_model model;
	uint32_t batch;
	uint32_t image;              /* height and width */
	uint32_t depth, hidden, seq;
	enum mp_optimizer optimizer;
	zoo_build_fn *build;
};

/* In the order memplan-gen(1) lists them.  A new model is a row here and its
 * build function in its family's file. */
static const struct zoo_entry models[] = {
	{ .model = { "alexnet", "AlexNet (torchvision), batch 128, 224x224", ZOO_OPT_IMAGE },
	  .batch = 128, .image = 224, .optimizer = MP_OPT_MOMENTUM, .build = zoo_build_alexnet },
	{ .model = { "vgg16", "VGG-16 (torchvision, configuration D), batch 64, 224x224", ZOO_OPT_IMAGE },
	  .batch = 64, .image = 224, .optimizer = MP_OPT_MOMENTUM, .build = zoo_build_vgg16 },
	{ .model = { "vgg19", "VGG-19 (torchvision, configuration E), batch 64, 224x224", ZOO_OPT_IMAGE },
	  .batch = 64, .image = 224, .optimizer = MP_OPT_MOMENTUM, .build = zoo_build_vgg19 },
	{ .model = { "resnet", "ResNet, depth 18/34/50/101/152 or 3*(6+32+n3+6)+2 (SuperNeurons), default 50, batch 32, 224x224",
		     ZOO_OPT_DEPTH | ZOO_OPT_IMAGE },
	  .batch = 32, .image = 224, .depth = 50, .optimizer = MP_OPT_MOMENTUM, .build = zoo_build_resnet },
	{ .model = { "inception-v4", "Inception-v4 (Szegedy et al. 2016), batch 32, 299x299", ZOO_OPT_IMAGE },
	  .batch = 32, .image = 299, .optimizer = MP_OPT_MOMENTUM, .build = zoo_build_inception_v4 },
	{ .model = { "densenet-121", "DenseNet-121 (torchvision), batch 32, 224x224", ZOO_OPT_IMAGE },
	  .batch = 32, .image = 224, .optimizer = MP_OPT_MOMENTUM, .build = zoo_build_densenet121 },
	{ .model = { "unet", "U-Net (Ronneberger et al. 2015), batch 1, 572x572, 1 channel in, 2 classes", ZOO_OPT_IMAGE },
	  .batch = 1, .image = 572, .optimizer = MP_OPT_MOMENTUM, .build = zoo_build_unet },
	{ .model = { "mobilenet-v2", "MobileNet-V2 (torchvision), batch 64, 224x224", ZOO_OPT_IMAGE },
	  .batch = 64, .image = 224, .optimizer = MP_OPT_MOMENTUM, .build = zoo_build_mobilenet_v2 },
	{ .model = { "gpt2", "GPT-2 decoder, 12 layers, 768 hidden, 12 heads, seq 1024, batch 8",
		     ZOO_OPT_DEPTH | ZOO_OPT_SEQ | ZOO_OPT_HIDDEN | ZOO_OPT_HEADS },
	  .batch = 8, .depth = 12, .hidden = 768, .seq = 1024, .optimizer = MP_OPT_ADAM,
	  .build = zoo_build_gpt2 },
	{ .model = { "bert", "BERT encoder with pre-training heads, 12 layers, 768 hidden, 12 heads, seq 128, batch 32",
		     ZOO_OPT_DEPTH | ZOO_OPT_SEQ | ZOO_OPT_HIDDEN | ZOO_OPT_HEADS },
	  .batch = 32, .depth = 12, .hidden = 768, .seq = 128, .optimizer = MP_OPT_ADAM,
	  .build = zoo_build_bert },
	{ .model = { "llama", "Llama-family decoder (RMSNorm, RoPE, GQA, SwiGLU), llama3-8b's shape, seq 4096, batch 1; presets below",
		     ZOO_OPT_DEPTH | ZOO_OPT_SEQ | ZOO_OPT_HIDDEN | ZOO_OPT_HEADS | ZOO_OPT_KV_HEADS |
		     ZOO_OPT_FFN | ZOO_OPT_VOCAB | ZOO_OPT_LLAMA },
	  .batch = 1, .depth = 32, .hidden = 4096, .seq = 4096, .optimizer = MP_OPT_ADAMW,
	  .build = zoo_build_llama },
	{ .model = { "seq2seq", "LSTM seq2seq with additive attention (TF-NMT), 2 layers, 512 hidden, seq 50, batch 128",
		     ZOO_OPT_DEPTH | ZOO_OPT_SEQ | ZOO_OPT_HIDDEN },
	  .batch = 128, .depth = 2, .hidden = 512, .seq = 50, .optimizer = MP_OPT_SGD,
	  .build = zoo_build_seq2seq },
};

/* Aliases fix options; llama presets also kv-heads, ffn, vocab, a tied head
 * and q, k, v biases (Hugging Face config.json of each model). */
static const struct {
	const char *alias, *model;
	uint32_t depth, hidden, heads;
	uint32_t kv_heads, ffn, vocab;
	bool tied, qkv_bias;
} aliases[] = {
	{ "vgg-16", "vgg16", 0, 0, 0, 0, 0, 0, false, false }, { "vgg-19", "vgg19", 0, 0, 0, 0, 0, 0, false, false },
	{ "inception_v4", "inception-v4", 0, 0, 0, 0, 0, 0, false, false }, { "inceptionv4", "inception-v4", 0, 0, 0, 0, 0, 0, false, false },
	{ "densenet121", "densenet-121", 0, 0, 0, 0, 0, 0, false, false }, { "densenet", "densenet-121", 0, 0, 0, 0, 0, 0, false, false },
	{ "mobilenet_v2", "mobilenet-v2", 0, 0, 0, 0, 0, 0, false, false }, { "mobilenetv2", "mobilenet-v2", 0, 0, 0, 0, 0, 0, false, false },
	{ "u-net", "unet", 0, 0, 0, 0, 0, 0, false, false },
	{ "gpt2-small", "gpt2", 12, 768, 12, 0, 0, 0, false, false }, { "gpt2-medium", "gpt2", 24, 1024, 16, 0, 0, 0, false, false },
	{ "gpt2-large", "gpt2", 36, 1280, 20, 0, 0, 0, false, false }, { "gpt2-xl", "gpt2", 48, 1600, 25, 0, 0, 0, false, false },
	{ "bert-base", "bert", 12, 768, 12, 0, 0, 0, false, false }, { "bert-large", "bert", 24, 1024, 16, 0, 0, 0, false, false },
	{ "lstm-seq2seq", "seq2seq", 0, 0, 0, 0, 0, 0, false, false },
	{ "llama2-7b", "llama", 32, 4096, 32, 32, 11008, 32000, false, false },
	{ "llama2-13b", "llama", 40, 5120, 40, 40, 13824, 32000, false, false },
	{ "llama3-8b", "llama", 32, 4096, 32, 8, 14336, 128256, false, false },
	{ "llama3-70b", "llama", 80, 8192, 64, 8, 28672, 128256, false, false },
	{ "llama3.2-1b", "llama", 16, 2048, 32, 8, 8192, 128256, true, false },
	{ "llama3.2-3b", "llama", 28, 3072, 24, 8, 8192, 128256, true, false },
	{ "mistral-7b", "llama", 32, 4096, 32, 8, 14336, 32000, false, false },
	{ "qwen2-7b", "llama", 28, 3584, 28, 4, 18944, 152064, false, true },
	{ "qwen2-0.5b", "llama", 24, 896, 14, 2, 4864, 151936, true, true },
	{ "tinyllama-1.1b", "llama", 22, 2048, 32, 4, 5632, 32000, false, false },
};

unsigned zoo_model_count(void)
{
	return sizeof(models) / sizeof(models[0]);
}

const struct zoo_model *zoo_model_at(unsigned i)
{
	return i < zoo_model_count() ? &models[i].model : NULL;
}

/* The row of the model named name (any case), -1 if none. */
static int model_index(const char *name)
{
	for (unsigned i = 0; i < zoo_model_count(); i++)
		if (!strcasecmp(name, models[i].model.name))
			return (int)i;
	return -1;
}

/* Row of a model name or alias, and the options an alias fixes (through *o
 * when not NULL); -1 if none. */
static int find_model(const char *name, unsigned *preset, struct zoo_opts *o)
{
	unsigned p = 0;
	int m = model_index(name);

	if (m >= 0) {
		if (preset)
			*preset = 0;
		return m;
	}
	for (size_t i = 0; i < sizeof(aliases) / sizeof(aliases[0]); i++)
		if (!strcasecmp(name, aliases[i].alias)) {
			if (aliases[i].depth)
				p |= ZOO_OPT_DEPTH;
			if (aliases[i].hidden)
				p |= ZOO_OPT_HIDDEN | ZOO_OPT_HEADS;
			if (aliases[i].vocab)
				p |= ZOO_OPT_KV_HEADS | ZOO_OPT_FFN | ZOO_OPT_VOCAB;
			if (o && aliases[i].vocab) {
				o->kv_heads = aliases[i].kv_heads;
				o->ffn = aliases[i].ffn;
				o->vocab = aliases[i].vocab;
				if (o->tied < 0)
					o->tied = aliases[i].tied;
				o->qkv_bias = aliases[i].qkv_bias;
			}
			if (o) {
				if (aliases[i].depth)
					o->depth = aliases[i].depth;
				if (aliases[i].hidden) {
					o->hidden = aliases[i].hidden;
					o->heads = aliases[i].heads;
				}
			}
			if (preset)
				*preset = p;
			m = model_index(aliases[i].model);
			MP_ASSERT(m >= 0);
			return m;
		}
	/* resnetN, resnet-N */
	if (!strncasecmp(name, "resnet", 6)) {
		const char *d = name + 6 + (name[6] == '-');
		char *end;
		unsigned long v;

		if (*d < '1' || *d > '9')
			return -1;
		v = strtoul(d, &end, 10);
		if (*end || v > 50000)
			return -1;
		if (o)
			o->depth = (uint32_t)v;
		if (preset)
			*preset = ZOO_OPT_DEPTH;
		return model_index("resnet");
	}
	return -1;
}


const struct zoo_model *zoo_model_find(const char *name, unsigned *preset)
{
	int m = find_model(name, preset, NULL);

	return m < 0 ? NULL : &models[m].model;
}

void zoo_opts_init(struct zoo_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->dtype = -1;
	o->optimizer = -1;
	o->grads_keep = -1;
	o->framework = -1;
	o->tied = o->qkv_bias = o->attn = -1;
}

int check_range(const char *model, const char *what, uint32_t v, uint32_t lo, uint32_t hi,
		struct mp_error *err)
{
	if (v >= lo && v <= hi)
		return 0;
	mp_error_set(err, "%s: %s %u is out of range (%u to %u)", model, what, v, lo, hi);
	return -1;
}

static const char *const opt_names[ZOO_N_OPTS] = {
	"depth", "image", "seq", "hidden", "heads", "kv-heads", "ffn", "vocab", "tied, attn, lora or quant",
};

/* Refuse what the caller gave (given) that the model does not take or that
 * the alias it was named by fixes (preset). */
static int check_given(const char *model, const struct zoo_model *zm, const struct zoo_opts *given,
		       unsigned preset, struct mp_error *err)
{
	unsigned passed = 0;

	passed |= given->depth ? ZOO_OPT_DEPTH : 0;
	passed |= given->image_h || given->image_w ? ZOO_OPT_IMAGE : 0;
	passed |= given->seq ? ZOO_OPT_SEQ : 0;
	passed |= given->hidden ? ZOO_OPT_HIDDEN : 0;
	passed |= given->heads ? ZOO_OPT_HEADS : 0;
	passed |= given->kv_heads ? ZOO_OPT_KV_HEADS : 0;
	passed |= given->ffn ? ZOO_OPT_FFN : 0;
	passed |= given->vocab ? ZOO_OPT_VOCAB : 0;
	passed |= given->tied >= 0 || given->attn >= 0 || given->lora_rank || given->quant ? ZOO_OPT_LLAMA : 0;
	for (unsigned i = 0; i < ZOO_N_OPTS; i++) {
		unsigned bit = 1u << i;

		if ((passed & bit) && !(zm->options & bit)) {
			mp_error_set(err, "%s takes no %s option", zm->name, opt_names[i]);
			return -1;
		}
		if ((passed & bit) && (preset & bit)) {
			mp_error_set(err, "'%s' fixes the %s; use '%s' to choose it", model, opt_names[i], zm->name);
			return -1;
		}
	}
	return 0;
}

/* The model's defaults for what o leaves unset, and the ranges every model
 * shares (batch, image); the model's own are its build function's. */
static int complete_opts(const struct zoo_entry *e, struct zoo_opts *o, struct mp_error *err)
{
	const struct zoo_model *zm = &e->model;

	if (o->optimizer < 0)
		o->optimizer = (int)e->optimizer;
	if (!o->batch)
		o->batch = e->batch;
	if (check_range(zm->name, "batch", o->batch, 1, 65536, err) < 0)
		return -1;
	if (zm->options & ZOO_OPT_IMAGE) {
		if (!o->image_h)
			o->image_h = e->image;
		if (!o->image_w)
			o->image_w = o->image_h;
		if (check_range(zm->name, "image height", o->image_h, 1, 16384, err) < 0 ||
		    check_range(zm->name, "image width", o->image_w, 1, 16384, err) < 0)
			return -1;
	}
	if (!o->depth)
		o->depth = e->depth;
	if (!o->hidden)
		o->hidden = e->hidden;
	if (!o->seq)
		o->seq = e->seq;
	if ((zm->options & ZOO_OPT_HEADS) && !o->heads)
		o->heads = o->hidden % 64 == 0 ? o->hidden / 64 : 1;
	return 0;
}

/* A device outside the catalog, written out as memplan-net(5) reads it. */
/* "precision": the policy's name, or an object when dtypes override it. */
static json_t *precision_json(const struct zoo_opts *o)
{
	const struct mp_precision *p = &o->precision;
	json_t *j;

	if (!(o->prec_given & ~ZOO_PREC_POLICY))
		return json_string(mp_precision_name(p->policy));
	j = json_object();
	json_object_set_new(j, "policy", json_string(mp_precision_name(p->policy)));
	if (o->prec_given & ZOO_PREC_PARAMS)
		json_object_set_new(j, "params", json_string(mp_dtype_name(p->params)));
	if (o->prec_given & ZOO_PREC_GRADS)
		json_object_set_new(j, "grads", json_string(mp_dtype_name(p->grads)));
	if (o->prec_given & ZOO_PREC_MASTER)
		json_object_set_new(j, "master", json_string(p->master < 0 ? "none" : mp_dtype_name((enum mp_dtype)p->master)));
	if (o->prec_given & ZOO_PREC_STATE)
		json_object_set_new(j, "optimizer_state", json_string(mp_dtype_name(p->state)));
	return j;
}

json_t *zoo_generate(const char *model, const struct zoo_opts *opts, struct mp_error *err)
{
	struct zoo_opts o = *opts;
	struct zb b = { 0 };
	const struct mp_device *dev = o.device;
	const struct zoo_entry *e;
	const struct zoo_model *zm;
	int m;
	unsigned preset = 0;
	json_t *root, *gen;
	char note[160] = "";
	bool catalog;

	m = find_model(model, &preset, &o);
	if (m < 0) {
		mp_error_set(err, "unknown model '%s' (see 'memplan gen --help')", model);
		return NULL;
	}
	e = &models[m];
	zm = &e->model;
	if (check_given(model, zm, opts, preset, err) < 0)
		return NULL;
	if (!dev && !(dev = device_find(ZOO_DEFAULT_DEVICE))) {
		mp_error_set(err, "internal error: default device '%s' is not in the catalog", ZOO_DEFAULT_DEVICE);
		return NULL;
	}
	b.dt = o.dtype >= 0 ? (enum mp_dtype)o.dtype :
	       (o.prec_given & ZOO_PREC_POLICY) ? o.precision.act : MP_DT_FLOAT32;
	if (b.dt != MP_DT_FLOAT32 && b.dt != MP_DT_FLOAT16 && b.dt != MP_DT_BFLOAT16) {
		mp_error_set(err, "dtype '%s' is not float32, float16 or bfloat16", mp_dtype_name(b.dt));
		return NULL;
	}
	b.esz = mp_dtype_bytes(b.dt);
	b.tflops_f32 = dev->tflops[MP_DT_FLOAT32];
	b.tflops = dev->tflops[b.dt];
	b.mem_gbps = dev->mem_gbps;
	if (b.tflops_f32 <= 0 || b.mem_gbps <= 0) {
		mp_error_set(err, "device '%s' gives no float32 throughput (tflops) or memory bandwidth (mem_gbps); the roofline estimate needs both", dev->name);
		return NULL;
	}
	if (b.tflops <= 0) {
		snprintf(note, sizeof(note), " %s lists no %s throughput: its float32 peak is used.",
			 dev->name, mp_dtype_name(b.dt));
		b.tflops = b.tflops_f32;
	}
	if (complete_opts(e, &o, err) < 0)
		return NULL;
	b.upd_passes = o.optimizer == MP_OPT_ADAM || o.optimizer == MP_OPT_ADAMW ? 7 : o.optimizer == MP_OPT_MOMENTUM ? 5 :
		       o.optimizer == MP_OPT_SGD ? 3 : 0;
	b.err = err;
	b.model = zm->name;
	b.layers = json_array();
	b.gen = gen = json_object();
	json_object_set_new(gen, "model", json_string(zm->name));
	json_object_set_new(gen, "batch", json_integer(o.batch));
	if (zm->options & ZOO_OPT_IMAGE) {
		json_t *im = json_array();

		json_array_append_new(im, json_integer(o.image_h));
		json_array_append_new(im, json_integer(o.image_w));
		json_object_set_new(gen, "image", im);
	}
	if (e->build(&b, &o) < 0 || b.failed) {
		json_decref(b.layers);
		json_decref(gen);
		if (b.failed)
			mp_error_prefix(err, "%s: ", zm->name);
		return NULL;
	}
	catalog = device_find(dev->name) && device_find(dev->name)->source == dev->source;
	{
		size_t k = strlen(b.desc);

		snprintf(b.desc + k, sizeof(b.desc) - k,
			 " Times are roofline estimates for %s (max of FLOPs over the %s peak and bytes over memory bandwidth; backward 2x forward), not measurements; conv algorithm alternatives and their workspaces are estimates too.%s Generated by memplan gen.",
			 dev->name, mp_dtype_name(b.dt), note);
	}
	root = json_object();
	json_object_set_new(root, "format", json_string("memplan-net/1"));
	json_object_set_new(root, "name", json_string(b.name));
	json_object_set_new(root, "description", json_string(b.desc));
	if (zm->options & ZOO_OPT_SEQ) {
		json_object_set_new(gen, "layers", json_integer(o.depth));
		json_object_set_new(gen, "hidden", json_integer(o.hidden));
		if (zm->options & ZOO_OPT_HEADS)
			json_object_set_new(gen, "heads", json_integer(o.heads));
		json_object_set_new(gen, "seq", json_integer(o.seq));
	}
	json_object_set_new(gen, "device", json_string(dev->name));
	json_object_set_new(root, "generator", gen);
	json_object_set_new(root, "dtype", json_string(mp_dtype_name(b.dt)));
	if (o.prec_given & ZOO_PREC_POLICY)
		json_object_set_new(root, "precision", precision_json(&o));
	json_object_set_new(root, "optimizer", json_string(mp_optimizer_name((enum mp_optimizer)o.optimizer)));
	if (o.grads_keep >= 0)
		json_object_set_new(root, "grads", json_string(o.grads_keep ? "keep" : "set_to_none"));
	if (o.framework >= 0)
		json_object_set_new(root, "framework", json_string(mp_framework_name((enum mp_framework)o.framework)));
	json_object_set_new(root, "device", catalog ? json_string(dev->name) : device_to_json(dev));
	{
		char ts[96];

		snprintf(ts, sizeof(ts), "roofline:%s", dev->name);
		json_object_set_new(root, "time_source", json_string(ts));
	}
	json_object_set_new(root, "layers", b.layers);
	return root;
}

/* generator.KEY: a whole number from 1 to 2^32 - 1. */
static int gen_count(json_t *v, const char *key, uint32_t *out, struct mp_error *err)
{
	json_int_t x = json_is_integer(v) ? json_integer_value(v) : 0;

	if (x < 1 || x > (json_int_t)UINT32_MAX) {
		mp_error_set(err, "generator.%s: expected a whole number >= 1", key);
		return -1;
	}
	*out = (uint32_t)x;
	return 0;
}

/* The "generator" object zoo_generate writes, into *model and o. */
static int read_generator(json_t *gen, const char **model, struct zoo_opts *o, struct mp_error *err)
{
	const char *key;
	json_t *v;

	*model = NULL;
	json_object_foreach(gen, key, v) {
		uint32_t *count = !strcmp(key, "batch") ? &o->batch : !strcmp(key, "layers") ? &o->depth :
				  !strcmp(key, "hidden") ? &o->hidden : !strcmp(key, "heads") ? &o->heads :
				  !strcmp(key, "seq") ? &o->seq : !strcmp(key, "kv_heads") ? &o->kv_heads :
				  !strcmp(key, "ffn") ? &o->ffn : !strcmp(key, "vocab") ? &o->vocab :
				  !strcmp(key, "lora_rank") ? &o->lora_rank : NULL;
		int *flag = !strcmp(key, "tied") ? &o->tied : !strcmp(key, "qkv_bias") ? &o->qkv_bias : NULL;

		if (count) {
			if (gen_count(v, key, count, err) < 0)
				return -1;
		} else if (flag) {
			if (!json_is_boolean(v)) {
				mp_error_set(err, "generator.%s: expected true or false", key);
				return -1;
			}
			*flag = json_is_true(v);
		} else if (!strcmp(key, "attn")) {
			if (!json_is_string(v) || (strcmp(json_string_value(v), "eager") && strcmp(json_string_value(v), "flash"))) {
				mp_error_set(err, "generator.attn: expected \"eager\" or \"flash\"");
				return -1;
			}
			o->attn = !strcmp(json_string_value(v), "eager");
		} else if (!strcmp(key, "quant")) {
			if (!json_is_string(v) || (o->quant = mp_quant_parse(json_string_value(v))) < 0) {
				mp_error_set(err, "generator.quant: expected \"none\", \"nf4\" or \"nf4-dq\"");
				return -1;
			}
		} else if (!strcmp(key, "lora_targets")) {
			if (!json_is_string(v) || !(o->lora_targets = zoo_lora_targets(json_string_value(v)))) {
				mp_error_set(err, "generator.lora_targets: expected a list of q, k, v, o, gate, up, down");
				return -1;
			}
		} else if (!strcmp(key, "model")) {
			if (!json_is_string(v)) {
				mp_error_set(err, "generator.model: expected a string");
				return -1;
			}
			*model = json_string_value(v);
		} else if (!strcmp(key, "image")) {
			if (!json_is_array(v) || json_array_size(v) != 2 ||
			    gen_count(json_array_get(v, 0), "image", &o->image_h, err) < 0 ||
			    gen_count(json_array_get(v, 1), "image", &o->image_w, err) < 0) {
				mp_error_set(err, "generator.image: expected [height, width]");
				return -1;
			}
		} else if (strcmp(key, "device")) { /* the device is the caller's choice */
			mp_error_set(err, "generator.%s: not an option memplan can regenerate", key);
			return -1;
		}
	}
	if (!*model) {
		mp_error_set(err, "generator: no \"model\"");
		return -1;
	}
	return 0;
}

/* Where b differs from a, times aside ("" when nowhere): a top-level key,
 * or "layers[i]".  The device is not compared: the caller replaces it. */
static void first_difference(json_t *a, json_t *b, char *where, size_t n)
{
	json_t *la = json_object_get(a, "layers"), *lb = json_object_get(b, "layers"), *v;
	const char *key;

	*where = 0;
	json_object_foreach(a, key, v)
		if (strcmp(key, "layers") && strcmp(key, "device") && !json_equal(v, json_object_get(b, key))) {
			snprintf(where, n, "%s", key);
			return;
		}
	if (json_object_size(a) != json_object_size(b) || json_array_size(la) != json_array_size(lb)) {
		snprintf(where, n, "%s", json_object_size(a) != json_object_size(b) ? "its keys" : "layers");
		return;
	}
	for (size_t i = 0; i < json_array_size(la); i++) {
		json_t *x = json_copy(json_array_get(la, i)), *y = json_copy(json_array_get(lb, i));
		bool same = x && y && (json_object_del(x, "time"), json_object_del(y, "time"), json_equal(x, y));

		json_decref(x);
		json_decref(y);
		if (!same) {
			snprintf(where, n, "layers[%zu]", i);
			return;
		}
	}
}

int zoo_opts_from_net(const json_t *root, const struct mp_net *net, const char **model, struct zoo_opts *o,
		      struct mp_error *err)
{
	static const struct { const char *key; unsigned bit; } prec[] = {
		{ "params", ZOO_PREC_PARAMS }, { "grads", ZOO_PREC_GRADS }, { "master", ZOO_PREC_MASTER },
		{ "optimizer_state", ZOO_PREC_STATE },
	};
	json_t *top = (json_t *)root, *gen = json_object_get(top, "generator"), *p, *again;
	char where[64];

	zoo_opts_init(o);
	if (!json_is_object(gen)) {
		mp_error_set(err, "the net has no \"generator\" (only a net memplan gen wrote can be regenerated)");
		return -1;
	}
	if (read_generator(gen, model, o, err) < 0)
		return -1;
	o->dtype = (int)net->dtype;
	o->optimizer = (int)net->optimizer;
	o->grads_keep = json_object_get(top, "grads") ? net->grads_keep : -1;
	o->framework = json_object_get(top, "framework") ? (int)net->framework : -1;
	if ((p = json_object_get(top, "precision"))) {
		o->precision = net->precision;
		o->prec_given = ZOO_PREC_POLICY;
		for (size_t k = 0; k < sizeof(prec) / sizeof(prec[0]); k++)
			if (json_is_object(p) && json_object_get(p, prec[k].key))
				o->prec_given |= prec[k].bit;
	}
	o->device = net->has_device ? &net->device : NULL;
	again = zoo_generate(*model, o, err);
	o->device = NULL;
	if (!again) {
		mp_error_prefix(err, "generator: ");
		return -1;
	}
	first_difference(top, again, where, sizeof(where));
	json_decref(again);
	if (*where) {
		mp_error_set(err, "%s differs from what its \"generator\" gives (edited after memplan gen, or written by another version)",
			     where);
		return -1;
	}
	return 0;
}
