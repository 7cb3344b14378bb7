/*
 * discover.c - finding problem folders (see discover.h).
 */
#include "cli/discover.h"
#include "core/compile.h"
#include "core/util.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static void walk(const char *dir, int depth, char ***out, int *n, int *cap)
{
	if (depth > 6)
		return;
	char *def = sf_path_join(dir, "definition.json");
	if (sf_file_exists(def)) {
		if (*n == *cap) {
			*cap = *cap ? 2 * *cap : 32;
			*out = sf_xrealloc(*out, sizeof(char *) * (size_t)*cap);
		}
		(*out)[(*n)++] = sf_xstrdup(dir);
		free(def);
		return;
	}
	free(def);
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		char *sub = sf_path_join(dir, e->d_name);
		struct stat st;
		if (stat(sub, &st) == 0 && S_ISDIR(st.st_mode))
			walk(sub, depth + 1, out, n, cap);
		free(sub);
	}
	closedir(d);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int sf_discover_problems(const char *dir, char ***out, int *n, char *err, size_t errlen)
{
	*out = NULL;
	*n = 0;
	char *root;
	if (dir) {
		root = sf_xstrdup(dir);
	} else {
		char *home = sf_home();
		root = sf_path_join(home, "problems");
		free(home);
	}
	struct stat st;
	if (stat(root, &st) != 0 || !S_ISDIR(st.st_mode)) {
		sf_errf(err, errlen, "%s: not a folder", root);
		free(root);
		return -1;
	}
	int cap = 0;
	walk(root, 0, out, n, &cap);
	free(root);
	if (*n)
		qsort(*out, (size_t)*n, sizeof(char *), cmp_str);
	return 0;
}

void sf_discover_free(char **paths, int n)
{
	for (int i = 0; i < n; i++)
		free(paths[i]);
	free(paths);
}
