/* SPDX-License-Identifier: BSD-3-Clause */
/* call_barrier_check.h - lua/barrier_check.lua: where a barrier is, for a
 * process whose threads wait on it (call_barrier_check.c). */
#ifndef DL_CALL_BARRIER_CHECK_H
#define DL_CALL_BARRIER_CHECK_H

#include "caller.h"

typedef struct dl_barrier_check_args {
    int unused;
} dl_barrier_check_args_t;

typedef struct dl_barrier_check_reply {
    int result;                   /* 1 there, 0 Redis has no barrier, -1 unexpected */
    uint64_t inc;                 /* 1: its incarnation */
    uint64_t gen;                 /* 1: the generation under way */
    long long arrived;            /* 1: its arrivals so far */
} dl_barrier_check_reply_t;

/* Its types as DL_ARGS and DL_REPLY name them (caller.h). */
typedef dl_barrier_check_args_t dl_call_args_barrier_check;
typedef dl_barrier_check_reply_t dl_call_reply_barrier_check;

void dl_call_barrier_check(dl_call_t *c, const dl_caller_t *who);

#endif
