/* SPDX-License-Identifier: BSD-3-Clause */
/* pf_redis.c - the fuzzer's connection to the server: script calls with
 * the library's arguments, pushes read through a pattern subscription, and
 * the snapshot the invariants are judged on. */
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "call_acquire.h"
#include "call_acquire_all.h"
#include "call_break.h"
#include "call_cancel.h"
#include "call_mark.h"
#include "call_release.h"
#include "call_renew.h"
#include "call_withdraw.h"
#include "call_withdraw_all.h"
#include "channel.h"
#include "keys.h"
#include "pf_redis.h"
#include "script.h"

/* Everything in one atomic read, numbers as strings (exact above 2^53 is
 * not needed: fences are µs, scores ms).  Layout: now, owner, fence, rid,
 * pttl of the 5 keys but meta, meta fence, readers (count, then token,
 * score, fence), registrations (count, then token, mode, deadline, regid,
 * queued), queue length, the writer mark (ww, wwx). */
static const char SNAPSHOT[] =
    "local t = redis.call('TIME')\n"
    "local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"
    "local function f(n) return string.format('%.0f', tonumber(n) or -1) end\n"
    "local out = {f(now)}\n"
    "local lk = redis.call('HMGET', KEYS[1], 'owner', 'fence', 'rid')\n"
    "out[#out+1] = lk[1] or ''\n"
    "out[#out+1] = lk[2] or ''\n"
    "out[#out+1] = lk[3] or ''\n"
    "for i = 1, 5 do out[#out+1] = f(redis.call('PTTL', KEYS[i])) end\n"
    "out[#out+1] = redis.call('HGET', KEYS[6], 'fence') or ''\n"
    "local rd = redis.call('ZRANGE', KEYS[2], 0, -1, 'WITHSCORES')\n"
    "out[#out+1] = f(#rd / 2)\n"
    "for i = 1, #rd, 2 do\n"
    "  local fence = ''\n"
    "  local raw = redis.call('HGET', KEYS[3], rd[i])\n"
    "  if raw then fence = f(cmsgpack.unpack(raw)[3]) end\n"
    "  out[#out+1] = rd[i]; out[#out+1] = f(rd[i+1]); out[#out+1] = fence\n"
    "end\n"
    "local w = redis.call('HGETALL', KEYS[5])\n"
    "out[#out+1] = f(#w / 2)\n"
    "for i = 1, #w, 2 do\n"
    "  local v = cmsgpack.unpack(w[i+1])\n"
    "  out[#out+1] = w[i]; out[#out+1] = tostring(v[1]); out[#out+1] = f(v[3])\n"
    "  out[#out+1] = tostring(v[4])\n"
    "  out[#out+1] = redis.call('ZSCORE', KEYS[4], w[i]) and '1' or '0'\n"
    "end\n"
    "out[#out+1] = f(redis.call('ZCARD', KEYS[4]))\n"
    "local m = redis.call('HMGET', KEYS[6], 'ww', 'wwx')\n"
    "out[#out+1] = m[1] or ''\n"
    "out[#out+1] = f(m[2])\n"
    "return out\n";

void pf_token(int proc, char *buf, size_t size)
{
    snprintf(buf, size, "t%d", proc);
}

int pf_token_proc(const char *s, size_t len)
{
    if (len < 2 || len > 3 || s[0] != 't')
        return -2;
    int v = 0;
    for (size_t i = 1; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -2;
        v = v * 10 + (s[i] - '0');
    }
    return v < PF_MAX_PROCS ? v : -2;
}

static redisContext *connect_to(const char *host, int port, char *err, size_t errlen)
{
    struct timeval tv = { 5, 0 };
    redisContext *c = redisConnectWithTimeout(host, port, tv);
    if (!c || c->err) {
        snprintf(err, errlen, "connect %s:%d: %s", host, port, c ? c->errstr : "out of memory");
        if (c)
            redisFree(c);
        return NULL;
    }
    redisSetTimeout(c, tv);
    return c;
}

/* By slot: SSUBSCRIBE to every simulated process's channel (one command,
 * one answer per channel). */
