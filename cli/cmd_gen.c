/*
 * memplan gen MODEL [--batch N] [--depth N] [--image HxW] [--seq N]
 *   [--hidden N] [--heads N] [--dtype T] [--optimizer O] [--device NAME|FILE]
 *   [-o FILE]
 * Write the memplan-net/1 description of a published network (analysis/zoo)
 * with roofline times for a device, one layer per line so that diffs of
 * generated files stay readable.
 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "../analysis/zoo.h"

static const char usage_text[] =
	"usage: memplan gen MODEL [--batch N] [--depth N] [--image HxW] [--seq N] [--hidden N]\n"
	"                         [--heads N] [--dtype float32|float16|bfloat16]\n"
	"                         [--optimizer sgd|momentum|adam|none] [--device NAME|FILE] [-o FILE]\n";

static void print_models(FILE *f)
{
	fprintf(f, "\nmodels:\n");
	for (unsigned i = 0; i < zoo_model_count(); i++) {
		const struct zoo_model *m = zoo_model_at(i);

		fprintf(f, "  %-13s %s\n", m->name, m->summary);
	}
	fprintf(f, "aliases: resnet18 .. resnet152 and resnetN (= resnet --depth N), gpt2-small,\n"
		   "  gpt2-medium, gpt2-large, gpt2-xl, bert-base, bert-large, densenet121, ...\n"
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

int cmd_gen(int argc, char **argv)
{
	enum { O_BATCH = 256, O_DEPTH, O_IMAGE, O_SEQ, O_HIDDEN, O_HEADS, O_DTYPE, O_OPT, O_DEVICE };
	static const struct option opts[] = {
		{ "batch", required_argument, NULL, O_BATCH },
		{ "depth", required_argument, NULL, O_DEPTH },
		{ "image", required_argument, NULL, O_IMAGE },
		{ "seq", required_argument, NULL, O_SEQ },
		{ "hidden", required_argument, NULL, O_HIDDEN },
		{ "heads", required_argument, NULL, O_HEADS },
		{ "dtype", required_argument, NULL, O_DTYPE },
		{ "optimizer", required_argument, NULL, O_OPT },
		{ "device", required_argument, NULL, O_DEVICE },
		{ "output", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	static const char *const opt_flag[] = { "--depth", "--image", "--seq", "--hidden", "--heads" };
	struct zoo_opts zo;
	struct mp_error err = { "" };
	struct mp_device dev;
	const struct zoo_model *zm;
	const char *out_path = NULL, *model;
	unsigned given = 0, preset = 0;
	json_t *root, *gen;
	int c, rc;

	zoo_opts_init(&zo);
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "ho:", opts, NULL)) != -1) {
		switch (c) {
		case O_BATCH:
			if (parse_u32("--batch", optarg, 1, 65536, &zo.batch) < 0)
				return EXIT_BAD_INPUT;
			break;
		case O_DEPTH:
			if (parse_u32("--depth", optarg, 1, 50000, &zo.depth) < 0)
				return EXIT_BAD_INPUT;
			given |= ZOO_OPT_DEPTH;
			break;
		case O_IMAGE:
			if (parse_image(optarg, &zo.image_h, &zo.image_w) < 0)
				return EXIT_BAD_INPUT;
			given |= ZOO_OPT_IMAGE;
			break;
		case O_SEQ:
			if (parse_u32("--seq", optarg, 1, 1048576, &zo.seq) < 0)
				return EXIT_BAD_INPUT;
			given |= ZOO_OPT_SEQ;
			break;
		case O_HIDDEN:
			if (parse_u32("--hidden", optarg, 1, 65536, &zo.hidden) < 0)
				return EXIT_BAD_INPUT;
			given |= ZOO_OPT_HIDDEN;
			break;
		case O_HEADS:
			if (parse_u32("--heads", optarg, 1, 65536, &zo.heads) < 0)
				return EXIT_BAD_INPUT;
			given |= ZOO_OPT_HEADS;
			break;
		case O_DTYPE:
			zo.dtype = mp_dtype_parse(optarg);
			if (zo.dtype != MP_DT_FLOAT32 && zo.dtype != MP_DT_FLOAT16 && zo.dtype != MP_DT_BFLOAT16)
				return cli_error(EXIT_BAD_INPUT, "gen: --dtype: expected float32, float16 or bfloat16, got '%s'", optarg);
			break;
		case O_OPT: {
			static const char *const names[] = { "none", "sgd", "momentum", "adam" };
			int k;

			for (k = 0; k < 4 && strcmp(optarg, names[k]); k++)
				;
			if (k == 4)
				return cli_error(EXIT_BAD_INPUT, "gen: --optimizer: expected sgd, momentum, adam or none, got '%s'", optarg);
			zo.optimizer = k;
			break;
		}
		case O_DEVICE:
			if (device_resolve(optarg, &dev, &err) < 0)
				return cli_error(EXIT_BAD_INPUT, "gen: --device: %s", err.msg);
			zo.device = &dev;
			break;
		case 'o':
			out_path = optarg;
			break;
		case 'h':
			fputs(usage_text, stdout);
			print_models(stdout);
			return EXIT_OK;
		default:
			return cli_bad_option("gen", argv, usage_text);
		}
	}
	if (argc - optind != 1) {
		fputs(usage_text, stderr);
		print_models(stderr);
		return EXIT_BAD_INPUT;
	}
	model = argv[optind];
	if (!(zm = zoo_model_find(model, &preset)))
		return cli_error(EXIT_BAD_INPUT, "gen: unknown model '%s' (see 'memplan gen --help')", model);
	for (unsigned i = 0; i < 5; i++) {
		unsigned bit = 1u << i;

		if ((given & bit) && !(zm->options & bit))
			return cli_error(EXIT_BAD_INPUT, "gen: %s does not apply to %s", opt_flag[i], zm->name);
		if ((given & bit) && (preset & bit))
			return cli_error(EXIT_BAD_INPUT, "gen: '%s' fixes %s; use '%s %s'", model,
					 opt_flag[i], zm->name, opt_flag[i]);
	}
	if (!(root = zoo_generate(model, &zo, &err)))
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
	else if (out_net_json(stdout, root, 6) < 0 || fflush(stdout) != 0)
		rc = cli_error(EXIT_INTERNAL, "gen: writing stdout failed");
	else
		rc = EXIT_OK;
	json_decref(root);
	return rc;
}
