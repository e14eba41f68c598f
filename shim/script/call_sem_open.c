/* SPDX-License-Identifier: BSD-3-Clause */
/* call_sem_open.c - lua/sem_open.lua's entry (calls.h).  Never run on
 * several servers as one call: semaphores refuse redlock:// (api/sem_api.c). */
#include "call_sem_open.h"
#include "calls.h"
#include "dl_script_list.h"
#include "sem_calls.h"

void dl_call_sem_open(dl_call_t *c, const dl_caller_t *who, const dl_sem_open_args_t *a)
{
    dl_call_init(c, DL_SCRIPT_SEM_OPEN, who);
    DL_ARGS(c, sem_open) = *a;
}

static void wire(dl_wire_t *w, const dl_call_t *c)
{
    /* 1 prefix, 2 token, 3 kind, 4 value, 5 how, 6 id */
    const dl_sem_open_args_t *a = &DL_ARGS(c, sem_open);
    dl_wire_sem(w);
    dl_wire_put(w, &a->kind, 1);
    dl_wire_num(w, a->value);
    dl_wire_put(w, &a->how, 1);
    dl_wire_num(w, a->id);
}

static int parse(dl_call_t *c, redisReply *r)
{
    /* {1, value, inc} created; {0, value, inc} existed; {-1}; {-5}; {-2, kind} */
    dl_sem_open_reply_t *x = &DL_REPLY(c, sem_open);
    x->result = (int)dl_reply_elem(r, 0);
    x->value = dl_reply_elem(r, 1);
    x->inc = 0;
    if (x->result == 1 || x->result == 0) {
        long long inc = dl_reply_elem(r, 2);
        if (inc <= 0)
            x->result = -6;       /* every semaphore the script leaves has one */
        else
            x->inc = (uint64_t)inc;
    }
    x->other = x->result == -2 ? dl_reply_kind(r, 1) : 0;
    if (x->result != 1 && x->result != 0 && x->result != -1 && x->result != -5 &&
        x->result != -2)
        x->result = -6;
    return 0;
}

const dl_script_entry_t dl_entry_sem_open = { .wire = wire, .parse = parse };
