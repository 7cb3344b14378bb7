/*
 * cmd_report.c - `solforge report DB [--html FILE]`: the text report of a campaign database, and
 * optionally its self-contained HTML form (src/campaign/report.h).
 */
#include "cli/cli.h"
#include "core/status.h"

#include <stdio.h>
#include <string.h>

#ifndef SF_NO_SQLITE
#include "campaign/report.h"

int cmd_report(int argc, char **argv)
{
	const char *db = NULL, *html = NULL;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			printf("usage: solforge report DB [--html FILE]\n");
			return SF_EXIT_OK;
		} else if (!strcmp(argv[i], "--html")) {
			if (i + 1 >= argc) {
				fprintf(stderr, "solforge: --html needs a file\n");
				return SF_EXIT_USAGE;
			}
			html = argv[++i];
		} else if (argv[i][0] == '-') {
			fprintf(stderr, "solforge: report: unknown option '%s'\n", argv[i]);
			return SF_EXIT_USAGE;
		} else if (!db) {
			db = argv[i];
		} else {
			fprintf(stderr, "solforge: report: unexpected argument '%s'\n", argv[i]);
			return SF_EXIT_USAGE;
		}
	}
	if (!db) {
		fprintf(stderr, "usage: solforge report DB [--html FILE]\n");
		return SF_EXIT_USAGE;
	}
	sf_report r;
	char err[1024];
	if (sf_report_load(db, &r, err, sizeof err)) {
		fprintf(stderr, "solforge: %s\n", err);
		return SF_EXIT_BAD_INPUT;
	}
	sf_report_text(&r, stdout);
	int rc = SF_EXIT_OK;
	if (html) {
		if (sf_report_html(&r, html, err, sizeof err)) {
			fprintf(stderr, "solforge: %s\n", err);
			rc = SF_EXIT_INTERNAL;
		} else {
			printf("html report: %s\n", html);
		}
	}
	sf_report_free(&r);
	return rc;
}

#else
int cmd_report(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "solforge: report: this solforge was built without SQLite (see tools/devdeps.sh)\n");
	return SF_EXIT_NO_BACKEND;
}
#endif