static int subscribe_by_slot(pf_conn_t *k)
{
    for (int i = 0; i < PF_MAX_PROCS; i++) {
        char token[16], chan[128];
        pf_token(i, token, sizeof token);
        snprintf(chan, sizeof chan, "%s%s", k->chan, token);
        redisAppendCommand(k->sub, "SSUBSCRIBE %s", chan);
    }
    for (int i = 0; i < PF_MAX_PROCS; i++) {
        redisReply *r = NULL;
        if (redisGetReply(k->sub, (void **)&r) != REDIS_OK || !r || r->type != REDIS_REPLY_ARRAY) {
            snprintf(k->err, sizeof k->err, "ssubscribe: %s",
                     r && r->str ? r->str : k->sub->errstr);
            if (r)
                freeReplyObject(r);
            return -1;
        }
        freeReplyObject(r);
    }
    return 0;
}

int pf_conn_open(pf_conn_t *k, const char *host, int port, const char *prefix, int by_slot)
{
    static const char *const suffix[6] = { "", ":r", ":ri", ":q", ":w", ":m" };
    memset(k, 0, sizeof *k);
    snprintf(k->prefix, sizeof k->prefix, "%s", prefix);
    for (int i = 0; i < 6; i++) {
        k->keylen[i] = (size_t)snprintf(k->keys[i], sizeof k->keys[i], "%s{L}%s", prefix, suffix[i]);
        k->ckeylen[i] = (size_t)snprintf(k->ckeys[i], sizeof k->ckeys[i], "%s{L}c%s", prefix,
                                         suffix[i]);
    }
    /* The library's channel prefix: classic, or the slot's, as on
     * redis-cluster:// (shim/conn/channel.h; a server not in cluster mode
     * runs SPUBLISH too). */
    k->by_slot = by_slot;
    dl_chan_prefix(prefix, by_slot, k->keys[0], k->keylen[0], k->chan, sizeof k->chan);
    if (!(k->c = connect_to(host, port, k->err, sizeof k->err)) ||
        !(k->sub = connect_to(host, port, k->err, sizeof k->err))) {
        pf_conn_close(k);
        return -1;
    }
    if (by_slot) {
        if (subscribe_by_slot(k)) {
            pf_conn_close(k);
            return -1;
        }
        return 0;
    }
    redisReply *r = redisCommand(k->sub, "PSUBSCRIBE %s*", k->chan);
    if (!r || r->type != REDIS_REPLY_ARRAY) {
        snprintf(k->err, sizeof k->err, "psubscribe: %s", r ? r->str ? r->str : "?" : k->sub->errstr);
        if (r)
            freeReplyObject(r);
        pf_conn_close(k);
        return -1;
    }
    freeReplyObject(r);
    return 0;
}

void pf_conn_close(pf_conn_t *k)
{
    if (k->c)
        redisFree(k->c);
    if (k->sub)
        redisFree(k->sub);
    k->c = k->sub = NULL;
}

/* Declares the lock's six keys of c (argv[3..8], as the library's typed
 * call writes them) in `form`, one of the forms the library's topologies
 * send: 6 (one server, sentinel, redlock), 7 (redis-cluster://: the six
 * and a guard key that never exists, keys.h DL_KEY_GUARD) or 1
 * (redis-cluster:// under ASK: the lock's key only; the scripts derive
 * the others).  shim/conn/cluster.c reshapes the library's calls so. */
static void declare_keys(dl_call_t *c, int form, const char *guard, size_t guardlen)
{
    if (form == 6 || c->argvlen[2] != 1 || c->argv[2][0] != '6')
        return;
    size_t rest = (size_t)(c->argc - 9);       /* ARGV, after the six keys */
    if (form == 7) {
        memmove(&c->argv[10], &c->argv[9], rest * sizeof c->argv[0]);
        memmove(&c->argvlen[10], &c->argvlen[9], rest * sizeof c->argvlen[0]);
        c->argv[9] = guard;
        c->argvlen[9] = guardlen;
        c->argv[2] = "7";
        c->argc++;
    } else {
        memmove(&c->argv[4], &c->argv[9], rest * sizeof c->argv[0]);
        memmove(&c->argvlen[4], &c->argvlen[9], rest * sizeof c->argvlen[0]);
        c->argv[2] = "1";
        c->argc -= 5;
    }
}

/* Runs c as the library sends it, its keys declared in `form`: EVALSHA,
 * and EVAL (which caches it) when the server lacks the script; a script
 * sent with its text (mark) goes by EVAL at once. */
