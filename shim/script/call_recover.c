/* SPDX-License-Identifier: BSD-3-Clause */
/* call_recover.c - lua/recover.lua's entry (calls.h). */
#include "call_recover.h"
#include "calls.h"
#include "dl_script_list.h"
#include "quorum.h"

void dl_call_recover(dl_call_t *c, const dl_caller_t *who, const dl_recover_args_t *a)
{
    dl_call_init(c, DL_SCRIPT_RECOVER, who);
    DL_ARGS(c, recover) = *a;
}

static void wire(dl_wire_t *w, const dl_call_t *c)
{
    /* 1 prefix, 2 token, 3 mark */
    dl_wire_lock(w, 1);
    dl_wire_num(w, DL_ARGS(c, recover).mark);
}

static int parse(dl_call_t *c, redisReply *r)
{
    long long v = dl_reply_int(r);
    DL_REPLY(c, recover).result = v == 0 || v == 1 ? (int)v : -1;
    return 0;
}

static int said_yes(const dl_call_t *c)
{
    return DL_REPLY(c, recover).result == 1;
}

/* redlock://: the mark is on every server the release reached (the same
 * mark everywhere: the holder's fence); the recovery goes to every one,
 * and a server that failed is owed it until it answers. */
static void owe(const dl_call_t *c, const dl_tally_t *t)
{
    (void)c;
    dl_quorum_owe_failed(t, 0, 0, 1);
}

static int needs_all(const dl_call_t *c)
{
    (void)c;
    return 1;
}

/* Recovered where any server had the mark (the others had none, or are
 * owed the call). */
static void merge(dl_call_t *c, const dl_tally_t *t)
{
    DL_REPLY(c, recover).result = t->yes > 0;
}

static const dl_quorum_op_t quorum = { .said_yes = said_yes, .owe = owe, .needs_all = needs_all,
                                       .any_one = 1, .merge = merge };

const dl_script_entry_t dl_entry_recover = { .wire = wire, .parse = parse, .quorum = &quorum };
