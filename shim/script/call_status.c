/* SPDX-License-Identifier: BSD-3-Clause */
/* call_status.c - lua/status.lua's entry (calls.h).  Read by the distlock
 * tool, one server at a time (tools/cli/lockstat.c): no merge. */
#include "calls.h"

void dl_call_status(dl_call_t *c, const dl_caller_t *who)
{
    dl_call_init(c, DL_SCRIPT_STATUS, who);
    c->reply.status.snapshot = NULL;
}

static void wire(dl_wire_t *w, const dl_call_t *c)
{
    /* the six keys, no ARGV */
    static const int keys[DL_NKEYS] = { 0, 1, 2, 3, 4, 5 };
    (void)c;
    dl_wire_keys(w, keys, DL_NKEYS);
}

static int parse(dl_call_t *c, redisReply *r)
{
    /* kept whole: its reader decodes it (dl_status_reply_t) */
    c->reply.status.snapshot = r;
    return 1;
}

static void free_reply(dl_call_t *c)
{
    if (c->reply.status.snapshot) {
        freeReplyObject(c->reply.status.snapshot);
        c->reply.status.snapshot = NULL;
    }
}

const dl_script_entry_t dl_entry_status = { .wire = wire, .parse = parse, .free_reply = free_reply };
