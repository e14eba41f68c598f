/* SPDX-License-Identifier: BSD-3-Clause */
/* call_cond_signal.h - lua/cond_signal.lua: wake the oldest waiter of a
 * condition, or every waiter (call_cond_signal.c). */
#ifndef DL_CALL_COND_SIGNAL_H
#define DL_CALL_COND_SIGNAL_H

#include "caller.h"

typedef struct dl_cond_signal_args {
    int all;                      /* broadcast: every waiter */
} dl_cond_signal_args_t;

typedef struct dl_cond_signal_reply {
    long long woken;              /* waiters woken (pushed), -1 unexpected */
} dl_cond_signal_reply_t;

/* Its types as DL_ARGS and DL_REPLY name them (caller.h). */
typedef dl_cond_signal_args_t dl_call_args_cond_signal;
typedef dl_cond_signal_reply_t dl_call_reply_cond_signal;

void dl_call_cond_signal(dl_call_t *c, const dl_caller_t *who, const dl_cond_signal_args_t *a);

#endif
