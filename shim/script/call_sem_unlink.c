/* SPDX-License-Identifier: BSD-3-Clause */
/* call_sem_unlink.c - lua/sem_unlink.lua's entry (calls.h).  Never run on
 * several servers as one call: semaphores refuse redlock:// (api/sem_api.c). */
#include "call_sem_unlink.h"
#include "calls.h"
#include "dl_script_list.h"
#include "sem_calls.h"

void dl_call_sem_unlink(dl_call_t *c, const dl_caller_t *who)
{
    dl_call_init(c, DL_SCRIPT_SEM_UNLINK, who);
}

static void wire(dl_wire_t *w, const dl_call_t *c)
{
    /* 1 prefix, 2 token */
    (void)c;
    dl_wire_sem(w);
}

static int parse(dl_call_t *c, redisReply *r)
{
    dl_sem_unlink_reply_t *x = &DL_REPLY(c, sem_unlink);
    long long v = dl_reply_int(r);
    x->result = v == 0 || v == 1 ? (int)v : -1;
    return 0;
}

const dl_script_entry_t dl_entry_sem_unlink = { .wire = wire, .parse = parse };
