/* SPDX-License-Identifier: BSD-3-Clause */
/* objlock.c - the lock's decoder for top and metrics (objects.h): the
 * status script's view (lockstat.c; with redlock, a majority's, merged by
 * redlock.c), as `distlock status` and `list` show it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "objects.h"

static void lock_state(const cli_lockstat_t *st, char *buf, size_t size)
{
    if (st->mode == 'r' && st->nholders > 1)
        snprintf(buf, size, "shared(%zu)", st->nholders);
    else
        snprintf(buf, size, "%s", st->mode == 'w' ? "exclusive" : st->mode == 'r' ? "shared" : "free");
    if (st->nservers && st->agree < st->nservers) {
        size_t len = strlen(buf);
        snprintf(buf + len, size - len, " (%zu/%zu)", st->agree, st->nservers);
    }
}

static int fetch_locks(cli_redis_t *r, char **names, const size_t *lens, size_t n, cli_obj_t *out)
{
    cli_lockstat_t *st = calloc(n ? n : 1, sizeof *st);
    if (!st)
        return cli_redis_oom(r);
    memset(out, 0, n * sizeof *out);
    if (n && cli_lockstat_fetch_many(r, names, lens, n, st)) {
        free(st);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        out[i].kind = DL_KIND_LOCK;
        out[i].st = st[i];
        lock_state(&st[i], out[i].state, sizeof out[i].state);
    }
    free(st);
    return 0;
}

/* Keys 0-4: the hold, the readers (two keys) and the queue (two); the
 * meta hash (5) outlives them by 7 days. */
const cli_kind_view_t cli_lock_view = {
    .kind = DL_KIND_LOCK,
    .label = "lock",
    .live_keys = (1u << (DL_KEYS_N - 1)) - 1,
    .fetch = fetch_locks,
};
