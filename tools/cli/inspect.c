/* SPDX-License-Identifier: BSD-3-Clause */
/* inspect.c - a lock's state, read from its Redis keys (docs/PROTOCOL.md).
 *
 * The state of one lock is read by one read-only script, so it is a
 * consistent snapshot in Redis's own clock: the holders' `since` and lease
 * deadlines are Redis times, and comparing them with the client's clock
 * would show the clock skew instead of how long a lock has been held.  The
 * script also decodes the msgpack records of readers and waiters, so this
 * side only ever sees plain strings.
 *
 * Commands go through a dl_conn_t, routed by the lock's first key (all its
 * keys share one hash slot), so the library handles reconnects, cluster
 * redirections and sentinel failovers.  redlock:// servers are asked one
 * by one and their answers merged here (a majority decides); SCAN, which
 * has no key, goes to every server: every redlock server, every master of
 * a cluster (over a connection of its own).
 */
#include <errno.h>
#include <fnmatch.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "conn.h"
#include "distlock.h"
#include "dl.h"
#include "inspect.h"
#include "keys.h"
#include "script.h"

/* KEYS: the six keys of lua/common.lua.  Reply (all strings):
 *   { now_ms,
 *     writer: {} or {owner, info, since, fence, lease, od, pttl},
 *     readers: { {token, info, since, fence, od, deadline}, ... } live ones,
 *     waiters: { {token, mode, info}, ... } live registrations, in queue order,
 *     meta:    {fence, wh, wi} }                                   */
static const char status_lua[] =
    "local function s(v)\n"
    "  if v == nil or v == false then return '' end\n"
    "  if type(v) == 'number' then return string.format('%.0f', v) end\n"
    "  return tostring(v)\n"
    "end\n"
    "local t = redis.call('TIME')\n"
    "local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"
    "local w = redis.call('HMGET', KEYS[1], 'owner', 'info', 'since', 'fence', 'lease', 'od')\n"
    "local writer = {}\n"
    "if w[1] then\n"
    "  writer = {s(w[1]), s(w[2]), s(w[3]), s(w[4]), s(w[5]), s(w[6]), s(redis.call('PTTL', KEYS[1]))}\n"
    "end\n"
    "local readers = {}\n"
    "local rd = redis.call('ZRANGEBYSCORE', KEYS[2], '(' .. s(now), '+inf', 'WITHSCORES')\n"
    "for i = 1, #rd, 2 do\n"
    "  local info, since, fence, od = '', '', '', ''\n"
    "  local raw = redis.call('HGET', KEYS[3], rd[i])\n"
    "  if raw then\n"
    "    local v = cmsgpack.unpack(raw)\n"
    "    info, since, fence, od = s(v[1]), s(v[2]), s(v[3]), s(v[4])\n"
    "  end\n"
    "  readers[#readers + 1] = {rd[i], info, since, fence, od, s(tonumber(rd[i + 1]))}\n"
    "end\n"
    "local waiters = {}\n"
    "for _, tok in ipairs(redis.call('ZRANGE', KEYS[4], 0, -1)) do\n"
    "  local raw = redis.call('HGET', KEYS[5], tok)\n"
    "  if raw then\n"
    "    local v = cmsgpack.unpack(raw)\n"
    "    if tonumber(v[3]) > now then waiters[#waiters + 1] = {tok, s(v[1]), s(v[5])} end\n"
    "  end\n"
    "end\n"
    "local m = redis.call('HMGET', KEYS[6], 'fence', 'wh', 'wi')\n"
    "return {s(now), writer, readers, waiters, {s(m[1]), s(m[2]), s(m[3])}}\n";


/* ---------------------------------------------------------------- connection */

static void conn_close(dl_conn_t *c)
{
    dl_conn_free(c);
}

/* What a message names: redlock server `node`, or (node -1) where the conn
 * sends its commands. */
static const char *where(const cli_redis_t *r, int node, char *buf, size_t size)
{
    if (node >= 0)
        return dl_endpoint_name(&r->cfg, node, buf, size);
    if (r->cfg.scheme == DL_SCHEME_SENTINEL)
        snprintf(buf, size, "master \"%.100s\"", r->cfg.master);
    else if (r->cfg.scheme == DL_SCHEME_CLUSTER)
        snprintf(buf, size, "cluster");
    else
        dl_endpoint_name(&r->cfg, 0, buf, size);
    return buf;
}

