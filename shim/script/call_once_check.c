/* SPDX-License-Identifier: BSD-3-Clause */
/* call_once_check.c - lua/once_check.lua's entry (calls.h). */
#include <string.h>

#include "call_once_check.h"
#include "calls.h"
#include "dl_script_list.h"
#include "once_calls.h"
#include "quorum.h"

void dl_call_once_check(dl_call_t *c, const dl_caller_t *who)
{
    dl_call_init(c, DL_SCRIPT_ONCE_CHECK, who);
    memset(&DL_ARGS(c, once_check), 0, sizeof DL_ARGS(c, once_check));
}

static void wire(dl_wire_t *w, const dl_call_t *c)
{
    /* 1 prefix, 2 token */
    (void)c;
    dl_wire_once(w);
}

static int parse(dl_call_t *c, redisReply *r)
{
    long long n = dl_reply_int(r);
    DL_REPLY(c, once_check).done = n == 0 || n == 1 ? (int)n : -1;
    return 0;
}

static int said_yes(const dl_call_t *c)
{
    return DL_REPLY(c, once_check).done == 1;
}

/* redlock: complete if any server that answered says so (the completion
 * is written on a majority, and only once the routine completed: any
 * majority that answers has one server at least that saw it). */
static void merge(dl_call_t *c, const dl_tally_t *t)
{
    DL_REPLY(c, once_check).done = t->yes > 0 ? 1 : 0;
    for (int i = 0; i < t->nodes && t->yes == 0; i++)
        if (!t->at[i]->cmd.err && DL_REPLY(t->at[i], once_check).done < 0)
            DL_REPLY(c, once_check).done = -1;
}

static const dl_quorum_op_t quorum = { .said_yes = said_yes, .merge = merge };

const dl_script_entry_t dl_entry_once_check = { .wire = wire, .parse = parse, .quorum = &quorum };
