/* SPDX-License-Identifier: BSD-3-Clause */
/* call_sem_post.c - lua/sem_post.lua's entry (calls.h).  Never run on
 * several servers as one call: semaphores refuse redlock:// (api/sem_api.c). */
#include <string.h>

#include "call_sem_post.h"
#include "calls.h"
#include "dl_script_list.h"
#include "sem_calls.h"

void dl_call_sem_post(dl_call_t *c, const dl_caller_t *who, const dl_sem_post_args_t *a)
{
    dl_call_init(c, DL_SCRIPT_SEM_POST, who);
    DL_ARGS(c, sem_post) = *a;
}

static void wire(dl_wire_t *w, const dl_call_t *c)
{
    /* 1 prefix, 2 token, 3 kind, 4 value, 5 id, 6 incarnation, 7 fence
     * (leased) */
    const dl_sem_post_args_t *a = &DL_ARGS(c, sem_post);
    dl_wire_sem(w);
    dl_wire_sem_op(w, &a->op);
    if (a->op.kind == 'l')
        dl_wire_num(w, a->fence);
    else
        dl_wire_put(w, "", 0);
}

static int parse(dl_call_t *c, redisReply *r)
{
    /* {1, value, inc} posted; {2, inc} a resend; {0, inc} none held; {-2, kind};
     * {-3}; {-4}; {-7} */
    dl_sem_post_reply_t *x = &DL_REPLY(c, sem_post);
    memset(x, 0, sizeof *x);
    x->result = (int)dl_reply_elem(r, 0);
    long long inc = 0;
    if (x->result == 1) {
        x->value = dl_reply_elem(r, 1);
        inc = dl_reply_elem(r, 2);
    } else if (x->result == 2 || x->result == 0) {
        inc = dl_reply_elem(r, 1);
    } else if (x->result == -2) {
        x->other = dl_reply_kind(r, 1);
    } else if ((x->result < -4 || x->result > 2) && x->result != DL_SEM_LOST) {
        x->result = -1;
    }
    if (x->result >= 0) {
        if (inc <= 0)
            x->result = -1;
        else
            x->inc = (uint64_t)inc;
    }
    return 0;
}

const dl_script_entry_t dl_entry_sem_post = { .wire = wire, .parse = parse };
