/* SPDX-License-Identifier: BSD-3-Clause */
/* call_status.c - lua/status.lua's entry: its reply decoded into a view
 * of the lock, and redlock's per-server views merged by a majority
 * (calls.h, call_status.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "call_status.h"
#include "calls.h"
#include "config.h"
#include "dl_script_list.h"
#include "quorum.h"
#include "view.h"

void dl_call_status(dl_call_t *c, const dl_caller_t *who, const char *name, size_t namelen)
{
    dl_call_init(c, DL_SCRIPT_STATUS, who);
    DL_ARGS(c, status).name = name;
    DL_ARGS(c, status).namelen = namelen;
    DL_REPLY(c, status).view = NULL;
}

static void wire(dl_wire_t *w, const dl_call_t *c)
{
    (void)c;
    dl_view_wire(w, DL_NKEYS);    /* the six keys, no ARGV */
}

/* ---------------------------------------------------------------- decoding */

/* status.lua's reply (its header gives the layout) -> st.  0, or -1 (a
 * reply of another shape, or out of memory). */
static int decode(const redisReply *rep, const dl_call_t *c, dl_view_t *st)
{
    memset(st, 0, sizeof *st);
    if (!rep || rep->type != REDIS_REPLY_ARRAY || rep->elements != 5)
        return -1;
    if (dl_view_set_name(st, DL_ARGS(c, status).name, DL_ARGS(c, status).namelen))
        return -1;

    long long now = dl_view_ll(rep, 0);
    const redisReply *w = dl_reply_arr(rep, 1), *rd = dl_reply_arr(rep, 2), *wq = dl_reply_arr(rep, 3),
                     *m = dl_reply_arr(rep, 4);
    size_t nr = rd ? rd->elements : 0, nw = wq ? wq->elements : 0;
    size_t nh = nr + (w && w->elements == 7);
    if (nh && !(st->holders = calloc(nh, sizeof *st->holders)))
        return -1;
    if (nw && !(st->waiters = calloc(nw, sizeof *st->waiters)))
        return -1;

    size_t n, tl;
    const char *s, *tok;
    if (w && w->elements == 7) {
        dl_view_holder_t *h = &st->holders[st->nholders++];
        tok = dl_reply_str(w, 0, &tl);
        s = dl_reply_str(w, 1, &n);
        dl_view_who_parse(s, n, 'w', tok, tl, &h->who);
        h->held_ms = now - dl_view_ll(w, 2);
        h->fence = strtoull(dl_reply_str(w, 3, NULL), NULL, 10);
        h->lease_ms = dl_view_ll(w, 4);
        h->after_lapse = dl_view_ll(w, 5) == 1;
        h->lease_left_ms = dl_view_ll(w, 6);
        st->mode = 'w';
    }
    for (size_t i = 0; i < nr; i++) {
        const redisReply *r = rd->element[i];
        if (r->type != REDIS_REPLY_ARRAY || r->elements != 6)
            continue;
        dl_view_holder_t *h = &st->holders[st->nholders++];
        tok = dl_reply_str(r, 0, &tl);
        s = dl_reply_str(r, 1, &n);
        dl_view_who_parse(s, n, 'r', tok, tl, &h->who);
        h->held_ms = now - dl_view_ll(r, 2);
        h->fence = strtoull(dl_reply_str(r, 3, NULL), NULL, 10);
        h->after_lapse = dl_view_ll(r, 4) == 1;
        h->lease_left_ms = dl_view_ll(r, 5) - now;
        h->lease_ms = -1;
        if (!st->mode)
            st->mode = 'r';
    }
    for (size_t i = 0; i < nw; i++) {
        const redisReply *r = wq->element[i];
        if (r->type != REDIS_REPLY_ARRAY || r->elements < 3)
            continue;
        tok = dl_reply_str(r, 0, &tl);
        s = dl_reply_str(r, 2, &n);
        dl_view_who_t *wt = &st->waiters[st->nwaiters++];
        dl_view_who_parse(s, n, dl_reply_str(r, 1, NULL)[0] == 'r' ? 'r' : 'w', tok, tl, wt);
        wt->waited_ms = dl_view_waited_ms(r, 3, now);
    }
    st->last_fence = strtoull(dl_reply_str(m, 0, NULL), NULL, 10);
    /* The meta hash names the writer whose hold was never released; while
     * nobody holds the lock, that means the next holder gets EOWNERDEAD. */
    size_t whlen;
    const char *wh = dl_reply_str(m, 1, &whlen);
    if (whlen && st->mode != 'w') {
        st->next_ownerdead = 1;
        st->broken = strcmp(wh, "broken") == 0;
        if (!st->broken) {
            s = dl_reply_str(m, 2, &n);
            dl_view_who_parse(s, n, 'w', "", 0, &st->lapsed);
        }
    }
    st->known = st->nholders || st->nwaiters || st->last_fence || whlen;
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
    DL_REPLY(c, status).view = v;
    return 0;
}

