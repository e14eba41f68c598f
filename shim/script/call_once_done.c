/* SPDX-License-Identifier: BSD-3-Clause */
/* call_once_done.c - lua/once_done.lua's entry (calls.h). */
#include "call_once_done.h"
#include "calls.h"
#include "dl_script_list.h"
#include "once_calls.h"
#include "quorum.h"

void dl_call_once_done(dl_call_t *c, const dl_caller_t *who, const dl_once_done_args_t *a)
{
    dl_call_init(c, DL_SCRIPT_ONCE_DONE, who);
    DL_ARGS(c, once_done) = *a;
}

static void wire(dl_wire_t *w, const dl_call_t *c)
{
    /* 1 prefix, 2 token, 3 fence, 4 registration id, 5 info */
    const dl_once_done_args_t *a = &DL_ARGS(c, once_done);
    dl_wire_once(w);
    dl_wire_num(w, a->fence);
    dl_wire_num(w, a->rid);
    dl_wire_put(w, a->info, a->infolen);
}

static int parse(dl_call_t *c, redisReply *r)
{
    long long n = dl_reply_int(r);
    DL_REPLY(c, once_done).result = n >= 0 && n <= 3 ? (int)n : -1;
    return 0;
}

static int said_yes(const dl_call_t *c)
{
    return DL_REPLY(c, once_done).result >= 1;
}

/* redlock: each server names the hold by its registration id (their
 * fences differ).  Completed by another on any server: so it is.  Else
 * kept where a majority kept it; else not kept (another process holds the
 * running state on a majority, or too few could tell). */
static void merge(dl_call_t *c, const dl_tally_t *t)
{
    int res = 0, any2 = 0, all2 = 1;
    for (int i = 0; i < t->nodes; i++) {
        if (t->at[i]->cmd.err)
            continue;
        int r = DL_REPLY(t->at[i], once_done).result;
        if (r == 3)
            res = 3;
        if (r >= 1 && r <= 2) {
            any2 |= r == 2;
            all2 &= r == 2;
        }
    }
    if (res != 3 && t->yes >= t->need)
        res = any2 && all2 ? 2 : 1;
    DL_REPLY(c, once_done).result = res;
}

static const dl_quorum_op_t quorum = { .said_yes = said_yes, .merge = merge };

const dl_script_entry_t dl_entry_once_done = { .wire = wire, .parse = parse, .quorum = &quorum };
