/* SPDX-License-Identifier: BSD-3-Clause */
/* call_barrier_leave.h - lua/barrier_leave.lua: an arrival leaves a
 * barrier without being released: a timed wait ran out, or an arrival
 * whose reply was lost is settled (call_barrier_leave.c). */
#ifndef DL_CALL_BARRIER_LEAVE_H
#define DL_CALL_BARRIER_LEAVE_H

#include "caller.h"

typedef struct dl_barrier_leave_args {
    uint64_t arrival;             /* the arrival's operation id */
    uint64_t gen;                 /* the generation it waits in, 0 unknown */
    uint64_t inc;                 /* its incarnation, 0 unknown */
    uint64_t id;                  /* this leave's own operation id */
    uint64_t failed;              /* the request it settles (the arrival's or a
                                     leave's id), 0 none */
} dl_barrier_leave_args_t;

typedef struct dl_barrier_leave_reply {
    int result;                   /* 1 withdrawn, 2 its generation tripped
                                     (released), 0 nothing (never counted, or
                                     Redis lost the barrier), -3 a stale copy,
                                     -1 unexpected */
} dl_barrier_leave_reply_t;

/* Its types as DL_ARGS and DL_REPLY name them (caller.h). */
typedef dl_barrier_leave_args_t dl_call_args_barrier_leave;
typedef dl_barrier_leave_reply_t dl_call_reply_barrier_leave;

void dl_call_barrier_leave(dl_call_t *c, const dl_caller_t *who, const dl_barrier_leave_args_t *a);

#endif
