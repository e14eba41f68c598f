/* SPDX-License-Identifier: BSD-3-Clause */
/* lockstat.c - a lock's state, read by lua/status.lua (lockstat.h).
 *
 * The script runs through the library's script layer, routed by the
 * lock's first key (all its keys share one hash slot), so the library
 * handles reconnects, cluster redirections, sentinel failovers and a
 * server's empty script cache.  redlock:// servers are asked one by one
 * and their views merged by redlock.c (a majority decides).
 */
#include <stdlib.h>
#include <string.h>

#include "lockstat.h"
#include "redlock.h"

/* "host\tpid\ttid" -> who.  The host never holds a tab (the library
 * replaces them), so the last two tabs split it. */
static void parse_info(const char *s, size_t n, char mode, const char *token, size_t toklen,
                       cli_who_t *w)
{
    memset(w, 0, sizeof *w);
    w->waited_ms = -1;
    w->mode = mode;
    if (toklen >= sizeof w->token)
        toklen = sizeof w->token - 1;
    memcpy(w->token, token, toklen);
    const char *t2 = NULL, *t1 = NULL;
    for (size_t i = n; i-- > 0;)
        if (s[i] == '\t') {
            if (!t2)
                t2 = s + i;
            else {
                t1 = s + i;
                break;
            }
        }
    size_t hlen = t1 ? (size_t)(t1 - s) : n;
    if (hlen >= sizeof w->host)
        hlen = sizeof w->host - 1;
    memcpy(w->host, s, hlen);
    w->host[hlen] = 0;
    if (t1) {
        w->pid = strtol(t1 + 1, NULL, 10);
        w->tid = strtol(t2 + 1, NULL, 10);
    }
}

static int decode(const redisReply *rep, const char *name, size_t len, cli_lockstat_t *st)
{
    memset(st, 0, sizeof *st);
    if (!rep || rep->type != REDIS_REPLY_ARRAY || rep->elements != 5)
        return -1;
    if (!(st->name = malloc(len + 1)))
        return -1;
    memcpy(st->name, name, len);
    st->name[len] = 0;
    st->namelen = len;

    long long now = cli_el_ll(rep, 0);
    const redisReply *w = cli_el_arr(rep, 1), *rd = cli_el_arr(rep, 2), *wq = cli_el_arr(rep, 3),
                     *m = cli_el_arr(rep, 4);
    size_t nr = rd ? rd->elements : 0, nw = wq ? wq->elements : 0;
    size_t nh = nr + (w && w->elements == 7);
    if (nh && !(st->holders = calloc(nh, sizeof *st->holders)))
        return -1;
    if (nw && !(st->waiters = calloc(nw, sizeof *st->waiters)))
        return -1;

    size_t n;
    const char *s;
    if (w && w->elements == 7) {
        cli_holder_t *h = &st->holders[st->nholders++];
        size_t tl;
        const char *tok = cli_el_str(w, 0, &tl);
        s = cli_el_str(w, 1, &n);
        parse_info(s, n, 'w', tok, tl, &h->who);
        h->held_ms = now - cli_el_ll(w, 2);
        h->fence = strtoull(cli_el_str(w, 3, NULL), NULL, 10);
        h->lease_ms = cli_el_ll(w, 4);
        h->after_lapse = cli_el_ll(w, 5) == 1;
        h->lease_left_ms = cli_el_ll(w, 6);
        st->mode = 'w';
    }
    for (size_t i = 0; i < nr; i++) {
        const redisReply *r = rd->element[i];
        if (r->type != REDIS_REPLY_ARRAY || r->elements != 6)
            continue;
        cli_holder_t *h = &st->holders[st->nholders++];
        size_t tl;
        const char *tok = cli_el_str(r, 0, &tl);
        s = cli_el_str(r, 1, &n);
        parse_info(s, n, 'r', tok, tl, &h->who);
        h->held_ms = now - cli_el_ll(r, 2);
        h->fence = strtoull(cli_el_str(r, 3, NULL), NULL, 10);
        h->after_lapse = cli_el_ll(r, 4) == 1;
        h->lease_left_ms = cli_el_ll(r, 5) - now;
        h->lease_ms = -1;
        if (!st->mode)
            st->mode = 'r';
    }
    for (size_t i = 0; i < nw; i++) {
        const redisReply *r = wq->element[i];
        if (r->type != REDIS_REPLY_ARRAY || r->elements < 3)
            continue;
        size_t tl, sl;
        const char *tok = cli_el_str(r, 0, &tl);
        cli_who_t *wt = &st->waiters[st->nwaiters++];
        s = cli_el_str(r, 2, &n);
        parse_info(s, n, cli_el_str(r, 1, NULL)[0] == 'r' ? 'r' : 'w', tok, tl, wt);
        /* When it first queued: '' from a registration an older library
         * wrote. */
        cli_el_str(r, 3, &sl);
        wt->waited_ms = sl ? now - cli_el_ll(r, 3) : -1;
        if (wt->waited_ms < -1)
            wt->waited_ms = 0;
    }
    st->last_fence = strtoull(cli_el_str(m, 0, NULL), NULL, 10);
    /* The meta hash names the writer whose hold was never released; while
     * nobody holds the lock, that means the next holder gets EOWNERDEAD. */
    size_t whlen;
    const char *wh = cli_el_str(m, 1, &whlen);
    if (whlen && st->mode != 'w') {
        st->next_ownerdead = 1;
        st->broken = strcmp(wh, "broken") == 0;
        if (!st->broken) {
            s = cli_el_str(m, 2, &n);
            parse_info(s, n, 'w', "", 0, &st->lapsed);
        }
    }
    st->known = st->nholders || st->nwaiters || st->last_fence || whlen;
    return 0;
}