static void free_reply(dl_call_t *c)
{
    if (DL_REPLY(c, status).view) {
        dl_view_clear(DL_REPLY(c, status).view);
        free(DL_REPLY(c, status).view);
        DL_REPLY(c, status).view = NULL;
    }
}

/* ---------------------------------------------------------------- redlock */

static int same_who(const dl_view_who_t *a, const dl_view_who_t *b)
{
    if (a->mode != b->mode)
        return 0;
    if (a->token[0] || b->token[0])
        return strcmp(a->token, b->token) == 0;
    return a->pid == b->pid && a->tid == b->tid && strcmp(a->host, b->host) == 0;
}

static int cmp_ll_desc(const void *a, const void *b)
{
    long long x = *(const long long *)a, y = *(const long long *)b;
    return x < y ? 1 : x > y ? -1 : 0;
}

/* A hold as the servers show it. */
typedef struct cand {
    dl_view_holder_t h;
    size_t count;
    long long held[DL_MAX_ENDPOINTS], left[DL_MAX_ENDPOINTS];
} cand_t;

/* What a server's failure says, without the "redis: " or "redis
 * HOST:PORT: " it starts with: the server is named already. */
static const char *strip_ep(const char *msg, const char *name)
{
    size_t n = strlen(name);
    if (strncmp(msg, "redis: ", 7) == 0)
        return msg + 7;
    if (strncmp(msg, "redis ", 6) == 0 && strncmp(msg + 6, name, n) == 0 &&
        strncmp(msg + 6 + n, ": ", 2) == 0)
        return msg + 8 + n;
    return msg;
}

static int said_yes(const dl_call_t *c)
{
    return DL_REPLY(c, status).view != NULL;
}

/* The holds a majority shows, writers first.  The hold took effect when
 * the need-th server granted it and ends when fewer than need still have
 * it: the need-th longest time held and lease left.  per[i] is server i's
 * view, NULL where it gave none.  0, or -1: out of memory. */
/* One server's view s added to the candidates cand[0..*nc) (a holder per
 * who, with what each server shows of it) and to out's waiters, fence,
 * and signs of a lapse (*lapsed: the first server showing one). */
static void add_server(const dl_view_t *s, cand_t *cand, size_t *nc, dl_view_t *out,
                       const dl_view_t **lapsed)
{
    for (size_t k = 0; k < s->nholders; k++) {
        const dl_view_holder_t *h = &s->holders[k];
        size_t c = 0;
        while (c < *nc && !same_who(&cand[c].h.who, &h->who))
            c++;
        if (c == *nc) {
            cand[(*nc)++].h = *h;
        } else {
            dl_view_holder_t *m = &cand[c].h;
            if (h->fence > m->fence)
                m->fence = h->fence;
            if (h->lease_ms > m->lease_ms)
                m->lease_ms = h->lease_ms;
            m->after_lapse |= h->after_lapse;
        }
        if (cand[c].count < DL_MAX_ENDPOINTS) {     /* one per server */
            cand[c].held[cand[c].count] = h->held_ms;
            cand[c].left[cand[c].count++] = h->lease_left_ms;
        }
    }
    /* Nobody queues with redlock (the library's waiters retry), but
     * show whatever registrations a server has. */
    for (size_t k = 0; k < s->nwaiters; k++) {
        size_t w = 0;
        while (w < out->nwaiters && !same_who(&out->waiters[w], &s->waiters[k]))
            w++;
        if (w == out->nwaiters)
            out->waiters[out->nwaiters++] = s->waiters[k];
    }
    if (s->last_fence > out->last_fence)
        out->last_fence = s->last_fence;
    out->known |= s->known;
    if (s->next_ownerdead) {
        out->next_ownerdead = 1;
        out->broken |= s->broken;
        if (!s->broken && !*lapsed)
            *lapsed = s;
    }
}

/* The candidates that `need` servers show become out's holders (writers
 * first), each with the time held and left that a majority vouches for.
 * 0, or -1 (out of memory). */
