/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * scan.h - the names of the locks that have keys under the prefix, for
 * `distlock list`: SCAN (never KEYS) on every server that holds keys.
 */
#ifndef CLI_SCAN_H
#define CLI_SCAN_H

#include <stddef.h>

#include "redis.h"

/* Names of the locks that have keys under the prefix (in a cluster on
 * every master, with redlock on every server that answers, a majority at
 * least), matching the glob pattern (NULL: all), sorted and unique;
 * with_free: also locks only their meta key remembers.  0 or -1.  Free
 * with cli_names_free. */
int cli_scan_names(cli_redis_t *r, const char *pattern, int with_free,
                   char ***names, size_t **lens, size_t *n);
void cli_names_free(char **names, size_t *lens, size_t n);

#endif
