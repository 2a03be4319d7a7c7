/*
 * Options of the subcommands, declared as tables (git's parse-options, in
 * small): each command lists its options once, with where each value goes,
 * and the same table makes the getopt_long table, the usage text and the
 * replies to -h, an unknown option and a missing value.  O(options) per
 * argument.
 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* "[--name VALUE]", "--name VALUE" (required), "[-o VALUE]" (a letter only) */
static size_t opt_usage(const struct cli_opt *o, char *buf, size_t n)
{
	const bool req = o->flags & CLI_REQUIRED;
	int k;

	if (o->name && !(o->flags & CLI_LETTER))
		k = snprintf(buf, n, "%s--%s%s%s%s", req ? "" : "[", o->name, o->value ? " " : "", o->value ? o->value : "",
			     req ? "" : "]");
	else
		k = snprintf(buf, n, "%s-%c%s%s%s", req ? "" : "[", o->letter, o->value ? " " : "", o->value ? o->value : "",
			     req ? "" : "]");
	return k < 0 ? 0 : (size_t)k;
}

void cli_usage(const struct cli_cmd *c, FILE *f)
{
	char lead[64], item[160];
	size_t indent;

	snprintf(lead, sizeof(lead), "usage: memplan %s ", c->name);
	indent = c->indent > 0 ? (size_t)c->indent : strlen(lead);
	fputs(lead, f);
	fputs(c->operands, f);
	for (const struct cli_opt *o = c->opts; o->type != CLI_END; o++) {
		if (o->flags & CLI_HIDDEN)
			continue;
		opt_usage(o, item, sizeof(item));
		if (o->flags & CLI_NEWLINE)
			fprintf(f, "\n%*s%s", (int)indent, "", item);
		else
			fprintf(f, " %s", item);
	}
	fputc('\n', f);
	if (c->more)
		fputs(c->more, f);
}

/* The value of option o (its name as the user wrote it: what) into o->dst.
 * 0, or -1 after printing. */
static int take(const struct cli_opt *o, const char *what, const char *arg)
{
	struct mp_error err;

	switch (o->type) {
	case CLI_FLAG:
		*(int *)o->dst = 1;
		return 0;
	case CLI_STRING:
		*(const char **)o->dst = arg;
		return 0;
	case CLI_SIZE:
		if (mp_parse_size(arg, (uint64_t *)o->dst, &err) < 0) {
			cli_error(EXIT_BAD_INPUT, "%s: %s", what, err.msg);
			return -1;
		}
		return 0;
	case CLI_COUNT:
		return cli_parse_count(what, arg, (uint32_t)o->lo, (uint32_t *)o->dst);
	case CLI_FORMAT: {
		int fmt = cli_parse_format(arg, o->lo);

		if (fmt < 0)
			return -1;
		*(int *)o->dst = fmt;
		return 0;
	}
	case CLI_CHOICE:
		for (const struct cli_choice *k = o->choices; k->name; k++)
			if (!strcmp(arg, k->name)) {
				*(int *)o->dst = k->value;
				return 0;
			}
		cli_error(EXIT_BAD_INPUT, "%s: unknown %s '%s' (%s)", what, o->noun, arg, o->alts);
		return -1;
	case CLI_CALL:
		return o->call(what, arg, o->dst);
	default:
		return 0;
	}
}

int cli_usage_error(const struct cli_cmd *c)
{
	cli_usage(c, stderr);
	return EXIT_BAD_INPUT;
}

int cli_parse(const struct cli_cmd *c, int argc, char **argv, int *first)
{
	struct option lopt[64];
	char shorts[64] = "h", what[80];
	size_t ns = 1, nl = 0;
	int ch;

	for (const struct cli_opt *o = c->opts; o->type != CLI_END; o++) {
		const int has = o->type == CLI_FLAG ? no_argument : required_argument;

		MP_ASSERT(nl + 2 < sizeof(lopt) / sizeof(lopt[0]) && ns + 3 < sizeof(shorts));
		if (o->name)
			lopt[nl++] = (struct option){ o->name, has, NULL, (int)(o - c->opts) + 256 };
		if (o->letter) {
			shorts[ns++] = o->letter;
			if (has == required_argument)
				shorts[ns++] = ':';
		}
	}
	shorts[ns] = 0;
	lopt[nl++] = (struct option){ "help", no_argument, NULL, 'h' };
	lopt[nl] = (struct option){ NULL, 0, NULL, 0 };
	optind = 1;
	opterr = 0;
	while ((ch = getopt_long(argc, argv, shorts, lopt, NULL)) != -1) {
		const struct cli_opt *o = NULL;

		if (ch == 'h') {
			cli_usage(c, stdout);
			if (c->help)
				c->help();
			return EXIT_OK;
		}
		if (ch >= 256) {
			o = &c->opts[ch - 256];
		} else {
			for (const struct cli_opt *p = c->opts; p->type != CLI_END && !o; p++)
				if (p->letter && p->letter == ch)
					o = p;
		}
		if (!o) {
			cli_error(EXIT_BAD_INPUT, "%s: unknown or incomplete option '%s'", c->name, argv[optind - 1]);
			return cli_usage_error(c);
		}
		if (ch >= 256)
			snprintf(what, sizeof(what), "--%s", o->name);
		else
			snprintf(what, sizeof(what), "-%c", o->letter);
		if (take(o, what, optarg) < 0)
			return EXIT_BAD_INPUT;
	}
	*first = optind;
	return CLI_GO;
}
