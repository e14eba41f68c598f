/* SPDX-License-Identifier: BSD-3-Clause */
/* call_sem_wait.c - lua/sem_wait.lua's entry (calls.h).  Never run on
 * several servers as one call: semaphores refuse redlock:// (api/sem_api.c). */
#include <string.h>

#include "call_sem_wait.h"
#include "calls.h"
#include "dl_script_list.h"
#include "sem_calls.h"

void dl_call_sem_wait(dl_call_t *c, const dl_caller_t *who, const dl_sem_wait_args_t *a)
{
    dl_call_init(c, DL_SCRIPT_SEM_WAIT, who);
    DL_ARGS(c, sem_wait) = *a;
}

static void wire(dl_wire_t *w, const dl_call_t *c)
{
    /* 1 prefix, 2 token, 3 kind, 4 value, 5 id, 6 incarnation, 7 wait,
     * 8 waiter ttl, 9 lease, 10 info */
    const dl_sem_wait_args_t *a = &DL_ARGS(c, sem_wait);
    dl_wire_sem(w);
    dl_wire_sem_op(w, &a->op);
    dl_wire_put(w, a->wait ? "1" : "0", 1);
    dl_wire_num(w, a->waiter_ttl_ms);
    dl_wire_num(w, a->lease_ms);
    dl_wire_put(w, a->info, a->infolen);
}

static int parse(dl_call_t *c, redisReply *r)
{
    /* {1, fence, count, new, value, inc} taken; {0, nap, inc} none; {-2, kind};
     * {-3}; {-7} */
    dl_sem_wait_reply_t *x = &DL_REPLY(c, sem_wait);
    memset(x, 0, sizeof *x);
    x->got = (int)dl_reply_elem(r, 0);
    long long inc = 0;
    if (x->got == 1) {
        x->fence = (uint64_t)dl_reply_elem(r, 1);
        x->count = dl_reply_elem(r, 2);
        x->fresh = dl_reply_elem(r, 3) == 1;
        x->value = dl_reply_elem(r, 4);
        inc = dl_reply_elem(r, 5);
    } else if (x->got == 0) {
        x->nap_ms = dl_reply_elem(r, 1);
        inc = dl_reply_elem(r, 2);
    } else if (x->got == -2) {
        x->other = dl_reply_kind(r, 1);
    } else if (x->got != -3 && x->got != DL_SEM_LOST) {
        x->got = -1;
    }
    if (x->got >= 0) {
        if (inc <= 0)
            x->got = -1;
        else
            x->inc = (uint64_t)inc;
    }
    return 0;
}

const dl_script_entry_t dl_entry_sem_wait = { .wire = wire, .parse = parse };