static int pick_holders(cand_t *cand, size_t nc, size_t need, dl_view_t *out)
{
    size_t nh = 0;
    for (size_t c = 0; c < nc; c++)
        nh += cand[c].count >= need;
    if (nh && !(out->holders = calloc(nh, sizeof *out->holders)))
        return -1;
    for (int pass = 0; pass < 2; pass++)
        for (size_t c = 0; c < nc; c++) {
            if (cand[c].count < need || (cand[c].h.who.mode == 'w') != (pass == 0))
                continue;
            dl_view_holder_t *h = &out->holders[out->nholders++];
            *h = cand[c].h;
            qsort(cand[c].held, cand[c].count, sizeof cand[c].held[0], cmp_ll_desc);
            qsort(cand[c].left, cand[c].count, sizeof cand[c].left[0], cmp_ll_desc);
            h->held_ms = cand[c].held[need - 1];
            h->lease_left_ms = cand[c].left[need - 1];
            if (!out->mode)
                out->mode = h->who.mode;
        }
    return 0;
}

static int merge_holders(const dl_view_t *const *per, size_t nodes, size_t need, dl_view_t *out)
{
    size_t ncand = 0, nwait = 0, nc = 0;
    for (size_t i = 0; i < nodes; i++)
        if (per[i]) {
            ncand += per[i]->nholders;
            nwait += per[i]->nwaiters;
        }
    cand_t *cand = calloc(ncand ? ncand : 1, sizeof *cand);
    if (!cand)
        return -1;
    if (nwait && !(out->waiters = calloc(nwait, sizeof *out->waiters))) {
        free(cand);
        return -1;
    }
    const dl_view_t *lapsed = NULL;
    for (size_t i = 0; i < nodes; i++)
        if (per[i])
            add_server(per[i], cand, &nc, out, &lapsed);
    if (pick_holders(cand, nc, need, out)) {
        free(cand);
        return -1;
    }
    /* As one server shows it: only while no writer holds it. */
    if (out->mode == 'w')
        out->next_ownerdead = out->broken = 0;
    else if (out->next_ownerdead && !out->broken && lapsed)
        out->lapsed = lapsed->lapsed;
    out->disputed = nc > out->nholders || out->nwaiters;
    free(cand);
    return 0;
}

/* Each server's view, and whether it agrees with the result. */
static int merge_servers(const dl_tally_t *t, const dl_view_t *const *per, dl_view_t *out)
{
    const dl_config_t *cfg = dl_conn_config(t->conn);
    for (size_t i = 0; i < out->nservers; i++) {
        dl_view_server_t *sv = &out->servers[i];
        const dl_call_t *pc = t->at[i];
        const dl_view_t *s = per[i];
        dl_endpoint_name(cfg, (int)i, sv->name, sizeof sv->name);
        if (!s) {
            snprintf(sv->err, sizeof sv->err, "%s",
                     pc->cmd.err ? strip_ep(pc->cmd.errmsg, sv->name)
                                 : "unexpected reply to the status script");
            continue;
        }
        sv->answered = 1;
        sv->mode = s->mode;
        if (s->nholders && !(sv->holders = calloc(s->nholders, sizeof *sv->holders)))
            return -1;
        for (size_t k = 0; k < s->nholders; k++)
            sv->holders[sv->nholders++] = s->holders[k].who;
        int agrees = s->nholders == out->nholders;
        for (size_t k = 0; agrees && k < out->nholders; k++) {
            size_t j = 0;
            while (j < s->nholders && !same_who(&s->holders[j].who, &out->holders[k].who))
                j++;
            agrees = j < s->nholders;
        }
        sv->agrees = agrees;
        out->agree += (size_t)agrees;
    }
    return 0;
}

/* A majority answered: one view from theirs, a hold counting where a
 * majority shows it, with what each server showed.  The servers' own
 * views stay theirs (quorum.c frees them). */
static void merge(dl_call_t *c, const dl_tally_t *t)
{
    const dl_view_t *per[DL_MAX_ENDPOINTS];
    for (int i = 0; i < t->nodes; i++)
        per[i] = t->at[i]->cmd.err ? NULL : DL_REPLY(t->at[i], status).view;
    dl_view_t *out = calloc(1, sizeof *out);
    DL_REPLY(c, status).view = NULL;
    if (!out)
        return;
    out->need = (size_t)t->need;
    if (dl_view_set_name(out, DL_ARGS(c, status).name, DL_ARGS(c, status).namelen) ||
        !(out->servers = calloc((size_t)t->nodes, sizeof *out->servers)))
        goto fail;
    out->nservers = (size_t)t->nodes;
    if (merge_holders(per, out->nservers, out->need, out) || merge_servers(t, per, out))
        goto fail;
    DL_REPLY(c, status).view = out;
    return;
fail:
    dl_view_clear(out);
    free(out);
}

static const dl_quorum_op_t quorum = { .said_yes = said_yes, .merge = merge };

const dl_script_entry_t dl_entry_status = {
    .wire = wire, .parse = parse, .free_reply = free_reply, .quorum = &quorum
};
