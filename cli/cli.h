/*
 * cli: the only module that prints.  One file per subcommand (cmd_*.c), the
 * dispatch table in main.c, output writers in output.c.
 */
#ifndef MP_CLI_H
#define MP_CLI_H

#include <stdbool.h>
#include <stdio.h>

#include "../analysis/analyze.h"
#include "../analysis/net.h"

/* Exit status, memplan(1). */
enum {
	EXIT_OK = 0, EXIT_NO = 1, EXIT_BAD_INPUT = 2, EXIT_NO_GPU = 3, EXIT_INTERNAL = 4,
};

int cmd_check(int argc, char **argv);
int cmd_analyze(int argc, char **argv);
int cmd_plan(int argc, char **argv);
int cmd_capacity(int argc, char **argv);
int cmd_gen(int argc, char **argv);
int cmd_devices(int argc, char **argv);
int cmd_verify(int argc, char **argv);
int cmd_profile(int argc, char **argv);

/* "memplan: <fmt>" on stderr; returns EXIT_BAD_INPUT for `return die_usage(..)`. */
int cli_error(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Load a net, printing "memplan: FILE: path: what" on failure (NULL). */
struct mp_net *cli_load_net(const char *path);
/* The same, also returning the parsed JSON (*root, the caller's reference). */
struct mp_net *cli_load_net_json(const char *path, json_t **root);

/* Call f on each item of a comma list ("" when the list is empty); stops at
 * the first -1, which it returns. */
int cli_each_item(const char *list, int (*f)(const char *item, void *ctx), void *ctx);

/* --checkpoints conv,fc: *mask gets a bit per layer type; -1 after printing
 * on an unknown type. */
int cli_parse_checkpoints(const char *arg, uint32_t *mask);

/* The reply to an unknown option or a missing argument: the message, the
 * usage on stderr; returns EXIT_BAD_INPUT. */
int cli_bad_option(const char *cmd, char **argv, const char *usage);

/* A run count (--iters, --warmup) from lo to 100000; -1 after printing. */
int cli_parse_count(const char *name, const char *s, uint32_t lo, uint32_t *out);

enum cli_format { FMT_TABLE, FMT_CSV, FMT_JSON };
/* Parse --format; -1 (after printing) on a bad value.  allow_csv for csv. */
int cli_parse_format(const char *s, int allow_csv);

/* output.c */
void out_json(FILE *f, json_t *root);          /* dumps and decrefs root */
/* A memplan-net/1 file as memplan writes nets (gen, profile): the top-level
 * keys one per line in the object's order, then "layers", "tensors" and
 * "ops" one element per line, so that diffs of written nets stay readable;
 * reals with real_digits significant digits.  0, or -1 (a value jansson
 * cannot encode, or a write error). */
int out_net_json(FILE *f, const json_t *root, int real_digits);
/*
 * Every file memplan writes: through a temporary file beside path, flushed,
 * synced and renamed over it when whole, so that path holds what it held
 * before or the whole output, never part of one (a device or a pipe, such
 * as /dev/stdout, is written in place).  out_open makes the temporary file
 * (call it before the work, so that a bad path is refused first); write
 * o.f; out_commit (failed: the caller's writing failed) checks every write
 * and the close, and renames; out_abort drops it.  out_open and out_commit
 * return EXIT_OK, or the exit status after printing "memplan: <what>:
 * cannot write 'path': why" (2) or "<what>: writing 'path' failed: why" (4),
 * leaving nothing behind.
 */
struct out_file {
	FILE *f;
	char *tmp, *real;          /* owned: the temporary file, the link's target */
	const char *target, *path, *what;
};
int out_open(struct out_file *o, const char *path, const char *what);
int out_commit(struct out_file *o, bool failed);
void out_abort(struct out_file *o);
/* A net (out_net_json) or JSON (json_dumpf with flags) into path that way. */
int out_net_file(const char *path, const json_t *root, int real_digits, const char *what);
int out_json_file(const char *path, const json_t *root, size_t flags, const char *what);
/* Per-step curves of the strategies in show (bit per strategy) as SVG into
 * f (an out_file opened before any output, so a bad path prints nothing). */
void out_svg_curves(FILE *f, const struct mp_net *net, const struct mp_analysis *a, uint32_t show);
const char *out_step_phase(const struct mp_net *net, const struct mp_analysis *a, uint32_t step);

#endif
