/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * objscan.h - the objects under the prefix that list, top and metrics read: of
 * every kind that has a decoder (objects.h), found by their keys (scan.c
 * walks them on every server), each once, at most `limit` of them.
 */
#ifndef CLI_OBJSCAN_H
#define CLI_OBJSCAN_H

#include <stddef.h>

#include "redis.h"

typedef struct cli_objref {
    int kind;                 /* DL_KIND_* */
    char *name;               /* NUL-terminated; may hold NUL bytes itself */
    size_t len;
} cli_objref_t;

typedef struct cli_objlist {
    cli_objref_t *v;          /* sorted by kind, then name */
    size_t n;
    int truncated;            /* there were more than the limit: v holds
                                 `limit` of them, whichever the walk met
                                 first */
} cli_objlist_t;

/* The objects with a key of their kind's live_keys (all_keys: any key of
 * their kind) under the prefix, whose names match the glob pattern (NULL:
 * all), at most limit (> 0): a huge key space is not read whole, and
 * l->truncated says so.  0, or -1 with r->err (l empty). */
int cli_objscan(cli_redis_t *r, const char *pattern, size_t limit, int all_keys,
                cli_objlist_t *l);
void cli_objlist_free(cli_objlist_t *l);

#endif
