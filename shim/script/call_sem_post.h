/* SPDX-License-Identifier: BSD-3-Clause */
/* call_sem_post.h - lua/sem_post.lua: post a semaphore (a permit more, or
 * one of the caller's leased permits back) and wake its waiters
 * (call_sem_post.c). */
#ifndef DL_CALL_SEM_POST_H
#define DL_CALL_SEM_POST_H

#include "sem_calls.h"

typedef struct dl_sem_post_args {
    dl_sem_op_t op;
    uint64_t fence;               /* leased: the caller's hold */
} dl_sem_post_args_t;

typedef struct dl_sem_post_reply {
    int result;                   /* 1 posted, 2 posted already (a resend), 0 leased:
                                     the caller holds no permit of that hold, -2 the
                                     other kind, -3 stale, -4 the value would pass
                                     INT_MAX, DL_SEM_LOST not the incarnation asked
                                     for (nothing done), -1 unexpected */
    long long value;              /* 1: counting, the value now; leased, the
                                     caller's permits left */
    char other;                   /* -2: the kind it has */
    uint64_t inc;                 /* 1, 2, 0: the semaphore's incarnation */
} dl_sem_post_reply_t;

/* Its types as DL_ARGS and DL_REPLY name them (caller.h). */
typedef dl_sem_post_args_t dl_call_args_sem_post;
typedef dl_sem_post_reply_t dl_call_reply_sem_post;

void dl_call_sem_post(dl_call_t *c, const dl_caller_t *who, const dl_sem_post_args_t *a);

#endif
