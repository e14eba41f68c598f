/* SPDX-License-Identifier: BSD-3-Clause */
/* call_sem_status.c - lua/sem_status.lua's entry: its reply decoded into a
 * view of the semaphore (calls.h, call_sem_status.h).  No quorum op:
 * semaphores refuse redlock://. */
#include <stdlib.h>
#include <string.h>

#include "call_sem_status.h"
#include "calls.h"
#include "dl_script_list.h"
#include "view.h"

void dl_call_sem_status(dl_call_t *c, const dl_caller_t *who, const char *name, size_t namelen)
{
    dl_call_init(c, DL_SCRIPT_SEM_STATUS, who);
    DL_ARGS(c, sem_status).name = name;
    DL_ARGS(c, sem_status).namelen = namelen;
    DL_REPLY(c, sem_status).view = NULL;
}

void dl_sem_view_clear(dl_sem_view_t *v)
{
    dl_view_clear(&v->v);
    memset(v, 0, sizeof *v);
}

static void wire(dl_wire_t *w, const dl_call_t *c)
{
    (void)c;
    dl_view_wire(w, 6);           /* the semaphore's six keys, no ARGV */
}

/* sem_status.lua's reply (its header gives the layout) -> sv.  0, or -1
 * (a reply of another shape, or out of memory). */
static int decode(const redisReply *rep, const dl_call_t *c, dl_sem_view_t *sv)
{
    dl_view_t *st = &sv->v;
    memset(sv, 0, sizeof *sv);
    /* (5 elements from a library before incarnations) */
    if (!rep || rep->type != REDIS_REPLY_ARRAY || (rep->elements != 5 && rep->elements != 7))
        return -1;
    if (dl_view_set_name(st, DL_ARGS(c, sem_status).name, DL_ARGS(c, sem_status).namelen))
        return -1;

    long long now = dl_view_ll(rep, 0);
    const char *k = dl_reply_str(rep, 1, NULL);
    sv->kind = k[0] == 'c' || k[0] == 'l' ? k[0] : 0;
    sv->value = dl_view_ll(rep, 2);
    const redisReply *hd = dl_reply_arr(rep, 3), *wq = dl_reply_arr(rep, 4);
    size_t nh = hd ? hd->elements : 0, nw = wq ? wq->elements : 0;
    if (nh && !(st->holders = calloc(nh, sizeof *st->holders)))
        return -1;
    if (nw && !(st->waiters = calloc(nw, sizeof *st->waiters)))
        return -1;

    size_t n, tl;
    const char *s, *tok;
    for (size_t i = 0; i < nh; i++) {
        const redisReply *r = hd->element[i];
        if (r->type != REDIS_REPLY_ARRAY || r->elements != 6)
            continue;
        dl_view_holder_t *h = &st->holders[st->nholders++];
        tok = dl_reply_str(r, 0, &tl);
        s = dl_reply_str(r, 1, &n);
        dl_view_who_parse(s, n, 'p', tok, tl, &h->who);
        h->held_ms = now - dl_view_ll(r, 2);
        h->fence = strtoull(dl_reply_str(r, 3, NULL), NULL, 10);
        long long count = dl_view_ll(r, 4);
        h->count = count > 0 ? (unsigned)count : 0;
        h->lease_left_ms = dl_view_ll(r, 5) - now;
        h->lease_ms = -1;
        sv->held += h->count;
        st->mode = 'p';
    }
    for (size_t i = 0; i < nw; i++) {
        const redisReply *r = wq->element[i];
        if (r->type != REDIS_REPLY_ARRAY || r->elements != 3)
            continue;
        tok = dl_reply_str(r, 0, &tl);
        s = dl_reply_str(r, 1, &n);
        dl_view_who_t *w = &st->waiters[st->nwaiters++];
        dl_view_who_parse(s, n, 'p', tok, tl, w);
        w->waited_ms = dl_view_waited_ms(r, 2, now);
    }
    st->known = sv->kind != 0;
    size_t il = 0, bl = 0;
    const char *inc = dl_reply_str(rep, 5, &il), *born = dl_reply_str(rep, 6, &bl);
    sv->incarn = il ? strtoull(inc, NULL, 10) : 0;
    sv->age_ms = bl ? now - strtoll(born, NULL, 10) : -1;
    if (sv->age_ms < -1)
        sv->age_ms = 0;
    return 0;
}

static int parse(dl_call_t *c, redisReply *r)
{
    dl_sem_view_t *v = malloc(sizeof *v);
    if (v && decode(r, c, v)) {
        dl_sem_view_clear(v);
        free(v);
        v = NULL;
    }
    DL_REPLY(c, sem_status).view = v;
    return 0;
}

static void free_reply(dl_call_t *c)
{
    if (DL_REPLY(c, sem_status).view) {
        dl_sem_view_clear(DL_REPLY(c, sem_status).view);
        free(DL_REPLY(c, sem_status).view);
        DL_REPLY(c, sem_status).view = NULL;
    }
}

const dl_script_entry_t dl_entry_sem_status = { .wire = wire, .parse = parse, .free_reply = free_reply };
