/*
 * memplan gen MODEL [--batch N] [--depth N] [--image HxW] [--seq N]
 *   [--hidden N] [--heads N] [--dtype T] [--optimizer O] [--precision P] [--grads G]
 *   [--framework F]
 *   [--device NAME|FILE] [-o FILE]
 * Write the memplan-net/1 description of a published network (analysis/zoo)
 * with roofline times for a device, one layer per line so that diffs of
 * generated files stay readable.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "../analysis/net/net.h"
#include "../analysis/zoo/zoo.h"

static void print_models(FILE *f)
{
	fprintf(f, "\nmodels:\n");
	for (unsigned i = 0; i < zoo_model_count(); i++) {
		const struct zoo_model *m = zoo_model_at(i);

		fprintf(f, "  %-13s %s\n", m->name, m->summary);
	}
	fprintf(f, "aliases: resnet18 .. resnet152 and resnetN (= resnet --depth N), gpt2-small,\n"
		   "  gpt2-medium, gpt2-large, gpt2-xl, bert-base, bert-large, densenet121, ...\n"
		   "llama presets: llama2-7b, llama2-13b, llama3-8b, llama3-70b, llama3.2-1b,\n"
		   "  llama3.2-3b, mistral-7b, qwen2-7b, qwen2-0.5b, tinyllama-1.1b\n"
		   "times are roofline estimates for --device (default %s); see memplan-gen(1)\n",
		ZOO_DEFAULT_DEVICE);
}

/* A decimal integer in [lo, hi]; prints and returns -1 otherwise. */
static int parse_u32(const char *opt, const char *s, uint32_t lo, uint32_t hi, uint32_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	if (*s < '0' || *s > '9' || (v = strtoull(s, &end, 10), *end) || errno || v < lo || v > hi) {
		cli_error(EXIT_BAD_INPUT, "gen: %s: expected an integer from %u to %u, got '%s'", opt, lo, hi, s);
		return -1;
	}
	*out = (uint32_t)v;
	return 0;
}

/* "HxW" or "N" (square). */
static int parse_image(const char *s, uint32_t *h, uint32_t *w)
{
	const char *x = strpbrk(s, "xX");
	char buf[32];

	if (!x) {
		if (parse_u32("--image", s, 1, 16384, h) < 0)
			return -1;
		*w = *h;
		return 0;
	}
	if ((size_t)(x - s) >= sizeof(buf) || x == s) {
		cli_error(EXIT_BAD_INPUT, "gen: --image: expected HxW such as 224x224, got '%s'", s);
		return -1;
	}
	memcpy(buf, s, (size_t)(x - s));
	buf[x - s] = 0;
	if (parse_u32("--image", buf, 1, 16384, h) < 0 || parse_u32("--image", x + 1, 1, 16384, w) < 0)
		return -1;
	return 0;
}

/* What the options fill: the generator's options, which of them were
 * given, the device. */
struct gen_args {
	struct zoo_opts zo;
	unsigned given;            /* ZOO_OPT_* */
	struct mp_device dev;
};

/* --batch, --depth, --seq, --hidden, --heads: whole numbers in their ranges */
static int set_count(const char *name, const char *arg, void *dst)
{
	static const struct {
		const char *name;
		size_t off;
		uint32_t hi;
		unsigned bit;
	} counts[] = {
		{ "--batch", offsetof(struct zoo_opts, batch), 65536, 0 },
		{ "--depth", offsetof(struct zoo_opts, depth), 50000, ZOO_OPT_DEPTH },
		{ "--seq", offsetof(struct zoo_opts, seq), 1048576, ZOO_OPT_SEQ },
		{ "--hidden", offsetof(struct zoo_opts, hidden), 65536, ZOO_OPT_HIDDEN },
		{ "--heads", offsetof(struct zoo_opts, heads), 65536, ZOO_OPT_HEADS },
		{ "--kv-heads", offsetof(struct zoo_opts, kv_heads), 65536, ZOO_OPT_KV_HEADS },
		{ "--ffn", offsetof(struct zoo_opts, ffn), 1048576, ZOO_OPT_FFN },
		{ "--vocab", offsetof(struct zoo_opts, vocab), 4194304, ZOO_OPT_VOCAB },
	};
	struct gen_args *g = dst;

	for (size_t k = 0; k < sizeof(counts) / sizeof(counts[0]); k++)
		if (!strcmp(name, counts[k].name)) {
			if (parse_u32(name, arg, 1, counts[k].hi, (uint32_t *)((char *)&g->zo + counts[k].off)) < 0)
				return -1;
			g->given |= counts[k].bit;
			return 0;
		}
	MP_ASSERT(!"a count option gen does not know");
	return -1;
}