static void set_err(cli_redis_t *r, int node, const char *what)
{
    char ep[300];
    snprintf(r->err, sizeof r->err, "redis %.200s: %.280s", where(r, node, ep, sizeof ep), what);
}

int cli_redis_open(cli_redis_t *r, unsigned long timeout_ms)
{
    memset(r, 0, sizeof *r);
    if (dl_config_load(&r->cfg)) {
        snprintf(r->err, sizeof r->err, "%s", dist_lasterror());
        return CLI_EX_CONFIG;
    }
    if (timeout_ms)
        r->cfg.io_timeout_ms = timeout_ms;
    /* The library sets its log level when a process first uses it; this
     * may come first (main.c chose DISTLOCK_LOG). */
    if (dl_log_level != r->cfg.log_level)
        dl_log_level = r->cfg.log_level;
    if (!(r->conn = dl_conn_new(&r->cfg))) {
        snprintf(r->err, sizeof r->err, "out of memory");
        return CLI_EX_OSERR;
    }
    r->nodes = dl_conn_nodes(r->conn);
    return 0;
}

void cli_redis_close(cli_redis_t *r)
{
    if (r->conn)
        conn_close(r->conn);
    r->conn = NULL;
}

static int is_redlock(const cli_redis_t *r)
{
    return r->cfg.scheme == DL_SCHEME_REDLOCK && r->nodes > 1;
}

static int majority(const cli_redis_t *r)
{
    return r->nodes / 2 + 1;
}

static void cmd_init(dl_cmd_t *c, int argc, const char **argv, const size_t *lens,
                     const char *key, size_t keylen)
{
    memset(c, 0, sizeof *c);
    c->argc = argc;
    c->argv = argv;
    c->argvlen = lens;
    c->key = key;
    c->keylen = keylen;
}

/* Sends cmds: node -1 through the conn (each routed by its key), else to
 * redlock server `node`.  Each ends with a reply (perhaps an error reply)
 * or err set. */
static void exec_on(cli_redis_t *r, int node, dl_cmd_t *cmds, int n)
{
    if (node < 0)
        dl_conn_exec(r->conn, cmds, n);
    else
        dl_conn_exec_node(r->conn, node, cmds, n);
}

/* c's reply, once sent; NULL with r->err set for an error reply, an I/O
 * error or no reply (error replies are freed). */
static redisReply *reply_of(cli_redis_t *r, int node, dl_cmd_t *c)
{
    if (c->err || !c->reply) {
        if (c->err)
            snprintf(r->err, sizeof r->err, "%s", c->errmsg);
        else
            set_err(r, node, "no reply");
        return NULL;
    }
    if (c->reply->type == REDIS_REPLY_ERROR) {
        set_err(r, node, c->reply->str);
        freeReplyObject(c->reply);
        return NULL;
    }
    return c->reply;
}

/* One command; the reply (never an error reply), or NULL with r->err set. */
static redisReply *command(cli_redis_t *r, int node, int argc, const char **argv,
                           const size_t *lens, const char *key, size_t keylen)
{
    if (!r->conn) {
        if (!r->err[0])
            set_err(r, node, "not connected");
        return NULL;
    }
    dl_cmd_t c;
    cmd_init(&c, argc, argv, lens, key, keylen);
    exec_on(r, node, &c, 1);
    return reply_of(r, node, &c);
}

/* ---------------------------------------------------------------- the keys */

typedef struct lockkeys {
    char *buf;
    const char *k[DL_NKEYS];
    size_t len[DL_NKEYS];
} lockkeys_t;

/* The keys the library uses for name (shim/keys.h). */
static int keys_make(lockkeys_t *lk, const char *prefix, const char *name, size_t n)
{
    if (!(lk->buf = malloc(dl_keys_size(prefix, n))))
        return -1;
    dl_keys_write(lk->buf, prefix, name, n, lk->k, lk->len);
    return 0;
}

