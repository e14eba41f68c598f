/* SPDX-License-Identifier: BSD-3-Clause */
/* call_cond_leave.h - lua/cond_leave.lua: a waiter of a condition stops
 * waiting without a signal from Redis (call_cond_leave.c). */
#ifndef DL_CALL_COND_LEAVE_H
#define DL_CALL_COND_LEAVE_H

#include "caller.h"

typedef struct dl_cond_leave_args {
    uint64_t regid;
    unsigned servers;             /* redlock: where it was registered (0: any) */
} dl_cond_leave_args_t;

typedef struct dl_cond_leave_reply {
    int waiting;                  /* 1 it was still registered (removed), 0 a
                                     signal took it meanwhile (or it lapsed),
                                     -1 unexpected */
} dl_cond_leave_reply_t;

/* Its types as DL_ARGS and DL_REPLY name them (caller.h). */
typedef dl_cond_leave_args_t dl_call_args_cond_leave;
typedef dl_cond_leave_reply_t dl_call_reply_cond_leave;

void dl_call_cond_leave(dl_call_t *c, const dl_caller_t *who, const dl_cond_leave_args_t *a);

#endif
