/*
 * cli: the only module that prints.  One file per subcommand (cmd_*.c), the
 * dispatch table in main.c, output writers in output.c.
 */
#ifndef MP_CLI_H
#define MP_CLI_H

#include <stdbool.h>
#include <stdio.h>

#include "../analysis/analyze.h"
#include "../analysis/net/net.h"

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
int cmd_replan(int argc, char **argv);
int cmd_profile(int argc, char **argv);

/* "memplan: <fmt>" on stderr; returns EXIT_BAD_INPUT for `return die_usage(..)`. */
int cli_error(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A library call's failure, "memplan: WHAT: message": EXIT_INTERNAL where
 * the message says "internal...", else EXIT_BAD_INPUT. */
int cli_lib_error(const char *what, const struct mp_error *err);

/* Load a net, printing "memplan: FILE: path: what" on failure (NULL). */
struct mp_net *cli_load_net(const char *path);
/* The same, also returning the parsed JSON (*root, the caller's reference). */
struct mp_net *cli_load_net_json(const char *path, json_t **root);
struct mp_plan;
struct mp_plan_req;
/* Load a plan file (memplan-plan(5)): its JSON (*root, the caller's
 * reference, set even on a bad plan), net, request and plan.  EXIT_OK, or
 * EXIT_BAD_INPUT after printing "memplan: FILE: path: what". */
int cli_load_plan(const char *path, json_t **root, struct mp_net **net, struct mp_plan_req *req,
		  struct mp_plan *plan);

/* " (capacity planning only: no verify backend)" to print after the name of
 * a device no backend of memplan runs on, else "" (static strings). */
const char *cli_device_note(const struct mp_device *d);

/* Call f on each item of a comma list ("" when the list is empty); stops at
 * the first -1, which it returns. */
int cli_each_item(const char *list, int (*f)(const char *item, void *ctx), void *ctx);

/* --checkpoints conv,fc: *mask gets a bit per layer type; -1 after printing
 * on an unknown type.  cli_set_checkpoints is the same as a CLI_CALL. */
int cli_parse_checkpoints(const char *arg, uint32_t *mask);
int cli_set_checkpoints(const char *name, const char *arg, void *mask);

/*
 * A subcommand's options, declared once (options.c, after git's
 * parse-options): the getopt table, the usage text and the replies to -h,
 * to an unknown option and to a missing value all come from it.
 */
enum cli_type {
	CLI_END,                   /* ends the table */
	CLI_FLAG,                  /* dst: int, set to 1 */
	CLI_STRING,                /* dst: const char *, the argument */
	CLI_SIZE,                  /* dst: uint64_t, mp_parse_size */
	CLI_COUNT,                 /* dst: uint32_t, a whole number from lo to 100000 */
	CLI_FORMAT,                /* dst: int, cli_parse_format (lo: csv allowed) */
	CLI_CHOICE,                /* dst: int (or an enum), the value of the choice named;
				    * else "--x: unknown NOUN 'arg' (ALTS)" */
	CLI_CALL,                  /* call(name, arg, dst), name as given ("--x"):
				    * 0, or -1 after printing */
};
enum {
	CLI_REQUIRED = 1,          /* the usage shows it without brackets */
	CLI_NEWLINE = 2,           /* the usage starts a new line with it */
	CLI_LETTER = 4,            /* the usage shows its letter ("-o FILE") */
	CLI_HIDDEN = 8,            /* not in the usage's option list (cmd.more shows it) */
};
struct cli_choice {
	const char *name;          /* NULL ends the list */
	int value;
};
struct cli_opt {
	enum cli_type type;
	const char *name;          /* long name without "--"; NULL: a letter only */
	char letter;               /* also answers to -letter; 0: none */
	const char *value;         /* the value as the usage shows it ("SIZE"); NULL for a flag */
	unsigned flags;            /* CLI_* */
	void *dst;
	int (*call)(const char *name, const char *arg, void *dst);
	int lo;
	const struct cli_choice *choices;
	const char *noun, *alts;   /* CLI_CHOICE: "mode", "none or dynamic" */
};
struct cli_cmd {
	const char *name;          /* "plan" */
	const char *operands;      /* "NET.json" */
	const struct cli_opt *opts;
	const char *more;          /* further usage lines, or NULL */
	void (*help)(void);        /* what -h prints after the usage, or NULL */
	int indent;                /* continuation lines' indent; 0: under the operands */
};
#define OPT_FLAG(name, flags, dst) { CLI_FLAG, name, 0, NULL, flags, dst, NULL, 0, NULL, NULL, NULL }
#define OPT_STRING(name, letter, value, flags, dst) \
	{ CLI_STRING, name, letter, value, flags, dst, NULL, 0, NULL, NULL, NULL }
#define OPT_SIZE(name, value, flags, dst) { CLI_SIZE, name, 0, value, flags, dst, NULL, 0, NULL, NULL, NULL }
#define OPT_COUNT(name, value, flags, dst, lo) { CLI_COUNT, name, 0, value, flags, dst, NULL, lo, NULL, NULL, NULL }
#define OPT_FORMAT(name, value, flags, dst, csv) { CLI_FORMAT, name, 0, value, flags, dst, NULL, csv, NULL, NULL, NULL }
#define OPT_CHOICE(name, value, flags, dst, choices, noun, alts) \
	{ CLI_CHOICE, name, 0, value, flags, dst, NULL, 0, choices, noun, alts }
#define OPT_CALL(name, letter, value, flags, dst, fn) { CLI_CALL, name, letter, value, flags, dst, fn, 0, NULL, NULL, NULL }
#define OPT_END() { CLI_END, NULL, 0, NULL, 0, NULL, NULL, 0, NULL, NULL, NULL }
#define CLI_GO (-1)
/* Parse argv into the table's destinations: CLI_GO with *first at the first
 * operand, or the exit status to return (EXIT_OK after -h, EXIT_BAD_INPUT
 * after an unknown option or a bad value, printed). */
int cli_parse(const struct cli_cmd *c, int argc, char **argv, int *first);
void cli_usage(const struct cli_cmd *c, FILE *f);
/* The usage on stderr for wrong operands; returns EXIT_BAD_INPUT. */
int cli_usage_error(const struct cli_cmd *c);

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
 * return EXIT_OK, or EXIT_BAD_INPUT after printing "memplan: <what>: cannot
 * write 'path': why" or "<what>: writing 'path' failed: why" (the path the
 * user gave cannot hold the output: exit 2, memplan(1)), leaving nothing
 * behind.
 */
