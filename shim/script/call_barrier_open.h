/* SPDX-License-Identifier: BSD-3-Clause */
/* call_barrier_open.h - lua/barrier_open.lua: dist_barrier_init, the
 * barrier made or its count checked (call_barrier_open.c). */
#ifndef DL_CALL_BARRIER_OPEN_H
#define DL_CALL_BARRIER_OPEN_H

#include "caller.h"

typedef struct dl_barrier_open_args {
    unsigned count;
    unsigned long idle_ms;        /* idle this long, another count replaces it */
} dl_barrier_open_args_t;

typedef struct dl_barrier_open_reply {
    int result;                   /* 1 made or the same count, 2 the count
                                     replaced (the barrier was idle), -2 another
                                     count (in use), -1 unexpected */
    long long count;              /* the barrier's count now (-2: its own) */
    long long waiting;            /* -2: arrivals waiting in it */
    long long since_ms;           /* -2: since its last init or arrival */
} dl_barrier_open_reply_t;

/* Its types as DL_ARGS and DL_REPLY name them (caller.h). */
typedef dl_barrier_open_args_t dl_call_args_barrier_open;
typedef dl_barrier_open_reply_t dl_call_reply_barrier_open;

void dl_call_barrier_open(dl_call_t *c, const dl_caller_t *who, const dl_barrier_open_args_t *a);

#endif
