/* SPDX-License-Identifier: BSD-3-Clause */
/* call_barrier_wait.h - lua/barrier_wait.lua: an arrival at a barrier
 * (call_barrier_wait.c). */
#ifndef DL_CALL_BARRIER_WAIT_H
#define DL_CALL_BARRIER_WAIT_H

#include "caller.h"

typedef struct dl_barrier_wait_args {
    unsigned count;               /* the caller's object's */
    uint64_t id;                  /* the operation's id (they grow in the order
                                     the process sends them) */
} dl_barrier_wait_args_t;

typedef struct dl_barrier_wait_reply {
    int result;                   /* 0 waiting, 1 a resend: its generation
                                     tripped since, 2 tripped it (the serial),
                                     -2 another count, -3 a stale copy, -4 a
                                     resend of an arrival withdrawn since, -1
                                     unexpected */
    uint64_t gen;                 /* 0, 1, 2: its generation */
    uint64_t inc;                 /* 0, 1, 2: the barrier's incarnation */
    long long arrived;            /* 0: arrivals so far in gen */
    long long count;              /* -2: the barrier's count */
} dl_barrier_wait_reply_t;

/* Its types as DL_ARGS and DL_REPLY name them (caller.h). */
typedef dl_barrier_wait_args_t dl_call_args_barrier_wait;
typedef dl_barrier_wait_reply_t dl_call_reply_barrier_wait;

void dl_call_barrier_wait(dl_call_t *c, const dl_caller_t *who, const dl_barrier_wait_args_t *a);

#endif