static int set_image(const char *name, const char *arg, void *dst)
{
	struct gen_args *g = dst;

	(void)name;
	if (parse_image(arg, &g->zo.image_h, &g->zo.image_w) < 0)
		return -1;
	g->given |= ZOO_OPT_IMAGE;
	return 0;
}

static int set_dtype(const char *name, const char *arg, void *dst)
{
	enum mp_dtype t = mp_dtype_parse(arg);

	if (t != MP_DT_FLOAT32 && t != MP_DT_FLOAT16 && t != MP_DT_BFLOAT16) {
		cli_error(EXIT_BAD_INPUT, "gen: %s: expected float32, float16 or bfloat16, got '%s'", name, arg);
		return -1;
	}
	*(int *)dst = (int)t;
	return 0;
}

static int set_grads(const char *name, const char *arg, void *dst)
{
	if (strcmp(arg, "keep") && strcmp(arg, "set_to_none")) {
		cli_error(EXIT_BAD_INPUT, "gen: %s: expected keep or set_to_none, got '%s'", name, arg);
		return -1;
	}
	((struct gen_args *)dst)->zo.grads_keep = !strcmp(arg, "keep");
	return 0;
}

static int set_framework(const char *name, const char *arg, void *dst)
{
	int f = mp_framework_parse(arg);

	if (f < 0) {
		cli_error(EXIT_BAD_INPUT, "gen: %s: expected cudnn or pytorch, got '%s'", name, arg);
		return -1;
	}
	((struct gen_args *)dst)->zo.framework = f;
	return 0;
}

static int set_attn(const char *name, const char *arg, void *dst)
{
	struct gen_args *g = dst;

	if (strcmp(arg, "flash") && strcmp(arg, "sdpa") && strcmp(arg, "eager")) {
		cli_error(EXIT_BAD_INPUT, "gen: %s: expected flash, sdpa or eager, got '%s'", name, arg);
		return -1;
	}
	g->zo.attn = !strcmp(arg, "eager");
	g->given |= ZOO_OPT_LLAMA;
	return 0;
}

/* R[,TARGETS]: LoRA of rank R on q,v (default), or the listed projections. */
static int set_lora(const char *name, const char *arg, void *dst)
{
	struct gen_args *g = dst;
	const char *comma = strchr(arg, ',');
	char buf[16];

	if ((comma ? (size_t)(comma - arg) : strlen(arg)) >= sizeof(buf)) {
		cli_error(EXIT_BAD_INPUT, "gen: %s: expected a rank, then optional targets, like 16 or 16,q,k,v,o", name);
		return -1;
	}
	snprintf(buf, sizeof(buf), "%.*s", comma ? (int)(comma - arg) : (int)strlen(arg), arg);
	if (parse_u32(name, buf, 1, 65536, &g->zo.lora_rank) < 0)
		return -1;
	if (comma && !(g->zo.lora_targets = zoo_lora_targets(comma + 1))) {
		cli_error(EXIT_BAD_INPUT, "gen: %s: targets are q, k, v, o, gate, up, down or all, got '%s'", name, comma + 1);
		return -1;
	}
	g->given |= ZOO_OPT_LLAMA;
	return 0;
}

/* The frozen projections' weights in 4 bits (QLoRA). */
static int set_quant(const char *name, const char *arg, void *dst)
{
	struct gen_args *g = dst;

	if ((g->zo.quant = mp_quant_parse(arg)) < 0) {
		cli_error(EXIT_BAD_INPUT, "gen: %s: expected none, nf4 or nf4-dq, got '%s'", name, arg);
		return -1;
	}
	if (g->zo.quant)
		g->given |= ZOO_OPT_LLAMA;
	return 0;
}

static int set_optimizer(const char *name, const char *arg, void *dst)
{
	int k = mp_optimizer_parse(arg);

	if (k < 0) {
		cli_error(EXIT_BAD_INPUT, "gen: %s: expected one of %s, got '%s'", name, mp_optimizer_list, arg);
		return -1;
	}
	((struct gen_args *)dst)->zo.optimizer = k;
	return 0;
}

