/* SPDX-License-Identifier: BSD-3-Clause */
/* objsem.c - the semaphore's decoder (objects.h): the read-only script
 * lua/sem_status.lua's view (shim/script/call_sem_status.h), its leased
 * permits' holders and its queue in a lock's shape, and its incarnation
 * with its age.  Semaphores refuse
 * redlock:// (their count cannot be kept by independent servers), so
 * there they are counted (named, with no holder or waiter: never busy),
 * not read. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "call_sem_status.h"
#include "objects.h"

/* The STATE column: "2/5 permits" (held of all) for a leased semaphore,
 * "value 3" for a counting one. */
static void sem_state(const dl_sem_view_t *sv, char *buf, size_t size)
{
    if (sv->kind == 'l')
        snprintf(buf, size, "%lld/%lld permits", sv->held, sv->value);
    else if (sv->kind == 'c')
        snprintf(buf, size, "value %lld", sv->value);
    else
        snprintf(buf, size, "gone");   /* its keys expired between the scan and the read */
}

static int take_sem(dl_call_t *c, cli_obj_t *o)
{
    dl_sem_view_t *v = DL_REPLY(c, sem_status).view;
    if (!v)
        return -1;
    o->kind = DL_KIND_SEM;
    o->st = v->v;                     /* the view's parts are the object's now */
    o->semkind = v->kind;
    o->value = v->value;
    o->held = v->held;
    sem_state(v, o->state, sizeof o->state);
    o->incarn = v->incarn;
    o->incarn_age_ms = v->incarn ? v->age_ms : -1;
    free(v);
    DL_REPLY(c, sem_status).view = NULL;
    return 0;
}

static const char *unread_sem(const cli_redis_t *r)
{
    return cli_redis_is_redlock(r) ? "not read (redlock)" : NULL;
}

/* Every key but the hash: the queue, the deadlines, the registrations, the
 * leases, the holds.  The hash alone (a counting semaphore's value, kept 30
 * days past its last use) is not a sign of use. */
const cli_kind_view_t cli_sem_view = {
    .kind = DL_KIND_SEM,
    .label = "sem",
    .noun = "semaphore",
    .live_keys = 0x3eu,
    .call = dl_call_sem_status,
    .take = take_sem,
    .unread = unread_sem,
};
