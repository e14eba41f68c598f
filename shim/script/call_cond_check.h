/* SPDX-License-Identifier: BSD-3-Clause */
/* call_cond_check.h - lua/cond_check.lua: is a waiter of a condition
 * still registered?  (Its refresh; call_cond_check.c.) */
#ifndef DL_CALL_COND_CHECK_H
#define DL_CALL_COND_CHECK_H

#include "caller.h"

typedef struct dl_cond_check_args {
    uint64_t regid;
    unsigned long ttl_ms;
    unsigned servers;             /* redlock: where it was registered (0: any) */
} dl_cond_check_args_t;

typedef struct dl_cond_check_reply {
    int waiting;                  /* 1 still registered, 0 no longer (woken, or
                                     lapsed), -1 unexpected */
} dl_cond_check_reply_t;

/* Its types as DL_ARGS and DL_REPLY name them (caller.h). */
typedef dl_cond_check_args_t dl_call_args_cond_check;
typedef dl_cond_check_reply_t dl_call_reply_cond_check;

void dl_call_cond_check(dl_call_t *c, const dl_caller_t *who, const dl_cond_check_args_t *a);

#endif