/* POLICY[,KIND=DTYPE...]: KIND params, grads, master (or master=none), state. */
static int set_precision(const char *name, const char *arg, void *dst)
{
	static const struct { const char *kind; unsigned bit; } kinds[] = {
		{ "params", ZOO_PREC_PARAMS }, { "grads", ZOO_PREC_GRADS },
		{ "master", ZOO_PREC_MASTER }, { "state", ZOO_PREC_STATE },
	};
	struct zoo_opts *o = &((struct gen_args *)dst)->zo;
	char buf[256], *tok, *save = NULL;

	if (strlen(arg) >= sizeof(buf)) {
		cli_error(EXIT_BAD_INPUT, "gen: %s: too long", name);
		return -1;
	}
	if (!*arg || arg[strlen(arg) - 1] == ',' || strstr(arg, ",,")) {
		cli_error(EXIT_BAD_INPUT, "gen: %s: an empty item in '%s'", name, arg);
		return -1;
	}
	strcpy(buf, arg);
	tok = strtok_r(buf, ",", &save);
	if (!tok || mp_precision_preset(tok, &o->precision) < 0) {
		cli_error(EXIT_BAD_INPUT, "gen: %s: expected fp32, bf16-mixed, fp16-mixed, bf16-pure, bf16-autocast or fp16-autocast, then ,KIND=DTYPE overrides, got '%s'",
			  name, arg);
		return -1;
	}
	o->prec_given = ZOO_PREC_POLICY;
	while ((tok = strtok_r(NULL, ",", &save))) {
		char *eq = strchr(tok, '=');
		size_t k;
		int dt;

		for (k = 0; eq && k < sizeof(kinds) / sizeof(kinds[0]); k++)
			if ((size_t)(eq - tok) == strlen(kinds[k].kind) && !strncmp(tok, kinds[k].kind, (size_t)(eq - tok)))
				break;
		if (!eq || k == sizeof(kinds) / sizeof(kinds[0])) {
			cli_error(EXIT_BAD_INPUT, "gen: %s: '%s' is not KIND=DTYPE with KIND params, grads, master or state",
				  name, tok);
			return -1;
		}
		dt = kinds[k].bit == ZOO_PREC_MASTER && !strcmp(eq + 1, "none") ? -2 : mp_dtype_parse(eq + 1);
		if (dt == -1) {
			cli_error(EXIT_BAD_INPUT, "gen: %s: unknown dtype '%s'", name, eq + 1);
			return -1;
		}
		o->prec_given |= kinds[k].bit;
		if (kinds[k].bit == ZOO_PREC_PARAMS)
			o->precision.params = (enum mp_dtype)dt;
		else if (kinds[k].bit == ZOO_PREC_GRADS)
			o->precision.grads = (enum mp_dtype)dt;
		else if (kinds[k].bit == ZOO_PREC_STATE)
			o->precision.state = (enum mp_dtype)dt;
		else
			o->precision.master = dt == -2 ? -1 : dt;
	}
	return 0;
}

static int set_device(const char *name, const char *arg, void *dst)
{
	struct gen_args *g = dst;
	struct mp_error err = { "" };

	if (device_resolve(arg, &g->dev, &err) < 0) {
		cli_error(EXIT_BAD_INPUT, "gen: %s: %s", name, err.msg);
		return -1;
	}
	g->zo.device = &g->dev;
	return 0;
}

static void models_help(void)
{
	print_models(stdout);
}

