/* SPDX-License-Identifier: BSD-3-Clause */
/* call_touch.c - lua/touch.lua's entry (calls.h). */
#include "call_touch.h"
#include "calls.h"
#include "dl_script_list.h"
#include "quorum.h"

void dl_call_touch(dl_call_t *c, const dl_caller_t *who, const dl_touch_args_t *a)
{
    dl_call_init(c, DL_SCRIPT_TOUCH, who);
    DL_ARGS(c, touch) = *a;
}

static void wire(dl_wire_t *w, const dl_call_t *c)
{
    /* KEYS: lock, readers, rinfo, meta.  ARGV: 1 token, 2 mode, 3 lease, 4 fence, 5 seq */
    static const int keys[] = { 0, 1, 2, 5 };
    const dl_touch_args_t *a = &DL_ARGS(c, touch);
    dl_wire_keys(w, keys, 4);
    dl_wire_str(w, c->who.token);
    dl_wire_put(w, &a->mode, 1);
    dl_wire_num(w, a->lease_ms);
    dl_wire_num(w, a->fence);
    dl_wire_num(w, a->seq);
}

static int parse(dl_call_t *c, redisReply *r)
{
    /* 1 renewed, 0 not there (only posted: read by the tests) */
    DL_REPLY(c, touch).renewed = (int)dl_reply_int(r);
    return 0;
}

static int said_yes(const dl_call_t *c)
{
    return DL_REPLY(c, touch).renewed >= 1;
}

static const dl_quorum_op_t quorum = { .said_yes = said_yes, .merge = dl_quorum_pick };

const dl_script_entry_t dl_entry_touch = { .wire = wire, .parse = parse, .quorum = &quorum };
