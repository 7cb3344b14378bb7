/*
 * main.c - the solforge command: a table of subcommands, git style.
 */
#include "cli/cli.h"
#include "core/status.h"

#include <stdio.h>
#include <string.h>

struct cmd_struct {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *help;
};

static const struct cmd_struct commands[] = {
	{ "eval", cmd_eval, "evaluate a solution on a problem: correctness, time, baseline, SOL score" },
	{ "suite", cmd_suite, "evaluate the bundled solutions of every problem (the default job)" },
	{ "list", cmd_list, "list problems with their op type and source model" },
	{ "sol", cmd_sol, "FLOPs, bytes and speed-of-light time per workload" },
	{ "campaign", cmd_campaign, "optimize problems with agents or the autotuner, recorded in a database" },
	{ "report", cmd_report, "the report of a campaign database (text, --html)" },
	{ "oracle-check", cmd_oracle_check, "check that the GPU-compiled oracle agrees with the CPU one" },
	{ "import", cmd_import, "read SOL-ExecBench / FlashInfer-Bench problem folders: what can be evaluated" },
	{ "version", cmd_version, "print the version" },
};

static void usage(FILE *f)
{
	fprintf(f, "usage: solforge <command> [args]\n\ncommands:\n");
	for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
		fprintf(f, "  %-8s %s\n", commands[i].name, commands[i].help);
	fprintf(f, "\n'solforge <command> --help' describes a command. docs/cli.md lists exit codes.\n");
}

int cmd_version(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	printf("solforge 0.1 (solution ABI %u)\n", 1u);
	return SF_EXIT_OK;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return SF_EXIT_USAGE;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return SF_EXIT_OK;
	}
	if (!strcmp(argv[1], "--version"))
		return cmd_version(argc - 1, argv + 1);
	for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].fn(argc - 1, argv + 1);
	fprintf(stderr, "solforge: '%s' is not a command\n", argv[1]);
	usage(stderr);
	return SF_EXIT_USAGE;
}
