/* inspect.c - a lock's state, read from its Redis keys (docs/PROTOCOL.md).
 *
 * The state of one lock is read by one read-only script, so it is a
 * consistent snapshot in Redis's own clock: the holders' `since` and lease
 * deadlines are Redis times, and comparing them with the client's clock
 * would show the clock skew instead of how long a lock has been held.  The
 * script also decodes the msgpack records of readers and waiters, so this
 * side only ever sees plain strings.
 */
#include <errno.h>
#include <fnmatch.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "conn.h"
#include "distlock.h"
#include "dl.h"
#include "inspect.h"
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

static const char *const key_suffix[DL_NKEYS] = { "", ":r", ":ri", ":q", ":w", ":m" };

/* ---------------------------------------------------------------- connection */

static void set_err(cli_redis_t *r, const char *what)
{
    char ep[300];
    dl_endpoint_name(&r->cfg, 0, ep, sizeof ep);
    snprintf(r->err, sizeof r->err, "redis %.200s: %.280s", ep, what);
}

int cli_redis_open(cli_redis_t *r)
{
    memset(r, 0, sizeof *r);
    if (dl_config_load(&r->cfg)) {
        snprintf(r->err, sizeof r->err, "%s", dist_lasterror());
        return CLI_EX_CONFIG;
    }
    sigset_t old;
    int pending;
    dl_sigpipe_block(&old, &pending);
    r->ctx = dl_connect(&r->cfg, 0, r->cfg.io_timeout_ms, r->err, sizeof r->err);
    dl_sigpipe_restore(&old, pending);
    return r->ctx ? 0 : CLI_EX_UNAVAILABLE;
}

void cli_redis_close(cli_redis_t *r)
{
    if (r->ctx)
        redisFree(r->ctx);
    r->ctx = NULL;
}

/* One command; the reply (never an error reply), or NULL with r->err set.
 * A connection that failed is closed (r->ctx NULL). */
static redisReply *command(cli_redis_t *r, int argc, const char **argv, const size_t *lens)
{
    if (!r->ctx) {
        if (!r->err[0])
            set_err(r, "not connected");
        return NULL;
    }
    sigset_t old;
    int pending;
    dl_sigpipe_block(&old, &pending);
    redisReply *rep = redisCommandArgv(r->ctx, argc, argv, lens);
    dl_sigpipe_restore(&old, pending);
    if (!rep) {
        set_err(r, r->ctx->errstr[0] ? r->ctx->errstr : "connection lost");
        cli_redis_close(r);
        return NULL;
    }
    if (rep->type == REDIS_REPLY_ERROR) {
        set_err(r, rep->str);
        freeReplyObject(rep);
        return NULL;
    }
    return rep;
}

/* ---------------------------------------------------------------- the keys */

typedef struct lockkeys {
    char *buf;
    const char *k[DL_NKEYS];
    size_t len[DL_NKEYS];
} lockkeys_t;

