/* SPDX-License-Identifier: BSD-3-Clause */
/* call_break.c - lua/break.lua's entry (calls.h). */
#include "call_break.h"
#include "calls.h"
#include "dl_script_list.h"
#include "quorum.h"

void dl_call_break(dl_call_t *c, const dl_caller_t *who)
{
    dl_call_init(c, DL_SCRIPT_BREAK, who);
}

static void wire(dl_wire_t *w, const dl_call_t *c)
{
    /* 1 prefix */
    (void)c;
    dl_wire_lock(w, 0);
}

static int parse(dl_call_t *c, redisReply *r)
{
    /* holds removed */
    DL_REPLY(c, brk).removed = dl_reply_int(r);
    return 0;
}

static int said_yes(const dl_call_t *c)
{
    return DL_REPLY(c, brk).removed >= 1;
}

/* What any server removed was removed: as many as the server that had the
 * most (each server holds a copy of the same holds). */
static void merge(dl_call_t *c, const dl_tally_t *t)
{
    DL_REPLY(c, brk).removed = -1;
    for (int i = 0; i < t->nodes; i++)
        if (!t->at[i]->cmd.err && DL_REPLY(t->at[i], brk).removed > DL_REPLY(c, brk).removed)
            DL_REPLY(c, brk).removed = DL_REPLY(t->at[i], brk).removed;
}

static const dl_quorum_op_t quorum = { .said_yes = said_yes, .any_one = 1, .merge = merge };

const dl_script_entry_t dl_entry_break = { .wire = wire, .parse = parse, .quorum = &quorum };
