/* SPDX-License-Identifier: BSD-3-Clause */
/* objlock.c - the lock's decoder (objects.h): the status script's view
 * (lua/status.lua; with redlock, a majority's, merged by its entry,
 * shim/script/call_status.c), as `distlock status` and `list` show it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "call_status.h"
#include "objects.h"
#include "view.h"

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

static int take_lock(dl_call_t *c, cli_obj_t *o)
{
    dl_view_t *v = DL_REPLY(c, status).view;
    if (!v)
        return -1;
    o->kind = DL_KIND_LOCK;
    o->st = *v;                       /* the view's parts are the object's now */
    free(v);
    DL_REPLY(c, status).view = NULL;
    lock_state(&o->st, o->state, sizeof o->state);
    return 0;
}

/* Keys 0-4: the hold, the readers (two keys) and the queue (two); the
 * meta hash (5) outlives them by 7 days. */
const cli_kind_view_t cli_lock_view = {
    .kind = DL_KIND_LOCK,
    .label = "lock",
    .noun = "lock",
    .live_keys = (1u << (DL_KEYS_N - 1)) - 1,
    .call = dl_call_status,
    .take = take_lock,
};