static redisReply *run(pf_conn_t *k, dl_call_t *c, int form, const char *key0)
{
    const char *name = dl_scripts[c->script].name;
    char guard[120];
    int gl = snprintf(guard, sizeof guard, "%s%s", key0, DL_KEY_GUARD);
    for (int pass = 0; pass < 2; pass++) {
        dl_script_argv(c, !pass);
        declare_keys(c, form, guard, (size_t)gl);
        redisReply *r = redisCommandArgv(k->c, c->argc, c->argv, c->argvlen);
        if (!r) {
            snprintf(k->err, sizeof k->err, "connection: %s", k->c->errstr);
            return NULL;
        }
        if (r->type == REDIS_REPLY_ERROR && !pass && strncmp(r->str, "NOSCRIPT", 8) == 0) {
            freeReplyObject(r);
            continue;
        }
        if (r->type == REDIS_REPLY_ERROR) {
            snprintf(k->err, sizeof k->err, "%s script error: %s", name, r->str);
            freeReplyObject(r);
            return NULL;
        }
        return r;
    }
    return NULL;
}

/* The request as the library's typed call (script/call_<name>.h), so that
 * its KEYS and ARGV are written as the library writes them: the fuzzer
 * chooses the arguments, never their order. */
/* Each key form in turn, drawn from the request itself: a seed (and a
 * shrunk sequence) replays with the same forms.  (A mark names two keys,
 * as mark.c posts it.) */
int pf_call_form(const pf_req_t *q)
{
    static const int forms[3] = { 6, 7, 1 };
    unsigned h = (unsigned)q->proc * 7u + (unsigned)q->script * 3u + (unsigned)q->regid +
                 (unsigned)q->fence;
    return q->script == PF_S_MARK ? 6 : forms[h % 3];
}

redisReply *pf_call(pf_conn_t *k, const pf_req_t *q)
{
    char token[16], info[48];
    pf_token(q->proc, token, sizeof token);
    int infolen = snprintf(info, sizeof info, "protofuzz\t%d\t%d", q->proc, q->proc);
    unsigned long lease = (unsigned long)q->lease;
    int all = q->script == PF_S_ACQUIRE_ALL || q->script == PF_S_WITHDRAW_ALL;
    int first = all ? (q->comp_first ? PF_L_COMP : PF_L_MAIN) : q->lock;
    const char *keys[6], *ckeys[6];
    for (int i = 0; i < 6; i++) {
        keys[i] = first == PF_L_COMP ? k->ckeys[i] : k->keys[i];
        ckeys[i] = first == PF_L_COMP ? k->keys[i] : k->ckeys[i];
    }
    const size_t *keylen = first == PF_L_COMP ? k->ckeylen : k->keylen;
    const size_t *ckeylen = first == PF_L_COMP ? k->keylen : k->ckeylen;
    dl_caller_t who = { keys, keylen, k->chan, strlen(k->chan), token };
    /* acquire_all, withdraw_all: both locks, the first one's keys declared */
    dl_all_lock_t both[2] = { { keys, keylen, lease }, { ckeys, ckeylen, lease } };
    char list[400];
    dl_all_item_t items[2];
    dl_call_t c;
    if (all && dl_acquire_all_list_size(both, 2) > sizeof list) {
        snprintf(k->err, sizeof k->err, "acquire_all: keys too long");
        return NULL;
    }
    switch (q->script) {
    case PF_S_ACQUIRE:     /* take.c take_ask */
        dl_call_acquire(&c, &who, &(dl_acquire_args_t){
            .mode = q->mode, .lease_ms = lease, .info = info, .infolen = (size_t)infolen,
            .enqueue = q->enqueue, .regid = q->regid, .waiter_ttl_ms = (unsigned long)q->wttl,
            .claim_ms = (unsigned long)q->claim, .redlock = q->redlock,
            .writer_mark_ms = (unsigned long)q->mark });
        break;
    case PF_S_RELEASE:     /* hold.c dl_hold_release: the hold's fence, and the
                              registration id it was taken or claimed with;
                              redlock (quorum.c): older traces go, the fence
                              is raised */
        dl_call_release(&c, &who, &(dl_release_args_t){
            .mode = q->mode, .fence = q->fence, .rid = q->regid, .redlock = q->redlock });
        break;
    case PF_S_RENEW:       /* watchdog.c renew_chunk; the fence: the hold renewed
                              (redlock: the caller's hold in that mode) */
        dl_call_renew(&c, &who, &(dl_renew_args_t){
            .mode = q->mode, .lease_ms = lease, .fence = q->fence, .redlock = q->redlock });
        break;
    case PF_S_CANCEL:      /* take.c take_give_up; the registration cancelled */
        dl_call_cancel(&c, &who, &(dl_cancel_args_t){
            .mode = q->mode, .regid = q->regid, .clear_mark = q->redlock });
        break;
    case PF_S_WITHDRAW:    /* cmdlink_io.c: the undo written behind an acquire */
        dl_call_withdraw(&c, &who, &(dl_withdraw_args_t){ .mode = q->mode, .regid = q->regid });
        break;
    case PF_S_BREAK:
        dl_call_break(&c, &who);
        break;
    case PF_S_MARK:        /* mark.c: a linger's mark, its TTL cut to wttl, its
                              number the request's */
        dl_call_mark(&c, &who, &(dl_mark_args_t){
            .fence = q->fence, .lingering = 1, .ms = (unsigned long)q->wttl, .seq = q->regid });
        break;
    case PF_S_ACQUIRE_ALL: /* take_all.c: the locks and one registration id */
        dl_call_acquire_all(&c, &who, &(dl_acquire_all_args_t){
            .n = 2, .locks = both, .list = list, .listlen = dl_acquire_all_list(both, 2, list),
            .info = info, .infolen = (size_t)infolen, .regid = q->regid, .redlock = q->redlock,
            .out = items });
        break;
    case PF_S_WITHDRAW_ALL: /* cmdlink_io.c: the undo written behind a lock-all
                               (take_all.c), the same list and id */
        dl_call_withdraw_all(&c, &who, &(dl_withdraw_all_args_t){
            .list = list, .listlen = dl_acquire_all_list(both, 2, list), .regid = q->regid });
        break;
    default:
        snprintf(k->err, sizeof k->err, "no such script %d", q->script);
        return NULL;
    }
    return run(k, &c, pf_call_form(q), keys[0]);
}