void cli_lockstat_free(cli_lockstat_t *st)
{
    free(st->name);
    free(st->holders);
    free(st->waiters);
    for (size_t i = 0; i < st->nservers; i++)
        free(st->servers[i].holders);
    free(st->servers);
    memset(st, 0, sizeof *st);
}

/* ---------------------------------------------------------------- fetching */

#define CHUNK 256             /* script calls per pipelined batch */

int cli_lockstat_fetch_on(cli_redis_t *r, int node, const cli_keys_t *lk, char **names,
                          const size_t *lens, size_t n, cli_lockstat_t *st)
{
    memset(st, 0, n * sizeof *st);
    if (!n)
        return 0;
    if (!r->conn) {
        if (!r->err[0])
            cli_redis_fail(r, node, "not connected");
        return -1;
    }
    size_t chunk = n < CHUNK ? n : CHUNK;
    dl_call_t *calls = calloc(chunk, sizeof *calls);
    int rc = calls ? 0 : cli_redis_oom(r);
    /* Pipelined in chunks, so that a long list costs a few round trips. */
    for (size_t at = 0; at < n && rc == 0; at += chunk) {
        size_t m = n - at < chunk ? n - at : chunk;
        for (size_t i = 0; i < m; i++) {
            dl_caller_t who = cli_caller(&lk[at + i], NULL, NULL);
            dl_call_status(&calls[i], &who);
        }
        cli_calls_run(r, node, calls, (int)m);
        for (size_t i = 0; i < m; i++) {
            redisReply *rep = calls[i].reply.status.snapshot;
            if (rc == 0 && cli_call_reply(r, node, &calls[i]))
                rc = -1;
            else if (rc == 0 && (!rep || decode(rep, names[at + i], lens[at + i], &st[at + i])))
                rc = cli_redis_fail(r, node, "unexpected reply to the status script");
            dl_call_free_reply(&calls[i]);
        }
    }
    free(calls);
    if (rc)
        for (size_t i = 0; i < n; i++)
            cli_lockstat_free(&st[i]);
    return rc;
}

int cli_lockstat_fetch_many(cli_redis_t *r, char **names, const size_t *lens, size_t n,
                            cli_lockstat_t *st)
{
    memset(st, 0, n * sizeof *st);
    if (!n)
        return 0;
    cli_keys_t *lk = calloc(n, sizeof *lk);
    if (!lk)
        return cli_redis_oom(r);
    int rc = 0;
    size_t built = 0;
    for (; built < n && rc == 0; built++)
        rc = cli_keys_make(r, &lk[built], names[built], lens[built]);
    if (rc == 0)
        rc = cli_redis_is_redlock(r) ? cli_redlock_fetch(r, lk, names, lens, n, st)
                                     : cli_lockstat_fetch_on(r, -1, lk, names, lens, n, st);
    for (size_t i = 0; i < built; i++)
        cli_keys_free(&lk[i]);
    free(lk);
    return rc;
}

int cli_lockstat_fetch(cli_redis_t *r, const char *name, size_t len, cli_lockstat_t *st)
{
    char *names[1] = { (char *)name };
    size_t lens[1] = { len };
    return cli_lockstat_fetch_many(r, names, lens, 1, st);
}
