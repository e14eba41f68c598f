/* SPDX-License-Identifier: BSD-3-Clause */
/* lockstat.c - a lock's state, read by lua/status.lua (lockstat.h):
 * objfetch.c's reading for one lock. */
#include <string.h>

#include "lockstat.h"
#include "objects.h"
#include "view.h"

void cli_lockstat_free(cli_lockstat_t *st)
{
    dl_view_clear(st);
}

int cli_lockstat_fetch(cli_redis_t *r, const char *name, size_t len, cli_lockstat_t *st)
{
    char *names[1] = { (char *)name };
    size_t lens[1] = { len };
    cli_obj_t o;
    memset(st, 0, sizeof *st);
    if (cli_objs_fetch(r, DL_KIND_LOCK, names, lens, 1, &o))
        return -1;
    *st = o.st;                       /* the view's parts are the caller's now */
    return 0;
}
