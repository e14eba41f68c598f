/* SPDX-License-Identifier: BSD-3-Clause */
/* call_renew.h - lua/renew.lua: extend the caller's hold by a lease
 * (call_renew.c). */
#ifndef DL_CALL_RENEW_H
#define DL_CALL_RENEW_H

#include "caller.h"

typedef struct dl_renew_args {
    char mode;
    unsigned long lease_ms;
    uint64_t fence;               /* names the hold */
    int redlock;                  /* fence sent as '' (each server numbers a hold
                                     itself) and another's writer mark counts as a
                                     waiter: set on each server's copy (redlock) */
} dl_renew_args_t;

typedef struct dl_renew_reply {
    int held;                     /* 1 renewed, 0 the hold is gone, -1 unexpected */
    long long queued;             /* renewed: waiters queued for the lock */
} dl_renew_reply_t;

/* Its types as DL_ARGS and DL_REPLY name them (caller.h). */
typedef dl_renew_args_t dl_call_args_renew;
typedef dl_renew_reply_t dl_call_reply_renew;

void dl_call_renew(dl_call_t *c, const dl_caller_t *who, const dl_renew_args_t *a);

#endif
