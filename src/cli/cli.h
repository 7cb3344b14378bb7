/*
 * cli.h - the solforge command table: each command is `int cmd_x(int argc, char **argv)` returning
 * the process exit status (core/status.h); argv[0] is the command name.
 */
#ifndef SF_CLI_H
#define SF_CLI_H

#include <stdio.h>
#include "core/eval.h"

int cmd_eval(int argc, char **argv);
int cmd_list(int argc, char **argv);
int cmd_sol(int argc, char **argv);
int cmd_suite(int argc, char **argv);
int cmd_version(int argc, char **argv);
int cmd_oracle_check(int argc, char **argv);
int cmd_campaign(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_import(int argc, char **argv);

/* Shared by eval and suite: parses one evaluation option at argv[*i] (advancing *i past a value).
 * Returns 1 when consumed, 0 when not an evaluation option, -1 on a bad value (message printed). */
int cli_eval_option(int argc, char **argv, int *i, sf_eval_opts *o, const char **backend_name);
/* Resolves --backend (NULL = best available); 0, or prints why and returns the exit code
 * (SF_EXIT_USAGE for a bad name or flag combination, SF_EXIT_NO_BACKEND when unavailable here). */
int cli_pick_backend(const char *name, sf_eval_opts *o);
/* Prints the per-workload table of an evaluation. */
void cli_print_table(FILE *f, const sf_eval *e);
/* Whether a -D define "NAME[=VALUE]" is acceptable (identifier; value of [A-Za-z0-9_.+-]). */
int cli_define_ok(const char *d);
/* Usage text of the evaluation options. */
extern const char cli_eval_options_help[];

#endif
