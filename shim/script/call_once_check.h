/* SPDX-License-Identifier: BSD-3-Clause */
/* call_once_check.h - lua/once_check.lua: has a once's routine completed?
 * (call_once_check.c) */
#ifndef DL_CALL_ONCE_CHECK_H
#define DL_CALL_ONCE_CHECK_H

#include "caller.h"

typedef struct dl_once_check_args {
    int unused;
} dl_once_check_args_t;

typedef struct dl_once_check_reply {
    int done;                     /* 1 completed, 0 not yet, -1 unexpected */
} dl_once_check_reply_t;

/* Its types as DL_ARGS and DL_REPLY name them (caller.h). */
typedef dl_once_check_args_t dl_call_args_once_check;
typedef dl_once_check_reply_t dl_call_reply_once_check;

void dl_call_once_check(dl_call_t *c, const dl_caller_t *who);

#endif