struct out_file {
	FILE *f;
	char *tmp, *real;          /* owned: the temporary file, the link's target */
	const char *target, *path, *what;
};
int out_open(struct out_file *o, const char *path, const char *what);
int out_commit(struct out_file *o, bool failed);
void out_abort(struct out_file *o);
/* A CSV field (RFC 4180): as it is, or quoted with its quotes doubled when
 * it holds a comma, a quote or a line break. */
void out_csv_field(FILE *f, const char *s);
/* Text in an XML document, <, >, & and " escaped. */
void out_xml_text(FILE *f, const char *s);
/* Do paths a and b name one file (the same string, or, both existing, the
 * same inode)?  Refuse an output over an input or over another output. */
bool out_same_file(const char *a, const char *b);
/* A net (out_net_json) or JSON (json_dumpf with flags) into path that way. */
int out_net_file(const char *path, const json_t *root, int real_digits, const char *what);
int out_json_file(const char *path, const json_t *root, size_t flags, const char *what);
/* Per-step curves of the strategies in show (bit per strategy) as SVG into
 * f (an out_file opened before any output, so a bad path prints nothing). */
void out_svg_curves(FILE *f, const struct mp_net *net, const struct mp_analysis *a, uint32_t show);
const char *out_step_phase(const struct mp_net *net, const struct mp_analysis *a, uint32_t step);

#endif
