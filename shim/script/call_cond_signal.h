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

/* dl_call_t's members for it (calls.h). */
#define DL_CALL_ARG_cond_signal dl_cond_signal_args_t cond_signal;
#define DL_CALL_REPLY_cond_signal dl_cond_signal_reply_t cond_signal;

void dl_call_cond_signal(dl_call_t *c, const dl_caller_t *who, const dl_cond_signal_args_t *a);

#endif