int pf_drain(pf_conn_t *k, pf_msg_t *out, int max)
{
    /* A PING on a subscribed connection is answered in order with the
     * messages: everything published before it has been read once its
     * answer is. */
    if (redisAppendCommand(k->sub, "PING") != REDIS_OK) {
        snprintf(k->err, sizeof k->err, "subscriber: %s", k->sub->errstr);
        return -1;
    }
    int n = 0;
    for (;;) {
        void *v;
        if (redisGetReply(k->sub, &v) != REDIS_OK || !v) {
            snprintf(k->err, sizeof k->err, "subscriber: %s", k->sub->errstr);
            return -1;
        }
        redisReply *r = v;
        int pong = r->type == REDIS_REPLY_ARRAY && r->elements >= 1 &&
                   r->element[0]->type == REDIS_REPLY_STRING && strcmp(r->element[0]->str, "pong") == 0;
        /* pmessage PATTERN CHANNEL MESSAGE, or (by slot) smessage CHANNEL
         * MESSAGE */
        int pm = r->type == REDIS_REPLY_ARRAY && r->elements == 4 &&
                 strcmp(r->element[0]->str, "pmessage") == 0;
        int sm = r->type == REDIS_REPLY_ARRAY && r->elements == 3 &&
                 strcmp(r->element[0]->str, "smessage") == 0;
        if (!pong && (pm || sm) && n < max) {
            const redisReply *ch = r->element[pm ? 2 : 1], *m = r->element[pm ? 3 : 2];
            size_t cl = strlen(k->chan);
            out[n].proc = ch->len > cl ? pf_token_proc(ch->str + cl, ch->len - cl) : -1;
            snprintf(out[n].text, sizeof out[n].text, "%.*s", (int)m->len, m->str);
            n++;
        }
        freeReplyObject(r);
        if (pong)
            return n;
    }
}

static const char *el(const redisReply *r, size_t *i)
{
    if (*i >= r->elements || r->element[*i]->type != REDIS_REPLY_STRING)
        return "";
    return r->element[(*i)++]->str;
}

