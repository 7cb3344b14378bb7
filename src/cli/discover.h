/*
 * discover.h - finding problem folders (those holding a definition.json) below a folder.
 */
#ifndef SF_DISCOVER_H
#define SF_DISCOVER_H

#include <stddef.h>

/* Problem folders below dir (NULL: the bundled problems/), sorted. Caller frees with sf_discover_free. */
int sf_discover_problems(const char *dir, char ***out, int *n, char *err, size_t errlen);
void sf_discover_free(char **paths, int n);

#endif
