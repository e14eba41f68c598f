/* SPDX-License-Identifier: BSD-3-Clause */
/* call_sem_unlink.h - lua/sem_unlink.lua: a semaphore's name removed from
 * Redis (call_sem_unlink.c). */
#ifndef DL_CALL_SEM_UNLINK_H
#define DL_CALL_SEM_UNLINK_H

#include "sem_calls.h"

typedef struct dl_sem_unlink_reply {
    int result;                   /* 1 removed, 0 Redis had none, -1 unexpected */
} dl_sem_unlink_reply_t;

/* Its types as DL_ARGS and DL_REPLY name them (caller.h): no arguments
 * beyond the caller. */
typedef dl_sem_unlink_reply_t dl_call_reply_sem_unlink;

void dl_call_sem_unlink(dl_call_t *c, const dl_caller_t *who);

#endif
