/* SPDX-License-Identifier: BSD-3-Clause */
/* once_calls.c - what the once's script entries share (once_calls.h). */
#include "calls.h"
#include "once_calls.h"

void dl_wire_once(dl_wire_t *w)
{
    static const int all[7] = { 0, 1, 2, 3, 4, 5, 6 };
    const dl_caller_t *who = &w->c->who;
    dl_wire_keys(w, all, 7);
    dl_wire_put(w, who->chanprefix, who->chanprefix_len);
    dl_wire_str(w, who->token);
}
