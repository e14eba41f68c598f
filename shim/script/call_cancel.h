/* SPDX-License-Identifier: BSD-3-Clause */
/* call_cancel.h - lua/cancel.lua: withdraw the caller's place in the
 * queue (call_cancel.c). */
#ifndef DL_CALL_CANCEL_H
#define DL_CALL_CANCEL_H

#include "caller.h"

typedef struct dl_cancel_args {
    char mode;
    uint64_t regid;               /* the wait's registration id */
    int clear_mark;               /* redlock: take the caller's writer mark away */
} dl_cancel_args_t;

typedef struct dl_cancel_reply {
    int granted;                  /* 1 granted meanwhile: held, 0 withdrawn, -1 unexpected */
    uint64_t fence;               /* granted: as dl_acquire_reply_t */
    int dead;
    long long waiters;
} dl_cancel_reply_t;

/* Its types as DL_ARGS and DL_REPLY name them (caller.h). */
typedef dl_cancel_args_t dl_call_args_cancel;
typedef dl_cancel_reply_t dl_call_reply_cancel;

void dl_call_cancel(dl_call_t *c, const dl_caller_t *who, const dl_cancel_args_t *a);

#endif
