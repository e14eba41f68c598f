/* SPDX-License-Identifier: BSD-3-Clause */
/* call_sem_cancel.c - lua/sem_cancel.lua's entry (calls.h).  Never run on
 * several servers as one call: semaphores refuse redlock:// (api/sem_api.c). */
#include "call_sem_cancel.h"
#include "calls.h"
#include "dl_script_list.h"
#include "sem_calls.h"

void dl_call_sem_cancel(dl_call_t *c, const dl_caller_t *who, const dl_sem_cancel_args_t *a)
{
    dl_call_init(c, DL_SCRIPT_SEM_CANCEL, who);
    DL_ARGS(c, sem_cancel) = *a;
}

static void wire(dl_wire_t *w, const dl_call_t *c)
{
    /* 1 prefix, 2 token, 3 kind, 4 value, 5 id, 6 incarnation, 7 the wait's
     * last id */
    const dl_sem_cancel_args_t *a = &DL_ARGS(c, sem_cancel);
    dl_wire_sem(w);
    dl_wire_sem_op(w, &a->op);
    dl_wire_num(w, a->upto);
}

static int parse(dl_call_t *c, redisReply *r)
{
    /* {1, inc} withdrawn; {0, inc} not queued; {-2, kind}; {-3}; {-7} */
    int x = (int)dl_reply_elem(r, 0);
    DL_REPLY(c, sem_cancel).result = (x >= -3 && x <= 1) || x == DL_SEM_LOST ? x : -1;
    return 0;
}

const dl_script_entry_t dl_entry_sem_cancel = { .wire = wire, .parse = parse };
