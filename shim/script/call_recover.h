/* SPDX-License-Identifier: BSD-3-Clause */
/* call_recover.h - lua/recover.lua: an unrecoverable lock made usable
 * again (call_recover.c). */
#ifndef DL_CALL_RECOVER_H
#define DL_CALL_RECOVER_H

#include "caller.h"

typedef struct dl_recover_args {
    uint64_t mark;                /* the mark the caller was told (ENOTRECOVERABLE) */
} dl_recover_args_t;

typedef struct dl_recover_reply {
    int result;                   /* 1 recovered, 0 not so marked, -1 unexpected */
} dl_recover_reply_t;

/* Its types as DL_ARGS and DL_REPLY name them (caller.h). */
typedef dl_recover_args_t dl_call_args_recover;
typedef dl_recover_reply_t dl_call_reply_recover;

void dl_call_recover(dl_call_t *c, const dl_caller_t *who, const dl_recover_args_t *a);

#endif
