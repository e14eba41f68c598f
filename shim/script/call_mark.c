/* SPDX-License-Identifier: BSD-3-Clause */
/* call_mark.c - lua/mark.lua's entry (calls.h). */
#include "call_mark.h"
#include "calls.h"
#include "dl_script_list.h"
#include "quorum.h"

void dl_call_mark(dl_call_t *c, const dl_caller_t *who, const dl_mark_args_t *a)
{
    dl_call_init(c, DL_SCRIPT_MARK, who);
    DL_ARGS(c, mark) = *a;
}

static void wire(dl_wire_t *w, const dl_call_t *c)
{
    /* KEYS: lock, meta.  ARGV: 1 token, 2 fence, 3 'l' | 'h', 4 ms, 5 seq */
    static const int keys[] = { 0, 5 };
    const dl_mark_args_t *a = &DL_ARGS(c, mark);
    dl_wire_keys(w, keys, 2);
    dl_wire_str(w, c->who.token);
    dl_wire_num(w, a->fence);
    dl_wire_put(w, a->lingering ? "l" : "h", 1);
    dl_wire_num(w, a->ms);
    dl_wire_num(w, a->seq);
}

static int parse(dl_call_t *c, redisReply *r)
{
    /* 1 marked, 0 not there (only posted: read by the tests) */
    DL_REPLY(c, mark).marked = (int)dl_reply_int(r);
    return 0;
}

static int said_yes(const dl_call_t *c)
{
    return DL_REPLY(c, mark).marked >= 1;
}

static const dl_quorum_op_t quorum = { .said_yes = said_yes, .merge = dl_quorum_pick };

const dl_script_entry_t dl_entry_mark = { .wire = wire, .parse = parse, .quorum = &quorum };
