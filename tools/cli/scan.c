/* SPDX-License-Identifier: BSD-3-Clause */
/* scan.c - the keys under the prefix (scan.h).  SCAN has no key, so it
 * goes to every server: every redlock server, every master of a cluster
 * (over a connection of its own). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dl.h"
#include "scan.h"

/* One command on a connection of its own (a cluster master, `name`): the
 * reply (never an error reply), or NULL with r->err. */
static redisReply *raw_command(cli_redis_t *r, redisContext *ctx, const char *name, int argc,
                               const char **argv, const size_t *lens)
{
    sigset_t old;
    int pending;
    dl_sigpipe_block(&old, &pending);
    redisReply *rep = redisCommandArgv(ctx, argc, argv, lens);
    dl_sigpipe_restore(&old, pending);
    if (!rep) {
        snprintf(r->err, sizeof r->err, "redis %.200s: %.280s", name,
                 ctx->errstr[0] ? ctx->errstr : "connection lost");
        return NULL;
    }
    if (rep->type == REDIS_REPLY_ERROR) {
        snprintf(r->err, sizeof r->err, "redis %.200s: %.280s", name, rep->str);
        freeReplyObject(rep);
        return NULL;
    }
    return rep;
}

typedef struct scan {
    const char *match;        /* MATCH <prefix>{* */
    size_t mlen;
    cli_key_fn fn;            /* called for each key */
    void *arg;
} scan_t;

/* Walks one server's keys into s->fn: redlock server `node`, the conn's
 * server (node -1, ctx NULL), or ctx, a connection of its own to the
 * cluster master `name`.  0, 1 when fn stopped the walk, or -1. */
static int scan_server(cli_redis_t *r, const scan_t *s, int node, redisContext *ctx,
                       const char *name)
{
    char cursor[32] = "0";
    int rc = 0;
    do {
        const char *argv[] = { "SCAN", cursor, "MATCH", s->match, "COUNT", "1000" };
        size_t alens[] = { 4, strlen(cursor), 5, s->mlen, 5, 4 };
        redisReply *rep = ctx ? raw_command(r, ctx, name, 6, argv, alens)
                              : cli_redis_command(r, node, 6, argv, alens, NULL, 0);
        if (!rep)
            return -1;
        const redisReply *keys = dl_reply_arr(rep, 1);
        size_t clen;
        const char *c = dl_reply_str(rep, 0, &clen);
        if (!keys || !clen || clen >= sizeof cursor) {
            freeReplyObject(rep);
            if (ctx)
                snprintf(r->err, sizeof r->err, "redis %.200s: unexpected reply to SCAN", name);
            else
                cli_redis_fail(r, node, "unexpected reply to SCAN");
            return -1;
        }
        memcpy(cursor, c, clen);
        cursor[clen] = 0;
        for (size_t i = 0; i < keys->elements && rc == 0; i++) {
            const redisReply *k = keys->element[i];
            if (k->type == REDIS_REPLY_STRING)
                rc = s->fn(k->str, k->len, s->arg);
        }
        freeReplyObject(rep);
    } while (rc == 0 && strcmp(cursor, "0") != 0);
    return rc;
}

/* The masters of the cluster, from CLUSTER SLOTS (those that serve no
 * slot hold no keys).  0, or -1 with r->err. */
