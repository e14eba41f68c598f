/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * call_sem_status.h - lua/sem_status.lua: a read-only view of a semaphore,
 * for the distlock tool's top and metrics (call_sem_status.c).  No ARGV.
 * The reply is decoded here into a dl_sem_view_t: its kind and value, the
 * leased permits' holders and the queue, in the shape of a lock's view
 * (view.h) so that the tool shows both alike.  Never run on several
 * servers as one call: semaphores refuse redlock:// (api/sem_api.c).
 */
#ifndef DL_CALL_SEM_STATUS_H
#define DL_CALL_SEM_STATUS_H

#include <stddef.h>

#include "caller.h"
#include "view.h"

typedef struct dl_sem_view {
    /* The name, the holders (leased: one per process, who.mode 'p', count
     * its permits, lease_left_ms until its lease deadline, lease_ms -1),
     * the waiters (one registration per process, in queue order,
     * waited_ms since it first queued) and known. */
    dl_view_t v;
    char kind;                /* 'c' counting, 'l' leased, 0 no such semaphore */
    long long value;          /* counting: the value; leased: the permits */
    long long held;           /* leased: the permits the live holders have */
    uint64_t incarn;          /* its incarnation (lua/sem_common.lua), 0 none yet */
    long long age_ms;         /* how long ago that incarnation was created (Redis's
                                 clock), -1 unknown */
} dl_sem_view_t;

typedef struct dl_sem_status_args {
    const char *name;         /* the semaphore's name, for the view (not sent) */
    size_t namelen;
} dl_sem_status_args_t;

typedef struct dl_sem_status_reply {
    dl_sem_view_t *view;      /* NULL: a reply of another shape, or out of memory */
} dl_sem_status_reply_t;

/* Its types as DL_ARGS and DL_REPLY name them (caller.h). */
typedef dl_sem_status_args_t dl_call_args_sem_status;
typedef dl_sem_status_reply_t dl_call_reply_sem_status;

/* The call of sem_status.lua on semaphore `name` (its keys are who's: the
 * semaphore's, keys.h DL_KIND_SEM).  After the run,
 * DL_REPLY(c, sem_status).view; free it with dl_call_free_reply, or take it
 * (set it NULL) and dl_sem_view_clear + free it. */
void dl_call_sem_status(dl_call_t *c, const dl_caller_t *who, const char *name, size_t namelen);
/* Frees what v points to and zeroes it (not v itself). */
void dl_sem_view_clear(dl_sem_view_t *v);

#endif