/* Builds EVALSHA/EVAL argv for a script over a lock's six keys. */
static int script_argv(const char **argv, size_t *lens, const char *verb, const char *body,
                       size_t bodylen, const lockkeys_t *lk, int nargs, const char **args)
{
    int a = 0;
    argv[a] = verb;
    lens[a++] = strlen(verb);
    argv[a] = body;
    lens[a++] = bodylen;
    argv[a] = "6";
    lens[a++] = 1;
    for (int i = 0; i < DL_NKEYS; i++) {
        argv[a] = lk->k[i];
        lens[a++] = lk->len[i];
    }
    for (int i = 0; i < nargs; i++) {
        argv[a] = args[i];
        lens[a++] = strlen(args[i]);
    }
    return a;
}

/* ---------------------------------------------------------------- decoding */

static const char *el_str(const redisReply *r, size_t i, size_t *len)
{
    static const char none[] = "";
    if (!r || r->type != REDIS_REPLY_ARRAY || i >= r->elements)
        goto empty;
    const redisReply *e = r->element[i];
    if (e->type != REDIS_REPLY_STRING && e->type != REDIS_REPLY_STATUS)
        goto empty;
    if (len)
        *len = e->len;
    return e->str;
empty:
    if (len)
        *len = 0;
    return none;
}

static long long el_ll(const redisReply *r, size_t i)
{
    return strtoll(el_str(r, i, NULL), NULL, 10);
}

static const redisReply *el_arr(const redisReply *r, size_t i)
{
    if (!r || r->type != REDIS_REPLY_ARRAY || i >= r->elements ||
        r->element[i]->type != REDIS_REPLY_ARRAY)
        return NULL;
    return r->element[i];
}

/* "host\tpid\ttid" -> who.  The host never holds a tab (the library
 * replaces them), so the last two tabs split it. */
