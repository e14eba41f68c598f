/* SPDX-License-Identifier: BSD-3-Clause */
/* call_sem_break.c - lua/sem_break.lua's entry (calls.h). */
#include <stdlib.h>

#include "call_sem_break.h"
#include "calls.h"
#include "dl_script_list.h"
#include "sem_calls.h"

void dl_call_sem_break(dl_call_t *c, const dl_caller_t *who)
{
    dl_call_init(c, DL_SCRIPT_SEM_BREAK, who);
}

static void wire(dl_wire_t *w, const dl_call_t *c)
{
    /* 1 prefix, 2 the holder's token ('' every one) */
    (void)c;
    dl_wire_sem(w);
}

/* A number of the reply, -1 for '' (none). */
static long long num_or_none(const redisReply *r, size_t i)
{
    size_t len;
    const char *s = dl_reply_str(r, i, &len);
    return len ? strtoll(s, NULL, 10) : -1;
}

static int parse(dl_call_t *c, redisReply *r)
{
    /* {kind, a, b, inc} ({kind, a, b} from an older library's script) */
    dl_sem_break_reply_t *x = &DL_REPLY(c, sem_break);
    const char *k = dl_reply_str(r, 0, NULL);
    x->result = r->type == REDIS_REPLY_ARRAY && (r->elements == 3 || r->elements == 4) ? 0 : -1;
    x->kind = k[0] == 'l' || k[0] == 'c' ? k[0] : 0;
    x->removed = x->before = num_or_none(r, 1);
    x->permits = x->after = num_or_none(r, 2);
    long long inc = num_or_none(r, 3);
    x->inc = inc > 0 ? (unsigned long long)inc : 0;
    return 0;
}

const dl_script_entry_t dl_entry_sem_break = { .wire = wire, .parse = parse };
