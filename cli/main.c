/*
 * memplan: plan GPU memory for training deep networks.  Dispatch only.
 */
#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

#ifndef MEMPLAN_VERSION
#define MEMPLAN_VERSION "0.1.0"
#endif

static const struct command {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *summary;
} commands[] = {
	{ "analyze", cmd_analyze, "per-step memory under each strategy" },
	{ "check", cmd_check, "validate a network file and summarise it" },
	{ "plan", cmd_plan, "the fastest schedule that fits a memory budget" },
	{ "capacity", cmd_capacity, "the largest batch or depth that fits a GPU, per strategy" },
	{ "gen", cmd_gen, "write a published network (model zoo) as a net file" },
	{ "devices", cmd_devices, "list the built-in GPU catalog" },
	{ "verify", cmd_verify, "run a plan, check its data, measured vs predicted" },
	{ "replan", cmd_replan, "re-plan from the op times a verify report measured" },
	{ "profile", cmd_profile, "measure layer and conv algorithm times on this GPU" },
};

static void usage(FILE *f)
{
	fprintf(f, "usage: memplan <command> [options] [args]\n\ncommands:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
	fprintf(f, "\n'memplan <command> --help' shows a command's options; man memplan(1).\n");
}

/*
 * What a command printed is on its way only once stdout is flushed: a report
 * redirected to a full device fails there, after the command returned, and
 * would otherwise exit 0 with the report cut short (as git checks its
 * stdout at exit).  rc, or 2 where stdout cannot be written.
 */
static int finish_stdout(int rc)
{
	int e = fflush(stdout) != 0 ? errno : 0;

	if (!e && !ferror(stdout))
		return rc;
	/* (errno only from the flush: an earlier write's is gone) */
	fprintf(stderr, "memplan: writing standard output failed%s%s\n", e ? ": " : "", e ? strerror(e) : "");
	return rc == EXIT_OK || rc == EXIT_NO ? EXIT_BAD_INPUT : rc;
}

int main(int argc, char **argv)
{
	/* Analysis builds and drops schedules and event lists of tens of MB per
	 * strategy: keep them in the heap for reuse instead of mapping fresh
	 * zeroed pages from the kernel each time (a third of the time on 10^5
	 * layers went to page faults). */
	mallopt(M_MMAP_THRESHOLD, 1 << 30);
	mallopt(M_TRIM_THRESHOLD, 1 << 30);
	/* and grow the heap 64 MiB at a time, which mp_heap_hugepages marks
	 * for huge pages before most of it is touched */
	mallopt(M_TOP_PAD, 64 << 20);
	mp_heap_hugepages();
	if (argc < 2) {
		usage(stderr);
		return EXIT_BAD_INPUT;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return finish_stdout(EXIT_OK);
	}
	if (!strcmp(argv[1], "--version")) {
		printf("memplan %s\n", MEMPLAN_VERSION);
		return finish_stdout(EXIT_OK);
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(argv[1], commands[i].name))
			return finish_stdout(commands[i].run(argc - 1, argv + 1));
	fprintf(stderr, "memplan: '%s' is not a command (see 'memplan --help')\n", argv[1]);
	return EXIT_BAD_INPUT;
}
