/* SPDX-License-Identifier: BSD-3-Clause */
/* call_status.h - lua/status.lua: a read-only snapshot of a lock, for the
 * distlock tool (call_status.c).  No ARGV.  Its reply is a nested array
 * of strings with one reader, tools/cli/lockstat.c, which decodes it into
 * what the tool prints: the call hands that reader the snapshot as Redis
 * gave it, to be freed with dl_call_free_reply. */
#ifndef DL_CALL_STATUS_H
#define DL_CALL_STATUS_H

#include "caller.h"

struct redisReply;

typedef struct dl_status_reply {
    struct redisReply *snapshot;  /* status.lua's reply; NULL without one */
} dl_status_reply_t;

/* dl_call_t's members for it (calls.h): no arguments. */
#define DL_CALL_ARG_status
#define DL_CALL_REPLY_status dl_status_reply_t status;

void dl_call_status(dl_call_t *c, const dl_caller_t *who);

#endif
