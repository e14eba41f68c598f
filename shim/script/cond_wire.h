/* SPDX-License-Identifier: BSD-3-Clause */
/* cond_wire.h - what the entries of a condition's scripts (lua/cond_*.lua,
 * call_cond_*.c) share: their KEYS and their first ARGV. */
#ifndef DL_COND_WIRE_H
#define DL_COND_WIRE_H

#include "calls.h"

/* A condition's three keys (keys.c), ARGV[1] the channel prefix, ARGV[2]
 * the caller's token. */
static inline void dl_wire_cond(dl_wire_t *w)
{
    static const int all[3] = { 0, 1, 2 };
    const dl_caller_t *who = &w->c->who;
    dl_wire_keys(w, all, 3);
    dl_wire_put(w, who->chanprefix, who->chanprefix_len);
    dl_wire_str(w, who->token);
}

#endif
