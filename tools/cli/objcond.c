/* SPDX-License-Identifier: BSD-3-Clause */
/* objcond.c - the condition's decoder (objects.h): the read-only script
 * lua/cond_status.lua's view (shim/script/call_cond_status.h), its
 * waiters.  A condition holds nothing; its waiters are known by their
 * process's token alone. */
#include <stdio.h>
#include <stdlib.h>

#include "call_cond_status.h"
#include "objects.h"
#include "view.h"

static int take_cond(dl_call_t *c, cli_obj_t *o)
{
    dl_view_t *v = DL_REPLY(c, cond_status).view;
    if (!v)
        return -1;
    o->kind = DL_KIND_COND;
    o->st = *v;                       /* the view's parts are the object's now */
    free(v);
    DL_REPLY(c, cond_status).view = NULL;
    snprintf(o->state, sizeof o->state, "%s", o->st.nwaiters ? "waited on" : "-");
    return 0;
}

/* Both keys: the registrations and their deadlines (they live twice a
 * registration's life past the last one). */
const cli_kind_view_t cli_cond_view = {
    .kind = DL_KIND_COND,
    .label = "cond",
    .noun = "condition",
    .live_keys = 0x3u,
    .call = dl_call_cond_status,
    .take = take_cond,
};