static void parse_info(const char *s, size_t n, char mode, const char *token, size_t toklen,
                       cli_who_t *w)
{
    memset(w, 0, sizeof *w);
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

    long long now = el_ll(rep, 0);
    const redisReply *w = el_arr(rep, 1), *rd = el_arr(rep, 2), *wq = el_arr(rep, 3),
                     *m = el_arr(rep, 4);
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
        const char *tok = el_str(w, 0, &tl);
        s = el_str(w, 1, &n);
        parse_info(s, n, 'w', tok, tl, &h->who);
        h->held_ms = now - el_ll(w, 2);
        h->fence = strtoull(el_str(w, 3, NULL), NULL, 10);
        h->lease_ms = el_ll(w, 4);
        h->after_lapse = el_ll(w, 5) == 1;
        h->lease_left_ms = el_ll(w, 6);
        st->mode = 'w';
    }
    for (size_t i = 0; i < nr; i++) {
        const redisReply *r = rd->element[i];
        if (r->type != REDIS_REPLY_ARRAY || r->elements != 6)
            continue;
        cli_holder_t *h = &st->holders[st->nholders++];
        size_t tl;
        const char *tok = el_str(r, 0, &tl);
        s = el_str(r, 1, &n);
        parse_info(s, n, 'r', tok, tl, &h->who);
        h->held_ms = now - el_ll(r, 2);
        h->fence = strtoull(el_str(r, 3, NULL), NULL, 10);
        h->after_lapse = el_ll(r, 4) == 1;
        h->lease_left_ms = el_ll(r, 5) - now;
        h->lease_ms = -1;
        if (!st->mode)
            st->mode = 'r';
    }
    for (size_t i = 0; i < nw; i++) {
        const redisReply *r = wq->element[i];
        if (r->type != REDIS_REPLY_ARRAY || r->elements != 3)
            continue;
        size_t tl;
        const char *tok = el_str(r, 0, &tl);
        s = el_str(r, 2, &n);
        parse_info(s, n, el_str(r, 1, NULL)[0] == 'r' ? 'r' : 'w', tok, tl,
                   &st->waiters[st->nwaiters++]);
    }
    st->last_fence = strtoull(el_str(m, 0, NULL), NULL, 10);
    /* The meta hash names the writer whose hold was never released; while
     * nobody holds the lock, that means the next holder gets EOWNERDEAD. */
    size_t whlen;
    const char *wh = el_str(m, 1, &whlen);
    if (whlen && st->mode != 'w') {
        st->next_ownerdead = 1;
        st->broken = strcmp(wh, "broken") == 0;
        if (!st->broken) {
            s = el_str(m, 2, &n);
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

/* ---------------------------------------------------------------- status */

static int is_noscript(const redisReply *rep)
{
    return rep && rep->type == REDIS_REPLY_ERROR && strncmp(rep->str, "NOSCRIPT", 8) == 0;
}

/* Learns the status script's SHA1 (the same on every server), loading it on
 * the server of key (node -1) or on redlock server `node`.  Servers that
 * lack it answer NOSCRIPT and get the body (which caches it there). */
static int load_status_script(cli_redis_t *r, int node, const lockkeys_t *lk)
{
    const char *argv[] = { "SCRIPT", "LOAD", status_lua };
    size_t lens[] = { 6, 4, sizeof status_lua - 1 };
    redisReply *rep = command(r, node, 3, argv, lens, lk->k[0], lk->len[0]);
    if (!rep)
        return -1;
    int ok = rep->type == REDIS_REPLY_STRING && rep->len == 40;
    if (ok)
        memcpy(r->sha, rep->str, 41);
    freeReplyObject(rep);
    if (!ok)
        set_err(r, node, "unexpected reply to SCRIPT LOAD");
    return ok ? 0 : -1;
}

/* The argv of one script call over a lock's keys. */
typedef struct scall {
    const char *argv[3 + DL_NKEYS + 4];
    size_t lens[3 + DL_NKEYS + 4];
} scall_t;

#define CHUNK 256             /* commands per pipelined batch */

/* The state of names[0..n) as one target sees it: node -1 the conn (each
 * lock routed to its server), or redlock server `node`.  0, or -1 with
 * r->err and st[] empty. */
static int fetch_on(cli_redis_t *r, int node, const lockkeys_t *lk, char **names,
                    const size_t *lens, size_t n, cli_lockstat_t *st)
{
    memset(st, 0, n * sizeof *st);
    if (!n)
        return 0;
    if (!r->conn) {
        if (!r->err[0])
            set_err(r, node, "not connected");
        return -1;
    }
    if (!r->sha[0] && load_status_script(r, node, &lk[0]))
        return -1;
    size_t chunk = n < CHUNK ? n : CHUNK;
    dl_cmd_t *cmds = calloc(chunk, sizeof *cmds), *redo = calloc(chunk, sizeof *redo);
    scall_t *sc = calloc(chunk, sizeof *sc);
    size_t *idx = calloc(chunk, sizeof *idx);
    int rc = 0;
    if (!cmds || !redo || !sc || !idx) {
        snprintf(r->err, sizeof r->err, "out of memory");
        rc = -1;
    }
    /* Pipelined in chunks, so that a long list costs a few round trips. */
    for (size_t at = 0; at < n && rc == 0; at += chunk) {
        size_t m = n - at < chunk ? n - at : chunk;
        for (size_t i = 0; i < m; i++) {
            const lockkeys_t *k = &lk[at + i];
            int argc = script_argv(sc[i].argv, sc[i].lens, "EVALSHA", r->sha, 40, k, 0, NULL);
            cmd_init(&cmds[i], argc, sc[i].argv, sc[i].lens, k->k[0], k->len[0]);
        }
        exec_on(r, node, cmds, (int)m);
        /* A server whose script cache lost it (or never had it: another
         * node of the cluster, another redlock server): send the body. */
        size_t nredo = 0;
        for (size_t i = 0; i < m; i++)
            if (!cmds[i].err && is_noscript(cmds[i].reply)) {
                freeReplyObject(cmds[i].reply);
                cmds[i].reply = NULL;
                const lockkeys_t *k = &lk[at + i];
                int argc = script_argv(sc[i].argv, sc[i].lens, "EVAL", status_lua,
                                       sizeof status_lua - 1, k, 0, NULL);
                cmd_init(&redo[nredo], argc, sc[i].argv, sc[i].lens, k->k[0], k->len[0]);
                idx[nredo++] = i;
            }
        if (nredo) {
            exec_on(r, node, redo, (int)nredo);
            for (size_t j = 0; j < nredo; j++)
                cmds[idx[j]] = redo[j];
        }
        for (size_t i = 0; i < m; i++) {
            redisReply *rep = cmds[i].reply;
            if (rc == 0) {
                if (cmds[i].err || !rep) {
                    if (cmds[i].err)
                        snprintf(r->err, sizeof r->err, "%s", cmds[i].errmsg);
                    else
                        set_err(r, node, "no reply");
                    rc = -1;
                } else if (rep->type == REDIS_REPLY_ERROR) {
                    set_err(r, node, rep->str);
                    rc = -1;
                } else if (decode(rep, names[at + i], lens[at + i], &st[at + i])) {
                    set_err(r, node, "unexpected reply to the status script");
                    rc = -1;
                }
            }
            if (rep)
                freeReplyObject(rep);
        }
    }
    free(cmds);
    free(redo);
    free(sc);
    free(idx);
    if (rc)
        for (size_t i = 0; i < n; i++)
            cli_lockstat_free(&st[i]);
    return rc;
}

/* --- redlock: one view out of the servers' */

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
    size_t nodes = (size_t)r->nodes, need = (size_t)majority(r), ncand = 0, nwait = 0;
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

/* redlock://: each server's view, merged; a majority must answer. */
static int fetch_quorum(cli_redis_t *r, const lockkeys_t *lk, char **names, const size_t *lens,
                        size_t n, cli_lockstat_t *st)
{
    size_t nodes = (size_t)r->nodes;
    int need = majority(r), got = 0, rc = 0;
    memset(st, 0, n * sizeof *st);
    cli_lockstat_t *per = calloc(nodes * (n ? n : 1), sizeof *per);
    char(*errs)[200] = calloc(nodes, sizeof *errs);
    int *answered = calloc(nodes, sizeof *answered);
    char last[512] = "no reply";
    if (!per || !errs || !answered) {
        free(per), free(errs), free(answered);
        snprintf(r->err, sizeof r->err, "out of memory");
        return -1;
    }
    /* The views are per lock: server i's view of lock j is per[i * n + j]. */
    for (size_t i = 0; i < nodes; i++) {
        if (fetch_on(r, (int)i, lk, names, lens, n, per + i * n) == 0) {
            answered[i] = 1;
            got++;
        } else {
            snprintf(errs[i], sizeof errs[i], "%.199s", r->err);
            snprintf(last, sizeof last, "%s", r->err);
        }
    }
    if (got < need) {
        snprintf(r->err, sizeof r->err, "redlock: %d of %zu servers answered (need %d): %s", got,
                 nodes, need, last);
        rc = -1;
    }
    for (size_t j = 0; j < n && rc == 0; j++)
        if (merge(r, per + j, n, answered, errs, names[j], lens[j], &st[j])) {
            snprintf(r->err, sizeof r->err, "out of memory");
            rc = -1;
        }
    for (size_t k = 0; k < nodes * n; k++)
        cli_lockstat_free(&per[k]);
    free(per), free(errs), free(answered);
    if (rc)
        for (size_t j = 0; j < n; j++)
            cli_lockstat_free(&st[j]);
    return rc;
}

int cli_lockstat_fetch_many(cli_redis_t *r, char **names, const size_t *lens, size_t n,
                            cli_lockstat_t *st)
{
    memset(st, 0, n * sizeof *st);
    if (!n)
        return 0;
    lockkeys_t *lk = calloc(n, sizeof *lk);
    if (!lk) {
        snprintf(r->err, sizeof r->err, "out of memory");
        return -1;
    }
    int rc = 0;
    size_t built = 0;
    for (; built < n; built++)
        if (keys_make(&lk[built], r->cfg.prefix, names[built], lens[built])) {
            snprintf(r->err, sizeof r->err, "out of memory");
            rc = -1;
            break;
        }
    if (rc == 0)
        rc = is_redlock(r) ? fetch_quorum(r, lk, names, lens, n, st)
                           : fetch_on(r, -1, lk, names, lens, n, st);
    for (size_t i = 0; i < built; i++)
        free(lk[i].buf);
    free(lk);
    return rc;
}

int cli_lockstat_fetch(cli_redis_t *r, const char *name, size_t len, cli_lockstat_t *st)
{
    char *names[1] = { (char *)name };
    size_t lens[1] = { len };
    return cli_lockstat_fetch_many(r, names, lens, 1, st);
}

/* ---------------------------------------------------------------- list */

/* The lock name of one of its keys (shim/keys.h).  *meta: the key is the
 * meta hash (which outlives the holds by 7 days). */
static int name_of_key(const char *prefix, size_t plen, const char *key, size_t klen,
                       const char **name, size_t *nlen, int *meta)
{
    int which;
    if (dl_key_name(prefix, plen, key, klen, name, nlen, &which))
        return -1;
    *meta = which == DL_KEYS_N - 1;
    return 0;
}

typedef struct namelist {
    char **v;
    size_t *len;
    size_t n, cap;
} namelist_t;

static int names_add(namelist_t *l, const char *s, size_t n)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 64;
        char **v = realloc(l->v, cap * sizeof *v);
        if (!v)
            return -1;
        l->v = v;
        size_t *len = realloc(l->len, cap * sizeof *len);
        if (!len)
            return -1;
        l->len = len;
        l->cap = cap;
    }
    char *c = malloc(n + 1);
    if (!c)
        return -1;
    memcpy(c, s, n);
    c[n] = 0;
    l->v[l->n] = c;
    l->len[l->n++] = n;
    return 0;
}

