/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * scan.h - the keys under the prefix: SCAN (never KEYS) on every server
 * that holds keys.  objscan.c finds the objects of every kind in them
 * (list, top, metrics).
 */
#ifndef CLI_SCAN_H
#define CLI_SCAN_H

#include <stddef.h>

#include "redis.h"

/* Called for each key under the prefix (a key may come more than once):
 * 0 to go on, 1 to end the walk early (enough), -1 to fail it (r->err set). */
typedef int (*cli_key_fn)(const char *key, size_t klen, void *arg);
/* Walks the keys under the prefix (in a cluster on every master, with
 * redlock on every server that answers, a majority at least; a cluster
 * master that fails is walked again, with a fresh slot map, for up to the
 * I/O time-out).  0 (also when fn ended it), or -1 with r->err. */
int cli_scan_keys(cli_redis_t *r, cli_key_fn fn, void *arg);

#endif
