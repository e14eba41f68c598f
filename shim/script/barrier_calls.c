/* SPDX-License-Identifier: BSD-3-Clause */
/* barrier_calls.c - what the barrier's script entries share (barrier_calls.h). */
#include "barrier_calls.h"
#include "calls.h"

void dl_wire_barrier(dl_wire_t *w)
{
    static const int both[2] = { 0, 1 };
    const dl_caller_t *who = &w->c->who;
    dl_wire_keys(w, both, 2);
    dl_wire_put(w, who->chanprefix, who->chanprefix_len);
    dl_wire_str(w, who->token);
}
