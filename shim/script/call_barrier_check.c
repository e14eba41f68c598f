/* SPDX-License-Identifier: BSD-3-Clause */
/* call_barrier_check.c - lua/barrier_check.lua's entry (calls.h). */
#include <string.h>

#include "barrier_calls.h"
#include "call_barrier_check.h"
#include "calls.h"
#include "dl_script_list.h"

void dl_call_barrier_check(dl_call_t *c, const dl_caller_t *who)
{
    dl_call_init(c, DL_SCRIPT_BARRIER_CHECK, who);
    memset(&DL_ARGS(c, barrier_check), 0, sizeof DL_ARGS(c, barrier_check));
}

static void wire(dl_wire_t *w, const dl_call_t *c)
{
    /* 1 prefix, 2 token */
    (void)c;
    dl_wire_barrier(w);
}

static int parse(dl_call_t *c, redisReply *r)
{
    /* {1, id, g, n}; {0} */
    dl_barrier_check_reply_t *x = &DL_REPLY(c, barrier_check);
    memset(x, 0, sizeof *x);
    x->result = (int)dl_reply_elem(r, 0);
    if (x->result == 1) {
        long long inc = dl_reply_elem(r, 1), gen = dl_reply_elem(r, 2);
        x->arrived = dl_reply_elem(r, 3);
        if (inc <= 0 || gen <= 0)
            x->result = -1;
        x->inc = (uint64_t)inc;
        x->gen = (uint64_t)gen;
    } else if (x->result != 0) {
        x->result = -1;
    }
    return 0;
}

const dl_script_entry_t dl_entry_barrier_check = { .wire = wire, .parse = parse };
