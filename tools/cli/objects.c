/* SPDX-License-Identifier: BSD-3-Clause */
/* objects.c - the kinds `distlock top` and `metrics` show, and what every
 * object's view derives from its holders and waiters (objects.h). */
#include <string.h>

#include "objects.h"

/* One line per kind that has a decoder. */
static const cli_kind_view_t *const views[DL_KINDS] = {
    [DL_KIND_LOCK] = &cli_lock_view,
    [DL_KIND_COND] = &cli_cond_view,
    [DL_KIND_SEM] = &cli_sem_view,
};

const cli_kind_view_t *cli_kind_view(int kind)
{
    return kind >= 0 && kind < DL_KINDS ? views[kind] : NULL;
}

void cli_obj_finish(cli_obj_t *o)
{
    const cli_lockstat_t *st = &o->st;
    o->hold_age_ms = -1;
    for (size_t i = 0; i < st->nholders; i++)
        if (st->holders[i].held_ms > o->hold_age_ms)
            o->hold_age_ms = st->holders[i].held_ms < 0 ? 0 : st->holders[i].held_ms;
    o->longest_wait_ms = -1;
    for (size_t i = 0; i < st->nwaiters; i++)
        if (st->waiters[i].waited_ms > o->longest_wait_ms)
            o->longest_wait_ms = st->waiters[i].waited_ms;
    o->busy = st->nholders || st->nwaiters || st->disputed;
}

void cli_obj_free(cli_obj_t *o)
{
    cli_lockstat_free(&o->st);
    memset(o, 0, sizeof *o);
}
