/* SPDX-License-Identifier: BSD-3-Clause */
/* lockstat.c - a lock's state, read by lua/status.lua (lockstat.h):
 * objfetch.c's reading for locks. */
#include <stdlib.h>
#include <string.h>

#include "lockstat.h"
#include "objects.h"

void cli_lockstat_free(cli_lockstat_t *st)
{
    dl_view_clear(st);
}

int cli_lockstat_fetch_many(cli_redis_t *r, char **names, const size_t *lens, size_t n,
                            cli_lockstat_t *st)
{
    memset(st, 0, n * sizeof *st);
    if (!n)
        return 0;
    cli_obj_t *o = calloc(n, sizeof *o);
    if (!o)
        return cli_redis_oom(r);
    int rc = cli_objs_fetch(r, DL_KIND_LOCK, names, lens, n, o);
    for (size_t i = 0; i < n && rc == 0; i++)
        st[i] = o[i].st;              /* the views' parts are the caller's now */
    free(o);
    return rc;
}

int cli_lockstat_fetch(cli_redis_t *r, const char *name, size_t len, cli_lockstat_t *st)
{
    char *names[1] = { (char *)name };
    size_t lens[1] = { len };
    return cli_lockstat_fetch_many(r, names, lens, 1, st);
}
