/* SPDX-License-Identifier: BSD-3-Clause */
/* call_withdraw_all.h - lua/withdraw_all.lua: undo one lock-all request
 * (acquire_all.lua) whose reply was lost: each hold that very request
 * took, and nothing else (call_withdraw_all.c).  The link writes it behind
 * the request it undoes (script.h, dl_script_run_undoable). */
#ifndef DL_CALL_WITHDRAW_ALL_H
#define DL_CALL_WITHDRAW_ALL_H

#include "caller.h"

typedef struct dl_withdraw_all_args {
    const char *list;             /* the request's list of locks (its ARGV[6]:
                                     dl_acquire_all_list), the caller's */
    size_t listlen;
    uint64_t regid;               /* the request's registration id */
} dl_withdraw_all_args_t;

typedef struct dl_withdraw_all_reply {
    long long released;           /* holds released; -1 unexpected */
} dl_withdraw_all_reply_t;

/* Its types as DL_ARGS and DL_REPLY name them (caller.h). */
typedef dl_withdraw_all_args_t dl_call_args_withdraw_all;
typedef dl_withdraw_all_reply_t dl_call_reply_withdraw_all;

/* who: the request's caller (the first lock's keys). */
void dl_call_withdraw_all(dl_call_t *c, const dl_caller_t *who, const dl_withdraw_all_args_t *a);

#endif
