/* SPDX-License-Identifier: BSD-3-Clause */
/* call_sem_cancel.h - lua/sem_cancel.lua: a wait on a semaphore that ran
 * out leaves the queue (call_sem_cancel.c). */
#ifndef DL_CALL_SEM_CANCEL_H
#define DL_CALL_SEM_CANCEL_H

#include "sem_calls.h"

typedef struct dl_sem_cancel_args {
    dl_sem_op_t op;
    uint64_t upto;                /* the wait's last sem_wait id */
} dl_sem_cancel_args_t;

typedef struct dl_sem_cancel_reply {
    int result;                   /* 1 withdrawn, 0 not queued, -2 the other kind,
                                     -3 stale, DL_SEM_LOST not the incarnation asked
                                     for (nothing done), -1 unexpected */
} dl_sem_cancel_reply_t;

/* Its types as DL_ARGS and DL_REPLY name them (caller.h). */
typedef dl_sem_cancel_args_t dl_call_args_sem_cancel;
typedef dl_sem_cancel_reply_t dl_call_reply_sem_cancel;

void dl_call_sem_cancel(dl_call_t *c, const dl_caller_t *who, const dl_sem_cancel_args_t *a);

#endif
