/* SPDX-License-Identifier: BSD-3-Clause */
/* call_barrier_wait.c - lua/barrier_wait.lua's entry (calls.h). */
#include <string.h>

#include "barrier_calls.h"
#include "call_barrier_wait.h"
#include "calls.h"
#include "dl_script_list.h"

void dl_call_barrier_wait(dl_call_t *c, const dl_caller_t *who, const dl_barrier_wait_args_t *a)
{
    dl_call_init(c, DL_SCRIPT_BARRIER_WAIT, who);
    DL_ARGS(c, barrier_wait) = *a;
}

static void wire(dl_wire_t *w, const dl_call_t *c)
{
    /* 1 prefix, 2 token, 3 count, 4 id */
    dl_wire_barrier(w);
    dl_wire_num(w, DL_ARGS(c, barrier_wait).count);
    dl_wire_num(w, DL_ARGS(c, barrier_wait).id);
}

static int parse(dl_call_t *c, redisReply *r)
{
    /* {0, gen, id, n}; {1|2, gen, id}; {-2, count}; {-3}; {-4} */
    dl_barrier_wait_reply_t *x = &DL_REPLY(c, barrier_wait);
    memset(x, 0, sizeof *x);
    x->result = (int)dl_reply_elem(r, 0);
    switch (x->result) {
    case 0:
        x->arrived = dl_reply_elem(r, 3);
        /* fall through */
    case 1:
    case 2: {
        long long gen = dl_reply_elem(r, 1), inc = dl_reply_elem(r, 2);
        if (gen <= 0 || inc <= 0)
            x->result = -1;
        x->gen = (uint64_t)gen;
        x->inc = (uint64_t)inc;
        break;
    }
    case -2:
        x->count = dl_reply_elem(r, 1);
        break;
    case -3:
    case -4:
        break;
    default:
        x->result = -1;
        break;
    }
    return 0;
}

const dl_script_entry_t dl_entry_barrier_wait = { .wire = wire, .parse = parse };
