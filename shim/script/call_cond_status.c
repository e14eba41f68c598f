/* SPDX-License-Identifier: BSD-3-Clause */
/* call_cond_status.c - lua/cond_status.lua's entry: its reply decoded into
 * a view of the condition's waiters (calls.h, call_cond_status.h). */
#include <stdlib.h>
#include <string.h>

#include "call_cond_status.h"
#include "calls.h"
#include "dl_script_list.h"
#include "quorum.h"
#include "view.h"

void dl_call_cond_status(dl_call_t *c, const dl_caller_t *who, const char *name, size_t namelen)
{
    dl_call_init(c, DL_SCRIPT_COND_STATUS, who);
    DL_ARGS(c, cond_status).name = name;
    DL_ARGS(c, cond_status).namelen = namelen;
    DL_REPLY(c, cond_status).view = NULL;
}

static void wire(dl_wire_t *w, const dl_call_t *c)
{
    (void)c;
    dl_view_wire(w, 2);           /* the condition's two keys, no ARGV */
}

/* cond_status.lua's reply (its header gives the layout) -> v.  0, or -1
 * (a reply of another shape, or out of memory). */
static int decode(const redisReply *rep, const dl_call_t *c, dl_view_t *v)
{
    memset(v, 0, sizeof *v);
    if (!rep || rep->type != REDIS_REPLY_ARRAY || rep->elements != 2)
        return -1;
    if (dl_view_set_name(v, DL_ARGS(c, cond_status).name, DL_ARGS(c, cond_status).namelen))
        return -1;
    long long now = dl_view_ll(rep, 0);
    const redisReply *wq = dl_reply_arr(rep, 1);
    size_t nw = wq ? wq->elements : 0;
    if (nw && !(v->waiters = calloc(nw, sizeof *v->waiters)))
        return -1;
    for (size_t i = 0; i < nw; i++) {
        const redisReply *r = wq->element[i];
        if (r->type != REDIS_REPLY_ARRAY || r->elements != 4)
            continue;
        size_t tl;
        const char *tok = dl_reply_str(r, 0, &tl);
        dl_view_who_t *w = &v->waiters[v->nwaiters++];
        dl_view_who_parse("", 0, 'c', tok, tl, w);
        w->waited_ms = dl_view_waited_ms(r, 2, now);
    }
    v->known = v->nwaiters > 0;
    return 0;
}

static int parse(dl_call_t *c, redisReply *r)
{
    dl_view_t *v = malloc(sizeof *v);
    if (v && decode(r, c, v)) {
        dl_view_clear(v);
        free(v);
        v = NULL;
    }
    DL_REPLY(c, cond_status).view = v;
    return 0;
}

static void free_reply(dl_call_t *c)
{
    if (DL_REPLY(c, cond_status).view) {
        dl_view_clear(DL_REPLY(c, cond_status).view);
        free(DL_REPLY(c, cond_status).view);
        DL_REPLY(c, cond_status).view = NULL;
    }
}

/* ---------------------------------------------------------------- redlock */

static int said_yes(const dl_call_t *c)
{
    return DL_REPLY(c, cond_status).view != NULL;
}

/* A waiter registers on every server it reaches, and a signal wakes it
 * from whichever it reaches: the server that shows the most waiters
 * speaks for all.  The servers' views are freed after the merge: a copy. */
static void merge(dl_call_t *c, const dl_tally_t *t)
{
    const dl_view_t *best = NULL;
    for (int i = 0; i < t->nodes; i++) {
        const dl_view_t *v = t->at[i]->cmd.err ? NULL : DL_REPLY(t->at[i], cond_status).view;
        if (v && (!best || v->nwaiters > best->nwaiters))
            best = v;
    }
    DL_REPLY(c, cond_status).view = NULL;
    dl_view_t *out = best ? calloc(1, sizeof *out) : NULL;
    if (!out)
        return;
    out->known = best->known;
    if (dl_view_set_name(out, best->name, best->namelen) ||
        (best->nwaiters && !(out->waiters = malloc(best->nwaiters * sizeof *out->waiters)))) {
        dl_view_clear(out);
        free(out);
        return;
    }
    if (best->nwaiters)
        memcpy(out->waiters, best->waiters, best->nwaiters * sizeof *out->waiters);
    out->nwaiters = best->nwaiters;
    DL_REPLY(c, cond_status).view = out;
}

static const dl_quorum_op_t quorum = { .said_yes = said_yes, .merge = merge };

const dl_script_entry_t dl_entry_cond_status = {
    .wire = wire, .parse = parse, .free_reply = free_reply, .quorum = &quorum
};
