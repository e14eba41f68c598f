/* SPDX-License-Identifier: BSD-3-Clause */
/* call_once_done.h - lua/once_done.lua: a once's routine completed in the
 * caller's process, which holds its running state (call_once_done.c). */
#ifndef DL_CALL_ONCE_DONE_H
#define DL_CALL_ONCE_DONE_H

#include "caller.h"

typedef struct dl_once_done_args {
    uint64_t fence;               /* the running hold's (redlock: the largest) */
    uint64_t rid;                 /* the registration id it was taken with */
    const char *info;             /* holder info, "host\tpid\ttid" */
    size_t infolen;
} dl_once_done_args_t;

typedef struct dl_once_done_reply {
    int result;                   /* 1 kept, 2 kept (the caller's hold had
                                     lapsed, nobody else held it), 3 completed
                                     already by another, 0 not kept: another
                                     process holds the running state, -1
                                     unexpected */
} dl_once_done_reply_t;

/* Its types as DL_ARGS and DL_REPLY name them (caller.h). */
typedef dl_once_done_args_t dl_call_args_once_done;
typedef dl_once_done_reply_t dl_call_reply_once_done;

void dl_call_once_done(dl_call_t *c, const dl_caller_t *who, const dl_once_done_args_t *a);

#endif