static long long num(const redisReply *r, size_t *i)
{
    const char *s = el(r, i);
    return *s ? strtoll(s, NULL, 10) : -1;
}

int pf_snapshot(pf_conn_t *k, pf_snap_t *s)
{
    return pf_snapshot_of(k, PF_L_MAIN, s);
}

int pf_snapshot_of(pf_conn_t *k, int lock, pf_snap_t *s)
{
    char (*key)[96] = lock == PF_L_COMP ? k->ckeys : k->keys;
    const size_t *len = lock == PF_L_COMP ? k->ckeylen : k->keylen;
    memset(s, 0, sizeof *s);
    redisReply *r = redisCommand(k->c, "EVAL %s 6 %b %b %b %b %b %b", SNAPSHOT,
                                 key[0], len[0], key[1], len[1], key[2], len[2],
                                 key[3], len[3], key[4], len[4], key[5], len[5]);
    if (!r || r->type != REDIS_REPLY_ARRAY) {
        snprintf(k->err, sizeof k->err, "snapshot: %s",
                 r ? r->type == REDIS_REPLY_ERROR ? r->str : "bad reply" : k->c->errstr);
        if (r)
            freeReplyObject(r);
        return -1;
    }
    size_t i = 0;
    s->now = num(r, &i);
    const char *owner = el(r, &i);
    s->writer = *owner ? pf_token_proc(owner, strlen(owner)) : -1;
    s->wfence = (uint64_t)num(r, &i);
    s->wrid = (uint64_t)num(r, &i);
    s->wpttl = num(r, &i);
    s->pttl_r = num(r, &i);
    s->pttl_ri = num(r, &i);
    s->pttl_q = num(r, &i);
    s->pttl_w = num(r, &i);
    s->metafence = (uint64_t)num(r, &i);
    int nrd = (int)num(r, &i);
    for (int j = 0; j < nrd; j++) {
        const char *t = el(r, &i);
        int64_t score = num(r, &i);
        uint64_t fence = (uint64_t)num(r, &i);
        if (s->nrd < (int)(sizeof s->rd / sizeof s->rd[0])) {
            s->rd[s->nrd].proc = pf_token_proc(t, strlen(t));
            s->rd[s->nrd].score = score;
            s->rd[s->nrd].fence = fence;
            s->nrd++;
        }
    }
    int nwt = (int)num(r, &i);
    for (int j = 0; j < nwt; j++) {
        const char *t = el(r, &i);
        const char *mode = el(r, &i);
        int64_t deadline = num(r, &i);
        uint64_t regid = (uint64_t)num(r, &i);
        int queued = (int)num(r, &i);
        if (s->nwt < (int)(sizeof s->wt / sizeof s->wt[0])) {
            s->wt[s->nwt].proc = pf_token_proc(t, strlen(t));
            s->wt[s->nwt].mode = mode[0];
            s->wt[s->nwt].deadline = deadline;
            s->wt[s->nwt].regid = regid;
            s->wt[s->nwt].queued = queued;
            s->nwt++;
        }
    }
    s->nq = (int)num(r, &i);
    const char *ww = el(r, &i);
    s->ww = *ww ? pf_token_proc(ww, strlen(ww)) : -1;
    s->wwx = num(r, &i);
    freeReplyObject(r);
    return 0;
}

int pf_plant_mark(pf_conn_t *k, int proc, int64_t ms)
{
    char token[16];
    pf_token(proc, token, sizeof token);
    redisReply *r = redisCommand(k->c, "EVAL %s 1 %b %s %lld", "local t = redis.call('TIME')\n"
                                 "local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"
                                 "redis.call('HSET', KEYS[1], 'ww', ARGV[1], 'wwx', "
                                 "string.format('%.0f', now + tonumber(ARGV[2])))\n"
                                 "redis.call('PEXPIRE', KEYS[1], 3600000)\n",
                                 k->keys[5], k->keylen[5], token, (long long)ms);
    int bad = !r || r->type == REDIS_REPLY_ERROR;
    if (bad)
        snprintf(k->err, sizeof k->err, "plant mark: %s", r ? r->str : k->c->errstr);
    if (r)
        freeReplyObject(r);
    return bad ? -1 : 0;
}
