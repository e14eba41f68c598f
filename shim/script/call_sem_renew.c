/* SPDX-License-Identifier: BSD-3-Clause */
/* call_sem_renew.c - lua/sem_renew.lua's entry (calls.h).  Never run on
 * several servers as one call: semaphores refuse redlock:// (api/sem_api.c). */
#include "call_renew.h"
#include "call_sem_renew.h"
#include "calls.h"
#include "dl_script_list.h"
#include "sem_calls.h"

void dl_call_sem_renew(dl_call_t *c, const dl_caller_t *who, const dl_renew_args_t *a)
{
    dl_call_init(c, DL_SCRIPT_SEM_RENEW, who);
    DL_ARGS(c, renew) = *a;
}

static void wire(dl_wire_t *w, const dl_call_t *c)
{
    /* 1 prefix, 2 token, 3 mode, 4 lease, 5 fence */
    const dl_renew_args_t *a = &DL_ARGS(c, renew);
    dl_wire_sem(w);
    dl_wire_put(w, &a->mode, 1);
    dl_wire_num(w, a->lease_ms);
    dl_wire_num(w, a->fence);
}

static int parse(dl_call_t *c, redisReply *r)
{
    /* 0 gone; n >= 1 renewed, n - 1 queued */
    long long n = dl_reply_int(r);
    DL_REPLY(c, renew).held = n < 0 ? -1 : n >= 1;
    DL_REPLY(c, renew).queued = n >= 1 ? n - 1 : 0;
    return 0;
}

const dl_script_entry_t dl_entry_sem_renew = { .wire = wire, .parse = parse };
