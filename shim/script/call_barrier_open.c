/* SPDX-License-Identifier: BSD-3-Clause */
/* call_barrier_open.c - lua/barrier_open.lua's entry (calls.h). */
#include <string.h>

#include "barrier_calls.h"
#include "call_barrier_open.h"
#include "calls.h"
#include "dl_script_list.h"

void dl_call_barrier_open(dl_call_t *c, const dl_caller_t *who, const dl_barrier_open_args_t *a)
{
    dl_call_init(c, DL_SCRIPT_BARRIER_OPEN, who);
    DL_ARGS(c, barrier_open) = *a;
}

static void wire(dl_wire_t *w, const dl_call_t *c)
{
    /* 1 prefix, 2 token, 3 count, 4 idle */
    dl_wire_barrier(w);
    dl_wire_num(w, DL_ARGS(c, barrier_open).count);
    dl_wire_num(w, DL_ARGS(c, barrier_open).idle_ms);
}

static int parse(dl_call_t *c, redisReply *r)
{
    /* {1|2, count}; {-2, count, waiting, ms} */
    dl_barrier_open_reply_t *x = &DL_REPLY(c, barrier_open);
    memset(x, 0, sizeof *x);
    x->result = (int)dl_reply_elem(r, 0);
    x->count = dl_reply_elem(r, 1);
    if (x->result == -2) {
        x->waiting = dl_reply_elem(r, 2);
        x->since_ms = dl_reply_elem(r, 3);
    } else if (x->result != 1 && x->result != 2) {
        x->result = -1;
    }
    if (x->count < 0)
        x->result = -1;
    return 0;
}

const dl_script_entry_t dl_entry_barrier_open = { .wire = wire, .parse = parse };
