/* SPDX-License-Identifier: BSD-3-Clause */
/* call_cond_enter.h - lua/cond_enter.lua: register a waiter of a
 * condition before it releases its mutex (call_cond_enter.c). */
#ifndef DL_CALL_COND_ENTER_H
#define DL_CALL_COND_ENTER_H

#include "caller.h"

typedef struct dl_cond_enter_args {
    uint64_t regid;               /* the wait's registration id */
    unsigned long ttl_ms;         /* its life unless refreshed (cond_check) */
} dl_cond_enter_args_t;

typedef struct dl_cond_enter_reply {
    int ok;                       /* 1 registered, -1 unexpected */
    unsigned servers;             /* redlock: the servers it is registered on */
} dl_cond_enter_reply_t;

/* Its types as DL_ARGS and DL_REPLY name them (caller.h). */
typedef dl_cond_enter_args_t dl_call_args_cond_enter;
typedef dl_cond_enter_reply_t dl_call_reply_cond_enter;

void dl_call_cond_enter(dl_call_t *c, const dl_caller_t *who, const dl_cond_enter_args_t *a);

#endif
