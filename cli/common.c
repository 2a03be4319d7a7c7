/*
 * Helpers every subcommand shares: error printing and net loading.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "../analysis/base/jget.h"
#include "../plan/planfile.h"

int cli_error(int status, const char *fmt, ...)
{
	char msg[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* one line, always: names from the input may hold control characters */
	fputs("memplan: ", stderr);
	for (const char *p = msg; *p; p++) {
		unsigned c = mp_control_len(p);

		if (*p == '\n')
			fputs("\\n", stderr);
		else if (*p == '\t')
			fputs("\\t", stderr);
		else if (c == 1)
			fprintf(stderr, "\\x%02x", (unsigned char)*p);
		else if (c == 2) /* C1, as UTF-8 */
			fprintf(stderr, "\\u%04x", (unsigned char)*++p);
		else
			fputc(*p, stderr);
	}
	fputc('\n', stderr);
	return status;
}

int cli_lib_error(const char *what, const struct mp_error *err)
{
	return cli_error(strncmp(err->msg, "internal", 8) ? EXIT_BAD_INPUT : EXIT_INTERNAL, "%s: %s", what, err->msg);
}

struct mp_net *cli_load_net(const char *path)
{
	struct mp_error err = { "" };
	struct mp_net *net = net_load_file(path, &err);

	if (!net)
		cli_error(EXIT_BAD_INPUT, "%s: %s", path, err.msg);
	return net;
}

struct mp_net *cli_load_net_json(const char *path, json_t **root)
{
	struct mp_error err = { "" };
	struct mp_net *net = net_load_file_json(path, root, &err);

	if (!net)
		cli_error(EXIT_BAD_INPUT, "%s: %s", path, err.msg);
	return net;
}

int cli_load_plan(const char *path, json_t **root, struct mp_net **net, struct mp_plan_req *req,
		  struct mp_plan *plan)
{
	struct mp_error err = { "" };

	if (!(*root = mp_json_load_file(path, &err)) || plan_read_json(*root, net, req, plan, &err) < 0)
		return cli_error(EXIT_BAD_INPUT, "%s: %s", path, err.msg);
	return EXIT_OK;
}

const char *cli_device_note(const struct mp_device *d)
{
	return d->no_verify ? " (capacity planning only: no verify backend)" : "";
}

int cli_parse_format(const char *s, int allow_csv)
{
	if (!strcmp(s, "table"))
		return FMT_TABLE;
	if (!strcmp(s, "json"))
		return FMT_JSON;
	if (allow_csv && !strcmp(s, "csv"))
		return FMT_CSV;
	cli_error(EXIT_BAD_INPUT, "--format: unknown format '%s' (table%s or json)", s, allow_csv ? ", csv" : "");
	return -1;
}

int cli_each_item(const char *list, int (*f)(const char *item, void *ctx), void *ctx)
{
	char *copy = mp_xstrdup(list), *save = NULL, *tok;
	int rc = 0, any = 0;

	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		any = 1;
		if ((rc = f(tok, ctx)) < 0)
			break;
	}
	free(copy);
	if (!any && rc == 0)
		rc = f("", ctx);
	return rc;
}

static int add_checkpoint(const char *item, void *ctx)
{
	int t = mp_layer_type_parse(item);

	if (t < 0) {
		cli_error(EXIT_BAD_INPUT, "--checkpoints: unknown layer type '%s'", item);
		return -1;
	}
	*(uint32_t *)ctx |= 1u << t;
	return 0;
}

int cli_parse_checkpoints(const char *arg, uint32_t *mask)
{
	*mask = 0;
	return cli_each_item(arg, add_checkpoint, mask);
}

int cli_set_checkpoints(const char *name, const char *arg, void *mask)
{
	(void)name;
	return cli_parse_checkpoints(arg, mask);
}

int cli_parse_count(const char *name, const char *s, uint32_t lo, uint32_t *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (!*s || *end || errno || s[0] == '-' || v < lo || v > 100000) {
		cli_error(EXIT_BAD_INPUT, "%s: expected a whole number from %u to 100000, got '%s'", name, lo, s);
		return -1;
	}
	*out = (uint32_t)v;
	return 0;
}
