/* SPDX-License-Identifier: BSD-3-Clause */
/* sem_calls.c - what the semaphore's script entries share (sem_calls.h). */
#include "calls.h"
#include "sem_calls.h"

void dl_wire_sem(dl_wire_t *w)
{
    static const int all[6] = { 0, 1, 2, 3, 4, 5 };
    const dl_caller_t *who = &w->c->who;
    dl_wire_keys(w, all, 6);
    dl_wire_put(w, who->chanprefix, who->chanprefix_len);
    dl_wire_str(w, who->token);
}

void dl_wire_sem_op(dl_wire_t *w, const dl_sem_op_t *op)
{
    dl_wire_put(w, &op->kind, 1);  /* (the call holds its arguments) */
    dl_wire_num(w, op->value);
    dl_wire_num(w, op->id);
    dl_wire_num(w, op->inc);
}

char dl_reply_kind(const redisReply *r, size_t i)
{
    if (r->type != REDIS_REPLY_ARRAY || i >= r->elements)
        return 0;
    const redisReply *e = r->element[i];
    return e->type == REDIS_REPLY_STRING && e->len == 1 ? e->str[0] : 0;
}