/* <prefix>{<name>}<suffix>, as shim/registry.c builds them. */
static int keys_make(lockkeys_t *lk, const char *prefix, const char *name, size_t n)
{
    size_t plen = strlen(prefix), total = 0;
    for (int i = 0; i < DL_NKEYS; i++)
        total += plen + n + 2 + strlen(key_suffix[i]) + 1;
    if (!(lk->buf = malloc(total)))
        return -1;
    char *p = lk->buf;
    for (int i = 0; i < DL_NKEYS; i++) {
        size_t slen = strlen(key_suffix[i]);
        lk->k[i] = p;
        memcpy(p, prefix, plen);
        p[plen] = '{';
        memcpy(p + plen + 1, name, n);
        p[plen + 1 + n] = '}';
        memcpy(p + plen + 2 + n, key_suffix[i], slen + 1);
        lk->len[i] = plen + 2 + n + slen;
        p += lk->len[i] + 1;
    }
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
static void parse_info(const char *s, size_t n, char mode, cli_who_t *w)
{
    memset(w, 0, sizeof *w);
    w->mode = mode;
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
        s = el_str(w, 1, &n);
        parse_info(s, n, 'w', &h->who);
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
        s = el_str(r, 1, &n);
        parse_info(s, n, 'r', &h->who);
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
        s = el_str(r, 2, &n);
        parse_info(s, n, el_str(r, 1, NULL)[0] == 'r' ? 'r' : 'w', &st->waiters[st->nwaiters++]);
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
            parse_info(s, n, 'w', &st->lapsed);
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
    memset(st, 0, sizeof *st);
}

/* ---------------------------------------------------------------- status */

static int load_status_script(cli_redis_t *r)
{
    const char *argv[] = { "SCRIPT", "LOAD", status_lua };
    size_t lens[] = { 6, 4, sizeof status_lua - 1 };
    redisReply *rep = command(r, 3, argv, lens);
    if (!rep)
        return -1;
    int ok = rep->type == REDIS_REPLY_STRING && rep->len == 40;
    if (ok)
        memcpy(r->sha, rep->str, 41);
    freeReplyObject(rep);
    if (!ok)
        set_err(r, "unexpected reply to SCRIPT LOAD");
    return ok ? 0 : -1;
}

/* EVAL with the body: for a script the cache lost (SCRIPT FLUSH, restart). */
static int fetch_by_body(cli_redis_t *r, const lockkeys_t *lk, const char *name, size_t len,
                         cli_lockstat_t *st)
{
    const char *argv[3 + DL_NKEYS];
    size_t lens[3 + DL_NKEYS];
    int argc = script_argv(argv, lens, "EVAL", status_lua, sizeof status_lua - 1, lk, 0, NULL);
    redisReply *rep = command(r, argc, argv, lens);
    if (!rep)
        return -1;
    int rc = decode(rep, name, len, st);
    freeReplyObject(rep);
    if (rc)
        set_err(r, "unexpected reply to the status script");
    return rc;
}

int cli_lockstat_fetch_many(cli_redis_t *r, char **names, const size_t *lens, size_t n,
                            cli_lockstat_t *st)
{
    memset(st, 0, n * sizeof *st);
    if (!r->ctx) {
        if (!r->err[0])
            set_err(r, "not connected");
        return -1;
    }
    if (!r->sha[0] && load_status_script(r))
        return -1;
    lockkeys_t *lk = calloc(n ? n : 1, sizeof *lk);
    if (!lk) {
        set_err(r, "out of memory");
        return -1;
    }
    int rc = 0;
    size_t built = 0;
    for (; built < n; built++)
        if (keys_make(&lk[built], r->cfg.prefix, names[built], lens[built])) {
            set_err(r, "out of memory");
            rc = -1;
            goto out;
        }

    /* Pipelined in chunks, so that a long list costs a few round trips. */
    sigset_t old;
    int pending;
    for (size_t at = 0; at < n && rc == 0; at += 256) {
        size_t end = at + 256 < n ? at + 256 : n;
        dl_sigpipe_block(&old, &pending);
        for (size_t i = at; i < end; i++) {
            const char *argv[3 + DL_NKEYS];
            size_t alens[3 + DL_NKEYS];
            int argc = script_argv(argv, alens, "EVALSHA", r->sha, 40, &lk[i], 0, NULL);
            redisAppendCommandArgv(r->ctx, argc, argv, alens);
        }
        redisReply **reps = calloc(end - at, sizeof *reps);
        for (size_t i = at; i < end && reps; i++) {
            void *v = NULL;
            if (redisGetReply(r->ctx, &v) != REDIS_OK) {
                set_err(r, r->ctx->errstr[0] ? r->ctx->errstr : "connection lost");
                rc = -1;
                break;
            }
            reps[i - at] = v;
        }
        dl_sigpipe_restore(&old, pending);
        if (!reps) {
            set_err(r, "out of memory");
            rc = -1;
        }
        if (rc)
            cli_redis_close(r);
        for (size_t i = at; i < end && reps; i++) {
            redisReply *rep = reps[i - at];
            if (rc == 0 && rep && rep->type == REDIS_REPLY_ERROR &&
                strncmp(rep->str, "NOSCRIPT", 8) == 0) {
                if (fetch_by_body(r, &lk[i], names[i], lens[i], &st[i]))
                    rc = -1;
            } else if (rc == 0 && rep && rep->type == REDIS_REPLY_ERROR) {
                set_err(r, rep->str);
                rc = -1;
            } else if (rc == 0 && decode(rep, names[i], lens[i], &st[i])) {
                set_err(r, "unexpected reply to the status script");
                rc = -1;
            }
            if (rep)
                freeReplyObject(rep);
        }
        free(reps);
    }
out:
    for (size_t i = 0; i < built; i++)
        free(lk[i].buf);
    free(lk);
    if (rc)
        for (size_t i = 0; i < n; i++)
            cli_lockstat_free(&st[i]);
    return rc;
}

int cli_lockstat_fetch(cli_redis_t *r, const char *name, size_t len, cli_lockstat_t *st)
{
    char *names[1] = { (char *)name };
    size_t lens[1] = { len };
    return cli_lockstat_fetch_many(r, names, lens, 1, st);
}

/* ---------------------------------------------------------------- list */

/* The lock name of one of its keys: <prefix>{NAME} or <prefix>{NAME}<suffix>.
 * Names are binary-safe and may hold '}' themselves, so the key is read from
 * both ends: the suffix is fixed, and whatever lies between the first '{' and
 * the '}' before it is the name.  *meta: the key is the meta hash (which
 * outlives the holds by 7 days). */
static int name_of_key(const char *prefix, size_t plen, const char *key, size_t klen,
                       const char **name, size_t *nlen, int *meta)
{
    if (klen < plen + 2 || memcmp(key, prefix, plen) != 0 || key[plen] != '{')
        return -1;
    const char *rest = key + plen + 1;
    size_t rlen = klen - plen - 1;
    for (int i = 0; i < DL_NKEYS; i++) {
        size_t slen = strlen(key_suffix[i]);
        if (rlen < slen + 1 || rest[rlen - slen - 1] != '}' ||
            memcmp(rest + rlen - slen, key_suffix[i], slen) != 0)
            continue;
        *name = rest;
        *nlen = rlen - slen - 1;
        *meta = i == DL_NKEYS - 1;
        return *nlen ? 0 : -1;
    }
    return -1;
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
        set_err(r, "out of memory");
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

    char cursor[32] = "0";
    int rc = 0;
    do {
        const char *argv[] = { "SCAN", cursor, "MATCH", match, "COUNT", "1000" };
        size_t alens[] = { 4, strlen(cursor), 5, m, 5, 4 };
        redisReply *rep = command(r, 6, argv, alens);
        if (!rep) {
            rc = -1;
            break;
        }
        const redisReply *keys = el_arr(rep, 1);
        size_t clen;
        const char *c = el_str(rep, 0, &clen);
        if (!keys || !clen || clen >= sizeof cursor) {
            freeReplyObject(rep);
            set_err(r, "unexpected reply to SCAN");
            rc = -1;
            break;
        }
        memcpy(cursor, c, clen);
        cursor[clen] = 0;
        for (size_t i = 0; i < keys->elements && rc == 0; i++) {
            const redisReply *k = keys->element[i];
            const char *name;
            size_t nlen;
            int meta;
            if (k->type != REDIS_REPLY_STRING ||
                name_of_key(prefix, plen, k->str, k->len, &name, &nlen, &meta) ||
                (meta && !with_free) || memchr(name, 0, nlen))
                continue;
            char *copy = strndup(name, nlen);
            if (!copy) {
                set_err(r, "out of memory");
                rc = -1;
                break;
            }
            int want = !pattern || fnmatch(pattern, copy, 0) == 0;
            free(copy);
            if (want && names_add(&l, name, nlen)) {
                set_err(r, "out of memory");
                rc = -1;
            }
        }
        freeReplyObject(rep);
    } while (rc == 0 && strcmp(cursor, "0") != 0);
    free(match);
    if (rc) {
        cli_names_free(l.v, l.len, l.n);
        return -1;
    }

    /* Sort and drop the duplicates (each lock has several keys; SCAN may
     * also return a key twice). */
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

/* Runs one of the library's scripts (lua/) by its body: EVAL caches it too. */
static redisReply *run_lib_script(cli_redis_t *r, int script, const char *name, size_t len,
                                  int nargs, const char **args)
{
    lockkeys_t lk;
    if (keys_make(&lk, r->cfg.prefix, name, len)) {
        set_err(r, "out of memory");
        return NULL;
    }
    const char *argv[3 + DL_NKEYS + 4];
    size_t lens[3 + DL_NKEYS + 4];
    const dl_script_t *sc = &dl_scripts[script];
    int argc = script_argv(argv, lens, "EVAL", sc->body, sc->len, &lk, nargs, args);
    redisReply *rep = command(r, argc, argv, lens);
    free(lk.buf);
    return rep;
}

int cli_break_lock(cli_redis_t *r, const char *name, size_t len, long long *removed)
{
    char chan[300];
    snprintf(chan, sizeof chan, "%sn:", r->cfg.prefix);
    const char *args[] = { chan };
    redisReply *rep = run_lib_script(r, DL_SCRIPT_BREAK, name, len, 1, args);
    if (!rep)
        return -1;
    int ok = rep->type == REDIS_REPLY_INTEGER;
    if (ok)
        *removed = rep->integer;
    else
        set_err(r, "unexpected reply to the break script");
    freeReplyObject(rep);
    return ok ? 0 : -1;
}

int cli_withdraw(cli_redis_t *r, const char *name, size_t len, const char *token, char mode)
{
    char chan[300], m[2] = { mode, 0 };
    snprintf(chan, sizeof chan, "%sn:", r->cfg.prefix);
    const char *args[] = { chan, token, m };
    redisReply *rep = run_lib_script(r, DL_SCRIPT_CANCEL, name, len, 3, args);
    if (!rep)
        return -1;
    /* {1, ...}: granted to us meanwhile; hand it on rather than let it
     * lapse (which would cost the others a claim window and give the next
     * holder EOWNERDEAD). */
    int granted = rep->type == REDIS_REPLY_ARRAY && rep->elements >= 1 &&
                  rep->element[0]->type == REDIS_REPLY_INTEGER && rep->element[0]->integer == 1;
    freeReplyObject(rep);
    if (!granted)
        return 0;
    rep = run_lib_script(r, DL_SCRIPT_RELEASE, name, len, 3, args);
    if (!rep)
        return -1;
    freeReplyObject(rep);
    return 0;
}