static int cluster_masters(cli_redis_t *r, dl_endpoint_t **eps, size_t *n)
{
    static const char *argv[] = { "CLUSTER", "SLOTS" };
    static const size_t lens[] = { 7, 5 };
    *eps = NULL;
    *n = 0;
    redisReply *rep = cli_redis_command(r, -1, 2, argv, lens, NULL, 0);
    if (!rep)
        return -1;
    if (rep->type != REDIS_REPLY_ARRAY) {
        freeReplyObject(rep);
        cli_redis_fail(r, -1, "unexpected reply to CLUSTER SLOTS");
        return -1;
    }
    dl_endpoint_t *v = calloc(rep->elements ? rep->elements : 1, sizeof *v);
    if (!v) {
        freeReplyObject(rep);
        snprintf(r->err, sizeof r->err, "out of memory");
        return -1;
    }
    size_t m = 0;
    for (size_t i = 0; i < rep->elements; i++) {
        const redisReply *e = rep->element[i];
        if (e->type != REDIS_REPLY_ARRAY || e->elements < 3 ||
            e->element[2]->type != REDIS_REPLY_ARRAY || e->element[2]->elements < 2)
            continue;
        const redisReply *h = e->element[2]->element[0], *p = e->element[2]->element[1];
        if (h->type != REDIS_REPLY_STRING || p->type != REDIS_REPLY_INTEGER ||
            h->len >= sizeof v->host || p->integer <= 0 || p->integer > 65535)
            continue;
        /* No address ("" or "?"): the node that answered, most likely on a
         * seed's host. */
        const char *host = h->len && strcmp(h->str, "?") != 0 ? h->str : r->cfg.ep[0].host;
        size_t k = 0;
        while (k < m && !(v[k].port == (int)p->integer && strcmp(v[k].host, host) == 0))
            k++;
        if (k < m)
            continue;
        snprintf(v[m].host, sizeof v[m].host, "%s", host);
        v[m++].port = (int)p->integer;
    }
    freeReplyObject(rep);
    if (!m) {
        free(v);
        cli_redis_fail(r, -1, "CLUSTER SLOTS: no master serves a slot");
        return -1;
    }
    *eps = v;
    *n = m;
    return 0;
}

/* Every master of the cluster, each over a connection of its own.  A
 * master that fails (a failover under way) is tried again, with a fresh
 * slot map, for up to the I/O timeout. */
static int scan_cluster(cli_redis_t *r, const scan_t *s)
{
    uint64_t give_up = 0;
    for (;;) {
        dl_endpoint_t *eps;
        size_t n;
        if (cluster_masters(r, &eps, &n))
            return -1;                /* the conn has retried already */
        int ok = 1;
        for (size_t k = 0; k < n && ok; k++) {
            char name[300], err[300];
            dl_ep_name(&eps[k], 0, name, sizeof name);
            sigset_t old;
            int pending;
            dl_sigpipe_block(&old, &pending);
            redisContext *ctx = dl_connect_ep(&r->cfg, &eps[k], r->cfg.io_timeout_ms, err, sizeof err);
            dl_sigpipe_restore(&old, pending);
            if (!ctx) {
                snprintf(r->err, sizeof r->err, "%s", err);
                ok = 0;
                break;
            }
            int rc = scan_server(r, s, -1, ctx, name);
            redisFree(ctx);
            if (rc > 0) {
                free(eps);
                return 0;             /* the caller has enough */
            }
            if (rc)
                ok = 0;
        }
        free(eps);
        if (ok)
            return 0;
        uint64_t now = dl_now_ms();
        if (!give_up)
            give_up = now + r->cfg.io_timeout_ms;
        if (now >= give_up)
            return -1;
        dl_sleep_ms(100);
    }
}

/* Every redlock server that answers; a majority must. */
static int scan_quorum(cli_redis_t *r, const scan_t *s)
{
    int got = 0;
    char last[512] = "no reply";
    for (int i = 0; i < r->nodes; i++) {
        int rc = scan_server(r, s, i, NULL, NULL);
        if (rc > 0)
            return 0;                 /* the caller has enough */
        if (rc == 0)
            got++;
        else
            snprintf(last, sizeof last, "%s", r->err);
    }
    return cli_redis_tally(r, got, last);
}

int cli_scan_keys(cli_redis_t *r, cli_key_fn fn, void *arg)
{
    const char *prefix = r->cfg.prefix;
    size_t plen = strlen(prefix);
    /* MATCH <prefix>{* with the prefix's glob characters escaped. */
    char *match = malloc(2 * plen + 3);
    if (!match)
        return cli_redis_oom(r);
    size_t m = 0;
    for (size_t i = 0; i < plen; i++) {
        if (strchr("*?[]\\", prefix[i]))
            match[m++] = '\\';
        match[m++] = prefix[i];
    }
    match[m++] = '{';
    match[m++] = '*';
    match[m] = 0;

    scan_t s = { match, m, fn, arg };
    int rc;
    if (!r->conn) {
        snprintf(r->err, sizeof r->err, "not connected");
        rc = -1;
    } else if (r->cfg.scheme == DL_SCHEME_CLUSTER) {
        rc = scan_cluster(r, &s);
    } else if (cli_redis_is_redlock(r)) {
        rc = scan_quorum(r, &s);
    } else {
        rc = scan_server(r, &s, -1, NULL, NULL) < 0 ? -1 : 0;
    }
    free(match);
    return rc;
}
