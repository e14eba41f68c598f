/* SPDX-License-Identifier: BSD-3-Clause */
/* call_sem_value.c - lua/sem_value.lua's entry (calls.h).  Never run on
 * several servers as one call: semaphores refuse redlock:// (api/sem_api.c). */
#include "call_sem_value.h"
#include "calls.h"
#include "dl_script_list.h"
#include "sem_calls.h"

void dl_call_sem_value(dl_call_t *c, const dl_caller_t *who, const dl_sem_value_args_t *a)
{
    dl_call_init(c, DL_SCRIPT_SEM_VALUE, who);
    DL_ARGS(c, sem_value) = *a;
}

static void wire(dl_wire_t *w, const dl_call_t *c)
{
    /* 1 prefix, 2 token, 3 kind, 4 value, 5 incarnation */
    const dl_sem_value_args_t *a = &DL_ARGS(c, sem_value);
    dl_wire_sem(w);
    dl_wire_put(w, &a->kind, 1);
    dl_wire_num(w, a->value);
    dl_wire_num(w, a->inc);
}

static int parse(dl_call_t *c, redisReply *r)
{
    /* {1, value, inc}; {-2, kind}; {-7} */
    dl_sem_value_reply_t *x = &DL_REPLY(c, sem_value);
    x->result = (int)dl_reply_elem(r, 0);
    x->value = dl_reply_elem(r, 1);
    x->other = x->result == -2 ? dl_reply_kind(r, 1) : 0;
    long long inc = x->result == 1 ? dl_reply_elem(r, 2) : 0;
    x->inc = inc > 0 ? (uint64_t)inc : 0;
    if (x->result != 1 && x->result != -2 && x->result != DL_SEM_LOST)
        x->result = -1;
    if (x->result == 1 && inc < 0)
        x->result = -1;
    return 0;
}

const dl_script_entry_t dl_entry_sem_value = { .wire = wire, .parse = parse };
