/*
 * snapshot.c - what an official evaluation measures, fixed against a worker that changes files under it (the
 * campaign review of session 25): the problem folder's content hash (taken when the run starts, checked before every
 * evaluation and part of every evaluation key, so a problem edited by a worker is refused and a problem changed
 * between runs is measured afresh), the workspace's copy of the problem, and a solution read once from a regular file.
 */
#include "campaign/campaign.h"
#include "core/sha256.h"
#include "core/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* the entries of dir but . and .., sorted (caller frees each and the array); NULL when dir cannot be read */
static char **sorted_entries(const char *dir, size_t *n)
{
	DIR *d = opendir(dir);
	if (!d)
		return NULL;
	char **v = NULL;
	size_t cap = 0;
	*n = 0;
	for (struct dirent *e; (e = readdir(d));) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (*n + 1 >= cap) {
			cap = cap ? 2 * cap : 16;
			v = sf_xrealloc(v, cap * sizeof *v);
		}
		v[(*n)++] = sf_xstrdup(e->d_name);
	}
	closedir(d);
	if (*n)
		qsort(v, *n, sizeof *v, cmp_str);
	return v ? v : sf_xcalloc(1, sizeof *v);
}

static void free_entries(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

static int hash_tree(sf_sha256 *h, const char *dir, const char *rel, char *err, size_t errlen)
{
	size_t n;
	char **v = sorted_entries(dir, &n);
	if (!v) {
		sf_errf(err, errlen, "cannot read the folder %s: %s", dir, strerror(errno));
		return -1;
	}
	int rc = 0;
	for (size_t i = 0; i < n && !rc; i++) {
		char *path = sf_path_join(dir, v[i]), *sub = *rel ? sf_path_join(rel, v[i]) : sf_xstrdup(v[i]);
		struct stat st;
		if (lstat(path, &st) != 0) {
			sf_errf(err, errlen, "cannot stat %s: %s", path, strerror(errno));
			rc = -1;
		} else if (S_ISDIR(st.st_mode)) {
			sf_sha256_update(h, "D", 1);
			sf_sha256_update(h, sub, strlen(sub) + 1);
			rc = hash_tree(h, path, sub, err, errlen);
		} else if (S_ISLNK(st.st_mode)) {
			char target[PATH_MAX];
			ssize_t k = readlink(path, target, sizeof target);
			if (k < 0) {
				sf_errf(err, errlen, "cannot read the link %s: %s", path, strerror(errno));
				rc = -1;
			} else {
				sf_sha256_update(h, "L", 1);
				sf_sha256_update(h, sub, strlen(sub) + 1);
				sf_sha256_update(h, target, (size_t)k);
			}
		} else if (S_ISREG(st.st_mode)) {
			char *text;
			size_t len;
			if (sf_read_file(path, &text, &len, err, errlen)) {
				rc = -1;
			} else {
				char size[32];
				snprintf(size, sizeof size, "%zu", len);
				sf_sha256_update(h, "F", 1);
				sf_sha256_update(h, sub, strlen(sub) + 1);
				sf_sha256_update(h, size, strlen(size) + 1);
				sf_sha256_update(h, text, len);
				free(text);
			}
		} else {
			sf_errf(err, errlen, "%s is neither a file, a folder nor a link", path);
			rc = -1;
		}
		free(path);
		free(sub);
	}
	free_entries(v, n);
	return rc;
}

int sf_camp_tree_hash(const char *dir, char out[65], char *err, size_t errlen)
{
	sf_sha256 h;
	sf_sha256_init(&h);
	if (hash_tree(&h, dir, "", err, errlen))
		return -1;
	uint8_t d[32];
	sf_sha256_final(&h, d);
	for (int i = 0; i < 32; i++)
		snprintf(out + 2 * i, 3, "%02x", d[i]);
	return 0;
}

int sf_camp_tree_copy(const char *src, const char *dst, char *err, size_t errlen)
{
	if (sf_mkdir_p(dst, err, errlen))
		return -1;
	size_t n;
	char **v = sorted_entries(src, &n);
	if (!v) {
		sf_errf(err, errlen, "cannot read the folder %s: %s", src, strerror(errno));
		return -1;
	}
	int rc = 0;
	for (size_t i = 0; i < n && !rc; i++) {
		char *from = sf_path_join(src, v[i]), *to = sf_path_join(dst, v[i]);
		struct stat st;
		if (lstat(from, &st) != 0) {
			sf_errf(err, errlen, "cannot stat %s: %s", from, strerror(errno));
			rc = -1;
		} else if (S_ISDIR(st.st_mode)) {
			rc = sf_camp_tree_copy(from, to, err, errlen);
		} else if (S_ISREG(st.st_mode)) {
			char *text = NULL;
			size_t len;
			if (sf_read_file(from, &text, &len, err, errlen) || sf_write_file(to, text, len, err, errlen))
				rc = -1;
			free(text);
			if (!rc && chmod(to, 0444) != 0) {
				sf_errf(err, errlen, "cannot make %s read-only: %s", to, strerror(errno));
				rc = -1;
			}
		}
		free(from);
		free(to);
	}
	free_entries(v, n);
	return rc;
}

int sf_camp_read_solution(const char *path, char **text, char *err, size_t errlen)
{
	struct stat st;
	if (lstat(path, &st) != 0) {
		sf_errf(err, errlen, "no solution %s: %s", path, strerror(errno));
		return -1;
	}
	if (!S_ISREG(st.st_mode)) {
		sf_errf(err, errlen, "%s is not a regular file (a link, FIFO or device could hand the evaluator other bytes "
				     "than the ones recorded): not evaluated",
			path);
		return -1;
	}
	size_t len;
	return sf_read_file(path, text, &len, err, errlen);
}