int cmd_gen(int argc, char **argv)
{
	static const char *const opt_flag[ZOO_N_OPTS] = { "--depth", "--image", "--seq", "--hidden", "--heads",
		"--kv-heads", "--ffn", "--vocab", "--tied, --attn, --lora or --quant" };
	struct gen_args g;
	const char *out_path = NULL, *model;
	int tied = 0;
	const struct cli_opt opts[] = {
		OPT_CALL("batch", 0, "N", 0, &g, set_count),
		OPT_CALL("depth", 0, "N", 0, &g, set_count),
		OPT_CALL("image", 0, "HxW", 0, &g, set_image),
		OPT_CALL("seq", 0, "N", 0, &g, set_count),
		OPT_CALL("hidden", 0, "N", 0, &g, set_count),
		OPT_CALL("heads", 0, "N", CLI_NEWLINE, &g, set_count),
		OPT_CALL("kv-heads", 0, "N", 0, &g, set_count),
		OPT_CALL("ffn", 0, "N", 0, &g, set_count),
		OPT_CALL("vocab", 0, "N", 0, &g, set_count),
		OPT_FLAG("tied", CLI_NEWLINE, &tied),
		OPT_CALL("attn", 0, "flash|sdpa|eager", 0, &g, set_attn),
		OPT_CALL("lora", 0, "R[,TARGETS]", 0, &g, set_lora),
		OPT_CALL("quant", 0, "none|nf4|nf4-dq", CLI_NEWLINE, &g, set_quant),
		OPT_CALL("dtype", 0, "float32|float16|bfloat16", 0, &g.zo.dtype, set_dtype),
		OPT_CALL("optimizer", 0, "sgd|momentum|adam|adamw|none", CLI_NEWLINE, &g, set_optimizer),
		OPT_CALL("precision", 0, "POLICY[,KIND=DTYPE]", 0, &g, set_precision),
		OPT_CALL("grads", 0, "keep|set_to_none", CLI_NEWLINE, &g, set_grads),
		OPT_CALL("framework", 0, "cudnn|pytorch", 0, &g, set_framework),
		OPT_CALL("device", 0, "NAME|FILE", 0, &g, set_device),
		OPT_STRING("output", 'o', "FILE", CLI_LETTER, &out_path),
		OPT_END(),
	};
	const struct cli_cmd cmd = { "gen", "MODEL", opts, NULL, models_help, 25 };
	struct mp_error err = { "" };
	const struct zoo_model *zm;
	unsigned preset = 0, given;
	json_t *root, *gen;
	int rc, at;

	memset(&g, 0, sizeof(g));
	zoo_opts_init(&g.zo);
	if ((rc = cli_parse(&cmd, argc, argv, &at)) != CLI_GO)
		return rc;
	if (tied) {
		g.zo.tied = 1;
		g.given |= ZOO_OPT_LLAMA;
	}
	given = g.given;
	if (argc - at != 1) {
		cli_usage(&cmd, stderr);
		print_models(stderr);
		return EXIT_BAD_INPUT;
	}
	model = argv[at];
	if (!(zm = zoo_model_find(model, &preset)))
		return cli_error(EXIT_BAD_INPUT, "gen: unknown model '%s' (see 'memplan gen --help')", model);
	for (unsigned i = 0; i < ZOO_N_OPTS; i++) {
		unsigned bit = 1u << i;

		if ((given & bit) && !(zm->options & bit))
			return cli_error(EXIT_BAD_INPUT, "gen: %s does not apply to %s", opt_flag[i], zm->name);
		if ((given & bit) && (preset & bit))
			return cli_error(EXIT_BAD_INPUT, "gen: '%s' fixes %s; use '%s %s'", model,
					 opt_flag[i], zm->name, opt_flag[i]);
	}
	if (!(root = zoo_generate(model, &g.zo, &err)))
		return cli_error(EXIT_BAD_INPUT, "gen: %s", err.msg);
	gen = json_object_get(root, "generator");
	if (json_object_get(gen, "effective_depth") &&
	    json_integer_value(json_object_get(gen, "effective_depth")) !=
	    json_integer_value(json_object_get(gen, "depth")))
		fprintf(stderr, "memplan: gen: note: depth %lld is not 3*(6+32+n3+6)+2; generating depth %lld (n3 = %lld)\n",
			(long long)json_integer_value(json_object_get(gen, "depth")),
			(long long)json_integer_value(json_object_get(gen, "effective_depth")),
			(long long)json_integer_value(json_array_get(json_object_get(gen, "stages"), 2)));
	/* one layer per line so that diffs of generated files stay readable;
	 * reals to 6 digits (times are estimates) */
	if (out_path)
		rc = out_net_file(out_path, root, 6, "gen");
	else if (out_net_json(stdout, root, 6) < 0 && !ferror(stdout))
		rc = cli_error(EXIT_INTERNAL, "gen: a value of the net cannot be encoded");
	else
		rc = EXIT_OK; /* (a write that failed: main says so, exit 2) */
	json_decref(root);
	return rc;
}
