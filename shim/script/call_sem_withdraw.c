/* SPDX-License-Identifier: BSD-3-Clause */
/* call_sem_withdraw.c - lua/sem_withdraw.lua's entry (calls.h).  Never run
 * on several servers as one call: semaphores refuse redlock:// (api/sem_api.c). */
#include "call_sem_withdraw.h"
#include "call_withdraw.h"
#include "calls.h"
#include "dl_script_list.h"
#include "sem_calls.h"

void dl_call_sem_withdraw(dl_call_t *c, const dl_caller_t *who, const dl_withdraw_args_t *a)
{
    dl_call_init(c, DL_SCRIPT_SEM_WITHDRAW, who);
    DL_ARGS(c, withdraw) = *a;
}

static void wire(dl_wire_t *w, const dl_call_t *c)
{
    /* 1 prefix, 2 token, 3 'w' withdraw a wait | 'r' complete a post, 4 the
     * operation's id, 5 the incarnation it was sent to */
    const dl_withdraw_args_t *a = &DL_ARGS(c, withdraw);
    dl_wire_sem(w);
    dl_wire_put(w, &a->mode, 1);
    dl_wire_num(w, a->regid);
    dl_wire_num(w, a->incarn);
}

static int parse(dl_call_t *c, redisReply *r)
{
    /* 1 done now, 2 a registration withdrawn, 0 nothing, -4 a post dropped,
     * DL_SEM_LOST the incarnation it was sent to is gone (nothing done) */
    DL_REPLY(c, withdraw).result = (int)dl_reply_int(r);
    return 0;
}

const dl_script_entry_t dl_entry_sem_withdraw = { .wire = wire, .parse = parse };