static int cmp_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

void cli_names_free(char **names, size_t *lens, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    free(lens);
}

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
    const char *prefix;
    size_t plen;
    const char *match;        /* MATCH <prefix>{* */
    size_t mlen;
    const char *pattern;      /* the user's glob, or NULL */
    int with_free;
    namelist_t *l;
} scan_t;

/* Walks one server's keys into s->l: redlock server `node`, the conn's
 * server (node -1, ctx NULL), or ctx, a connection of its own to the
 * cluster master `name`.  0 or -1. */
static int scan_server(cli_redis_t *r, const scan_t *s, int node, redisContext *ctx,
                       const char *name)
{
    char cursor[32] = "0";
    int rc = 0;
    do {
        const char *argv[] = { "SCAN", cursor, "MATCH", s->match, "COUNT", "1000" };
        size_t alens[] = { 4, strlen(cursor), 5, s->mlen, 5, 4 };
        redisReply *rep = ctx ? raw_command(r, ctx, name, 6, argv, alens)
                              : command(r, node, 6, argv, alens, NULL, 0);
        if (!rep)
            return -1;
        const redisReply *keys = el_arr(rep, 1);
        size_t clen;
        const char *c = el_str(rep, 0, &clen);
        if (!keys || !clen || clen >= sizeof cursor) {
            freeReplyObject(rep);
            if (ctx)
                snprintf(r->err, sizeof r->err, "redis %.200s: unexpected reply to SCAN", name);
            else
                set_err(r, node, "unexpected reply to SCAN");
            return -1;
        }
        memcpy(cursor, c, clen);
        cursor[clen] = 0;
        for (size_t i = 0; i < keys->elements && rc == 0; i++) {
            const redisReply *k = keys->element[i];
            const char *nm;
            size_t nlen;
            int meta;
            if (k->type != REDIS_REPLY_STRING ||
                name_of_key(s->prefix, s->plen, k->str, k->len, &nm, &nlen, &meta) ||
                (meta && !s->with_free) || memchr(nm, 0, nlen))
                continue;
            char *copy = strndup(nm, nlen);
            if (!copy) {
                snprintf(r->err, sizeof r->err, "out of memory");
                rc = -1;
                break;
            }
            int want = !s->pattern || fnmatch(s->pattern, copy, 0) == 0;
            free(copy);
            if (want && names_add(s->l, nm, nlen)) {
                snprintf(r->err, sizeof r->err, "out of memory");
                rc = -1;
            }
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
    redisReply *rep = command(r, -1, 2, argv, lens, NULL, 0);
    if (!rep)
        return -1;
    if (rep->type != REDIS_REPLY_ARRAY) {
        freeReplyObject(rep);
        set_err(r, -1, "unexpected reply to CLUSTER SLOTS");
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
        set_err(r, -1, "CLUSTER SLOTS: no master serves a slot");
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
            if (scan_server(r, s, -1, ctx, name))
                ok = 0;
            redisFree(ctx);
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
    int got = 0, need = majority(r);
    char last[512] = "no reply";
    for (int i = 0; i < r->nodes; i++) {
        if (scan_server(r, s, i, NULL, NULL) == 0)
            got++;
        else
            snprintf(last, sizeof last, "%s", r->err);
    }
    if (got >= need)
        return 0;
    snprintf(r->err, sizeof r->err, "redlock: %d of %d servers answered (need %d): %s", got,
             r->nodes, need, last);
    return -1;
}

int cli_scan_names(cli_redis_t *r, const char *pattern, int with_free,
                   char ***names, size_t **lens, size_t *n)
{
    const char *prefix = r->cfg.prefix;
    size_t plen = strlen(prefix);
    /* MATCH <prefix>{* with the prefix's glob characters escaped; the
     * pattern itself is applied here (fnmatch), since a name may contain
     * '}' and Redis globs differ from shell globs in small ways. */
    char *match = malloc(2 * plen + 3);
    namelist_t l = { NULL, NULL, 0, 0 };
    if (!match) {
        snprintf(r->err, sizeof r->err, "out of memory");
        return -1;
    }
    size_t m = 0;
    for (size_t i = 0; i < plen; i++) {
        if (strchr("*?[]\\", prefix[i]))
            match[m++] = '\\';
        match[m++] = prefix[i];
    }
    match[m++] = '{';
    match[m++] = '*';
    match[m] = 0;

    scan_t s = { prefix, plen, match, m, pattern, with_free, &l };
    int rc;
    if (!r->conn) {
        snprintf(r->err, sizeof r->err, "not connected");
        rc = -1;
    } else if (r->cfg.scheme == DL_SCHEME_CLUSTER) {
        rc = scan_cluster(r, &s);
    } else if (is_redlock(r)) {
        rc = scan_quorum(r, &s);
    } else {
        rc = scan_server(r, &s, -1, NULL, NULL);
    }
    free(match);
    if (rc) {
        cli_names_free(l.v, l.len, l.n);
        return -1;
    }

    /* Sort and drop the duplicates (each lock has several keys, on several
     * servers with redlock; SCAN may also return a key twice). */
    if (l.n) {
        qsort(l.v, l.n, sizeof *l.v, cmp_name);
        size_t out = 0;
        for (size_t i = 0; i < l.n; i++) {
            if (out && strcmp(l.v[out - 1], l.v[i]) == 0) {
                free(l.v[i]);
                continue;
            }
            l.v[out] = l.v[i];
            l.len[out++] = strlen(l.v[i]);
        }
        l.n = out;
    }
    *names = l.v;
    *lens = l.len;
    *n = l.n;
    return 0;
}

/* ---------------------------------------------------------------- break, withdraw */

/* Runs one of the library's scripts (lua/) on one target (node -1: the
 * lock's server through the conn; else redlock server `node`): EVALSHA,
 * and the body if that server's cache lacks it.  The reply (never an error
 * reply), or NULL with r->err. */
static redisReply *run_lib_script(cli_redis_t *r, int node, int script, const lockkeys_t *lk,
                                  int nargs, const char **args)
{
    const dl_script_t *sc = &dl_scripts[script];
    scall_t a;
    int argc = script_argv(a.argv, a.lens, "EVALSHA", sc->sha, 40, lk, nargs, args);
    dl_cmd_t c;
    cmd_init(&c, argc, a.argv, a.lens, lk->k[0], lk->len[0]);
    exec_on(r, node, &c, 1);
    if (!c.err && is_noscript(c.reply)) {
        freeReplyObject(c.reply);
        argc = script_argv(a.argv, a.lens, "EVAL", sc->body, sc->len, lk, nargs, args);
        cmd_init(&c, argc, a.argv, a.lens, lk->k[0], lk->len[0]);
        exec_on(r, node, &c, 1);
    }
    return reply_of(r, node, &c);
}

/* The targets a lock's script runs on: the conn (-1), or each redlock
 * server. */
static int first_target(const cli_redis_t *r)
{
    return is_redlock(r) ? 0 : -1;
}

static int last_target(const cli_redis_t *r)
{
    return is_redlock(r) ? r->nodes - 1 : -1;
}

int cli_break_lock(cli_redis_t *r, const char *name, size_t len, long long *removed)
{
    if (!r->conn) {
        snprintf(r->err, sizeof r->err, "not connected");
        return -1;
    }
    lockkeys_t lk;
    if (keys_make(&lk, r->cfg.prefix, name, len)) {
        snprintf(r->err, sizeof r->err, "out of memory");
        return -1;
    }
    char chan[300], last[512] = "no reply";
    snprintf(chan, sizeof chan, "%sn:", r->cfg.prefix);
    const char *args[] = { chan };
    int got = 0, targets = 0;
    *removed = 0;
    for (int t = first_target(r); t <= last_target(r); t++) {
        targets++;
        redisReply *rep = run_lib_script(r, t, DL_SCRIPT_BREAK, &lk, 1, args);
        if (rep && rep->type != REDIS_REPLY_INTEGER) {
            set_err(r, t, "unexpected reply to the break script");
            freeReplyObject(rep);
            rep = NULL;
        }
        if (!rep) {
            snprintf(last, sizeof last, "%s", r->err);
            continue;
        }
        got++;
        /* Each server holds the same holds: count them once. */
        if (rep->integer > *removed)
            *removed = rep->integer;
        freeReplyObject(rep);
    }
    free(lk.buf);
    int need = is_redlock(r) ? majority(r) : 1;
    if (got >= need)
        return 0;
    if (is_redlock(r))
        snprintf(r->err, sizeof r->err, "redlock: %d of %d servers answered (need %d): %s", got,
                 targets, need, last);
    return -1;
}

int cli_withdraw(cli_redis_t *r, const char *name, size_t len, const char *token, char mode)
{
    if (!r->conn) {
        snprintf(r->err, sizeof r->err, "not connected");
        return -1;
    }
    lockkeys_t lk;
    if (keys_make(&lk, r->cfg.prefix, name, len)) {
        snprintf(r->err, sizeof r->err, "out of memory");
        return -1;
    }
    char chan[300], m[2] = { mode, 0 };
    snprintf(chan, sizeof chan, "%sn:", r->cfg.prefix);
    /* Every registration of the process: it is ending (a registration id
     * above any the process can have made). */
    const char *args[] = { chan, token, m, "99999999999999999999" };
    int failed = 0;
    /* With redlock nobody queues, but the lock call may have been granted
     * on some servers at that instant: give those back. */
    for (int t = first_target(r); t <= last_target(r); t++) {
        redisReply *rep = run_lib_script(r, t, DL_SCRIPT_CANCEL, &lk, 4, args);
        if (!rep) {
            failed = 1;
            continue;
        }
        /* {1, ...}: granted to us meanwhile; hand it on rather than let it
         * lapse (which would cost the others a claim window and give the
         * next holder EOWNERDEAD). */
        int granted = rep->type == REDIS_REPLY_ARRAY && rep->elements >= 2 &&
                      rep->element[0]->type == REDIS_REPLY_INTEGER &&
                      rep->element[0]->integer == 1 &&
                      rep->element[1]->type == REDIS_REPLY_INTEGER;
        /* the release names the hold by its fence, which that server gave */
        char fence[24];
        if (granted)
            snprintf(fence, sizeof fence, "%lld", rep->element[1]->integer);
        freeReplyObject(rep);
        if (!granted)
            continue;
        const char *rargs[] = { chan, token, m, fence };
        rep = run_lib_script(r, t, DL_SCRIPT_RELEASE, &lk, 4, rargs);
        if (rep)
            freeReplyObject(rep);
        else
            failed = 1;
    }
    free(lk.buf);
    return failed ? -1 : 0;
}
