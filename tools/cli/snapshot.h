/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * snapshot.h - one reading of every object under the prefix, for
 * `distlock top` (each refresh) and `distlock metrics`: the objects that
 * are held, waited on or (redlock) disputed, and the totals.
 */
#ifndef CLI_SNAPSHOT_H
#define CLI_SNAPSHOT_H

#include <stddef.h>

#include "keys.h"
#include "objects.h"
#include "redis.h"

typedef struct cli_snapshot {
    cli_obj_t *obj;           /* the busy objects */
    size_t n;
    size_t read[DL_KINDS];    /* objects read, busy or not (their keys
                                 linger: a queue 10 minutes past its last
                                 waiter) */
    size_t held[DL_KINDS];    /* objects with at least one hold */
    size_t waiters[DL_KINDS]; /* waiters, all objects together */
    int truncated;            /* more objects than the limit: some unread */
    long long at_ms;          /* when it was taken (CLOCK_REALTIME, ms) */
    long long took_ms;        /* how long reading it took */
} cli_snapshot_t;

/* Reads the objects under the prefix whose names match pattern (NULL:
 * all), at most limit of them.  0, or -1 with r->err (s empty). */
int cli_snapshot_take(cli_redis_t *r, const char *pattern, size_t limit, cli_snapshot_t *s);
void cli_snapshot_free(cli_snapshot_t *s);

/* Orders: most waiters first (then longest wait, oldest hold), oldest
 * hold first, longest wait first, or by kind and name; rev reverses. */
enum cli_sort { CLI_SORT_WAITERS, CLI_SORT_AGE, CLI_SORT_WAIT, CLI_SORT_NAME, CLI_SORTS };
void cli_snapshot_sort(cli_snapshot_t *s, int key, int rev);
/* "waiters", "age", "wait", "name" and back; -1 for another word. */
const char *cli_sort_word(int key);
int cli_sort_of(const char *word);

#endif
