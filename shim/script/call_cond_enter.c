/* SPDX-License-Identifier: BSD-3-Clause */
/* call_cond_enter.c - lua/cond_enter.lua's entry (calls.h). */
#include "call_cond_enter.h"
#include "call_cond_leave.h"
#include "calls.h"
#include "cond_wire.h"
#include "dl_script_list.h"
#include "quorum.h"

void dl_call_cond_enter(dl_call_t *c, const dl_caller_t *who, const dl_cond_enter_args_t *a)
{
    dl_call_init(c, DL_SCRIPT_COND_ENTER, who);
    DL_ARGS(c, cond_enter) = *a;
}

static void wire(dl_wire_t *w, const dl_call_t *c)
{
    /* 1 prefix, 2 token, 3 registration id, 4 ttl */
    dl_wire_cond(w);
    dl_wire_num(w, DL_ARGS(c, cond_enter).regid);
    dl_wire_num(w, DL_ARGS(c, cond_enter).ttl_ms);
}

static int parse(dl_call_t *c, redisReply *r)
{
    DL_REPLY(c, cond_enter).ok = dl_reply_int(r) == 1 ? 1 : -1;
    DL_REPLY(c, cond_enter).servers = 0;
    return 0;
}

static int said_yes(const dl_call_t *c)
{
    return DL_REPLY(c, cond_enter).ok == 1;
}

/* The registration is taken back wherever it was made (a minority: the
 * wait does not start, and a signal could not be sure to find it). */
static void undo(const dl_call_t *c, const dl_tally_t *t)
{
    dl_call_t leave[DL_MAX_ENDPOINTS];
    int any = 0;
    for (int i = 0; i < t->nodes; i++) {
        dl_call_cond_leave(&leave[i], &c->who, &(dl_cond_leave_args_t){
            .regid = DL_ARGS(c, cond_enter).regid });
        any |= t->granted[i];
    }
    if (any)
        dl_quorum_on(t->conn, leave, t->nodes, t->granted);
}

/* Registered on a majority: any signal, run on a majority too, meets it on
 * one server at least.  The caller keeps where (its checks and its leave
 * count only those servers). */
static void merge(dl_call_t *c, const dl_tally_t *t)
{
    if (t->yes < t->need) {
        undo(c, t);
        DL_REPLY(c, cond_enter).ok = -1;
        return;
    }
    DL_REPLY(c, cond_enter).ok = 1;
    DL_REPLY(c, cond_enter).servers = 0;
    for (int i = 0; i < t->nodes; i++)
        if (t->granted[i])
            DL_REPLY(c, cond_enter).servers |= 1u << i;
}

static const dl_quorum_op_t quorum = { .said_yes = said_yes, .merge = merge, .undo = undo };

const dl_script_entry_t dl_entry_cond_enter = { .wire = wire, .parse = parse, .quorum = &quorum };
