/* SPDX-License-Identifier: BSD-3-Clause */
/* call_cond_leave.c - lua/cond_leave.lua's entry (calls.h). */
#include "call_cond_leave.h"
#include "calls.h"
#include "cond_wire.h"
#include "dl_script_list.h"
#include "quorum.h"

void dl_call_cond_leave(dl_call_t *c, const dl_caller_t *who, const dl_cond_leave_args_t *a)
{
    dl_call_init(c, DL_SCRIPT_COND_LEAVE, who);
    DL_ARGS(c, cond_leave) = *a;
}

static void wire(dl_wire_t *w, const dl_call_t *c)
{
    /* 1 prefix, 2 token, 3 registration id */
    dl_wire_cond(w);
    dl_wire_num(w, DL_ARGS(c, cond_leave).regid);
}

static int parse(dl_call_t *c, redisReply *r)
{
    long long n = dl_reply_int(r);
    DL_REPLY(c, cond_leave).waiting = n == 0 || n == 1 ? (int)n : -1;
    return 0;
}

static int said_yes(const dl_call_t *c)
{
    return DL_REPLY(c, cond_leave).waiting == 1;
}

/* Taken by a signal if any server it was registered on says so (as
 * cond_check's merge): the signal it consumed there is not lost. */
static void merge(dl_call_t *c, const dl_tally_t *t)
{
    unsigned on = DL_ARGS(c, cond_leave).servers;
    DL_REPLY(c, cond_leave).waiting = 1;
    for (int i = 0; i < t->nodes; i++) {
        if (on && !(on & (1u << i)))
            continue;
        if (!t->at[i]->cmd.err && DL_REPLY(t->at[i], cond_leave).waiting == 0)
            DL_REPLY(c, cond_leave).waiting = 0;
    }
}

static const dl_quorum_op_t quorum = { .said_yes = said_yes, .merge = merge };

const dl_script_entry_t dl_entry_cond_leave = { .wire = wire, .parse = parse, .quorum = &quorum };
