/* SPDX-License-Identifier: BSD-3-Clause */
/* redlock.c - redlock://: the servers' views of a lock, merged by a
 * majority (redlock.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "redlock.h"

static int same_who(const cli_who_t *a, const cli_who_t *b)
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
    cli_holder_t h;
    size_t count;
    long long held[DL_MAX_ENDPOINTS], left[DL_MAX_ENDPOINTS];
} cand_t;

/* The "redis HOST:PORT: " that a server's own message starts with, dropped
 * where the server is named already. */
static const char *strip_ep(const char *msg, const char *name)
{
    size_t n = strlen(name);
    if (strncmp(msg, "redis ", 6) == 0 && strncmp(msg + 6, name, n) == 0 &&
        strncmp(msg + 6 + n, ": ", 2) == 0)
        return msg + 8 + n;
    return msg;
}

/* Merges per[i * stride] (the view of server i, valid where answered[i])
 * into out. */
static int merge(const cli_redis_t *r, const cli_lockstat_t *per, size_t stride,
                 const int *answered, char (*errs)[200], const char *name, size_t len,
                 cli_lockstat_t *out)
{
    size_t nodes = (size_t)r->nodes, need = (size_t)cli_redis_need(r), ncand = 0, nwait = 0;
    memset(out, 0, sizeof *out);
    if (!(out->name = malloc(len + 1)))
        return -1;
    memcpy(out->name, name, len);
    out->name[len] = 0;
    out->namelen = len;
    out->need = need;
    out->nservers = nodes;
    if (!(out->servers = calloc(nodes, sizeof *out->servers)))
        return -1;
    for (size_t i = 0; i < nodes; i++)
        if (answered[i]) {
            ncand += per[i * stride].nholders;
            nwait += per[i * stride].nwaiters;
        }
    cand_t *cand = calloc(ncand ? ncand : 1, sizeof *cand);
    if (!cand)
        return -1;
    if (nwait && !(out->waiters = calloc(nwait, sizeof *out->waiters))) {
        free(cand);
        return -1;
    }

    size_t nc = 0;
    const cli_lockstat_t *lapsed = NULL;
    for (size_t i = 0; i < nodes; i++) {
        if (!answered[i])
            continue;
        const cli_lockstat_t *s = &per[i * stride];
        for (size_t k = 0; k < s->nholders; k++) {
            const cli_holder_t *h = &s->holders[k];
            size_t c = 0;
            while (c < nc && !same_who(&cand[c].h.who, &h->who))
                c++;
            if (c == nc) {
                cand[nc++].h = *h;
            } else {
                cli_holder_t *m = &cand[c].h;
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
            if (!s->broken && !lapsed)
                lapsed = s;
        }
    }

    /* The holds a majority shows, writers first.  The hold took effect when
     * the need-th server granted it and ends when fewer than need still
     * have it: the need-th longest time held and lease left. */
    size_t nh = 0;
    for (size_t c = 0; c < nc; c++)
        nh += cand[c].count >= need;
    if (nh && !(out->holders = calloc(nh, sizeof *out->holders))) {
        free(cand);
        return -1;
    }
    for (int pass = 0; pass < 2; pass++)
        for (size_t c = 0; c < nc; c++) {
            if (cand[c].count < need || (cand[c].h.who.mode == 'w') != (pass == 0))
                continue;
            cli_holder_t *h = &out->holders[out->nholders++];
            *h = cand[c].h;
            qsort(cand[c].held, cand[c].count, sizeof cand[c].held[0], cmp_ll_desc);
            qsort(cand[c].left, cand[c].count, sizeof cand[c].left[0], cmp_ll_desc);
            h->held_ms = cand[c].held[need - 1];
            h->lease_left_ms = cand[c].left[need - 1];
            if (!out->mode)
                out->mode = h->who.mode;
        }
    /* As one server shows it: only while no writer holds it. */
    if (out->mode == 'w')
        out->next_ownerdead = out->broken = 0;
    else if (out->next_ownerdead && !out->broken && lapsed)
        out->lapsed = lapsed->lapsed;
    out->disputed = nc > nh || out->nwaiters;
    free(cand);

    /* Each server's view, and whether it agrees with the result. */
    for (size_t i = 0; i < nodes; i++) {
        cli_server_t *sv = &out->servers[i];
        dl_endpoint_name(&r->cfg, (int)i, sv->name, sizeof sv->name);
        if (!answered[i]) {
            snprintf(sv->err, sizeof sv->err, "%s", strip_ep(errs[i], sv->name));
            continue;
        }
        const cli_lockstat_t *s = &per[i * stride];
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

int cli_redlock_fetch(cli_redis_t *r, const cli_keys_t *lk, char **names, const size_t *lens,
                      size_t n, cli_lockstat_t *st)
{
    size_t nodes = (size_t)r->nodes;
    int got = 0, rc = 0;
    memset(st, 0, n * sizeof *st);
    cli_lockstat_t *per = calloc(nodes * (n ? n : 1), sizeof *per);
    char(*errs)[200] = calloc(nodes, sizeof *errs);
    int *answered = calloc(nodes, sizeof *answered);
    char last[512] = "no reply";
    if (!per || !errs || !answered) {
        free(per), free(errs), free(answered);
        return cli_redis_oom(r);
    }
    /* The views are per lock: server i's view of lock j is per[i * n + j]. */
    for (size_t i = 0; i < nodes; i++) {
        if (cli_lockstat_fetch_on(r, (int)i, lk, names, lens, n, per + i * n) == 0) {
            answered[i] = 1;
            got++;
        } else {
            snprintf(errs[i], sizeof errs[i], "%.199s", r->err);
            snprintf(last, sizeof last, "%s", r->err);
        }
    }
    rc = cli_redis_tally(r, got, last);
    for (size_t j = 0; j < n && rc == 0; j++)
        if (merge(r, per + j, n, answered, errs, names[j], lens[j], &st[j]))
            rc = cli_redis_oom(r);
    for (size_t k = 0; k < nodes * n; k++)
        cli_lockstat_free(&per[k]);
    free(per), free(errs), free(answered);
    if (rc)
        for (size_t j = 0; j < n; j++)
            cli_lockstat_free(&st[j]);
    return rc;
}
