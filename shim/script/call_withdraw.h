/* SPDX-License-Identifier: BSD-3-Clause */
/* call_withdraw.h - lua/withdraw.lua: undo one acquire request whose
 * reply was lost (call_withdraw.c). */
#ifndef DL_CALL_WITHDRAW_H
#define DL_CALL_WITHDRAW_H

#include "caller.h"

typedef struct dl_withdraw_args {
    char mode;
    uint64_t regid;               /* the request's registration id */
    uint64_t older;               /* redlock, an acquisition that counted elsewhere:
                                     its fence (a death trace older than it goes);
                                     0 none */
    uint64_t incarn;              /* a semaphore's: the incarnation the request was
                                     sent to (lua/sem_withdraw.lua acts on that one
                                     only), 0 none known; locks: unused */
} dl_withdraw_args_t;

typedef struct dl_withdraw_reply {
    int result;                   /* 1 a hold released, 2 a queue place
                                     withdrawn, 0 nothing left, -1 unexpected */
} dl_withdraw_reply_t;

/* Its types as DL_ARGS and DL_REPLY name them (caller.h). */
typedef dl_withdraw_args_t dl_call_args_withdraw;
typedef dl_withdraw_reply_t dl_call_reply_withdraw;

void dl_call_withdraw(dl_call_t *c, const dl_caller_t *who, const dl_withdraw_args_t *a);

#endif
