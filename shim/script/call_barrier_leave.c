/* SPDX-License-Identifier: BSD-3-Clause */
/* call_barrier_leave.c - lua/barrier_leave.lua's entry (calls.h). */
#include "barrier_calls.h"
#include "call_barrier_leave.h"
#include "calls.h"
#include "dl_script_list.h"

void dl_call_barrier_leave(dl_call_t *c, const dl_caller_t *who, const dl_barrier_leave_args_t *a)
{
    dl_call_init(c, DL_SCRIPT_BARRIER_LEAVE, who);
    DL_ARGS(c, barrier_leave) = *a;
}

static void wire(dl_wire_t *w, const dl_call_t *c)
{
    /* 1 prefix, 2 token, 3 arrival, 4 gen, 5 incarnation, 6 id, 7 failed */
    const dl_barrier_leave_args_t *a = &DL_ARGS(c, barrier_leave);
    dl_wire_barrier(w);
    dl_wire_num(w, a->arrival);
    dl_wire_num(w, a->gen);
    dl_wire_num(w, a->inc);
    dl_wire_num(w, a->id);
    dl_wire_num(w, a->failed);
}

static int parse(dl_call_t *c, redisReply *r)
{
    long long n = dl_reply_int(r);
    DL_REPLY(c, barrier_leave).result = (n >= 0 && n <= 2) || n == -3 ? (int)n : -1;
    return 0;
}

const dl_script_entry_t dl_entry_barrier_leave = { .wire = wire, .parse = parse };
