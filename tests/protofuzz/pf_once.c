/* SPDX-License-Identifier: BSD-3-Clause */
/* pf_once.c - the once's protocol fuzzer (pf_once.h). */
#include <hiredis/hiredis.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "call_acquire.h"
#include "call_once_check.h"
#include "call_once_done.h"
#include "call_release.h"
#include "call_renew.h"
#include "calls.h"
#include "keys.h"
#include "pf_once.h"
#include "pf_redis.h"
#include "script.h"

#define MAXP 8
#define MARGIN_MS 15
#define WTTL_MS 200

typedef struct oproc {
    int holds;                 /* believes it holds the running state */
    uint64_t fence, rid;
    int running;               /* ... and runs the routine (check said 0) */
    uint64_t regid;
} oproc_t;

/* The running state and the queue as Redis has them. */
typedef struct osnap {
    int owner;                 /* proc, -1 none */
    uint64_t fence;
    long long pttl;
    unsigned queued;           /* bit i: process i queued */
    int done;
    long long done_pttl;
} osnap_t;

typedef struct run {
    const pf_once_opts_t *o;
    pf_conn_t k;
    char token[MAXP][8];
    char *keybuf;
    const char *keys[DL_KEYS_MAX];
    size_t lens[DL_KEYS_MAX];
    oproc_t p[MAXP];
    int done;                  /* the model: a completion was kept */
    char prefix[64];
    int round;                 /* each round a once of its own name */
    long runs, completions, refusals;
    unsigned long lease;
    uint64_t rng;
    int step;
    char *why;
    size_t whylen;
} run_t;

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static uint64_t rnd(run_t *r)
{
    r->rng ^= r->rng << 13;
    r->rng ^= r->rng >> 7;
    r->rng ^= r->rng << 17;
    return r->rng;
}

static unsigned pick(run_t *r, unsigned n) { return (unsigned)(rnd(r) % n); }

static int bad(run_t *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int bad(run_t *r, const char *fmt, ...)
{
    int n = snprintf(r->why, r->whylen, "step %d: ", r->step);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->why + n, r->whylen - (size_t)n, fmt, ap);
    va_end(ap);
    return 1;
}

static int run_call(run_t *r, dl_call_t *c)
{
    for (int pass = 0; pass < 2; pass++) {
        dl_script_argv(c, !pass);
        redisReply *x = redisCommandArgv(r->k.c, c->argc, c->argv, c->argvlen);
        if (!x)
            return bad(r, "connection: %s", r->k.c->errstr);
        if (x->type == REDIS_REPLY_ERROR && !pass && strncmp(x->str, "NOSCRIPT", 8) == 0) {
            freeReplyObject(x);
            continue;
        }
        if (x->type == REDIS_REPLY_ERROR) {
            int rc = bad(r, "%s failed: %s", dl_scripts[c->script].name, x->str);
            freeReplyObject(x);
            return rc;
        }
        dl_call_parse(c, x);
        freeReplyObject(x);
        return 0;
    }
    return bad(r, "NOSCRIPT twice");
}

static dl_caller_t who(run_t *r, int i)
{
    dl_caller_t w = { r->keys, r->lens, r->k.chan, strlen(r->k.chan), r->token[i] };
    return w;
}

static const char snap_lua[] =
    "local h = redis.call('HMGET', KEYS[1], 'owner', 'fence')\n"
    "return {h[1] or '', h[2] or '', redis.call('PTTL', KEYS[1]),"
    " redis.call('ZRANGE', KEYS[2], 0, -1), redis.call('EXISTS', KEYS[3]),"
    " redis.call('PTTL', KEYS[3])}\n";

static int snapshot(run_t *r, osnap_t *s)
{
    redisReply *x = redisCommand(r->k.c, "EVAL %s 3 %b %b %b", snap_lua, r->keys[0], r->lens[0],
                                 r->keys[3], r->lens[3], r->keys[6], r->lens[6]);
    if (!x || x->type != REDIS_REPLY_ARRAY || x->elements != 6) {
        int rc = bad(r, "snapshot failed: %s", x && x->str ? x->str : r->k.c->errstr);
        if (x)
            freeReplyObject(x);
        return rc;
    }
    memset(s, 0, sizeof *s);
    s->owner = x->element[0]->len ? pf_token_proc(x->element[0]->str, x->element[0]->len) : -1;
    s->fence = x->element[1]->len ? strtoull(x->element[1]->str, NULL, 10) : 0;
    s->pttl = x->element[2]->integer;
    for (size_t i = 0; i < x->element[3]->elements; i++) {
        int pr = pf_token_proc(x->element[3]->element[i]->str, x->element[3]->element[i]->len);
        if (pr >= 0)
            s->queued |= 1u << pr;
    }
    s->done = (int)x->element[4]->integer;
    s->done_pttl = x->element[5]->integer;
    freeReplyObject(x);
    return 0;
}

/* Reads the pushes: exactly those of want ("k 0 KEY" once each). */
static int pushes(run_t *r, unsigned want)
{
    pf_msg_t m[64];
    int n = pf_drain(&r->k, m, 64);
    if (n < 0)
        return bad(r, "subscriber: %s", r->k.err);
    unsigned got = 0;
    for (int j = 0; j < n; j++) {
        char key[200];
        unsigned long long z;
        if (m[j].proc < 0 || sscanf(m[j].text, "k %llu %199s", &z, key) != 2 || z != 0 ||
            strcmp(key, r->keys[0]) != 0) {
            /* (grants of the running state are the lock's: "g ...") */
            if (strncmp(m[j].text, "g ", 2) == 0 || strncmp(m[j].text, "w ", 2) == 0)
                continue;
            return bad(r, "unexpected push \"%s\"", m[j].text);
        }
        if ((got | ~want) & (1u << m[j].proc))
            return bad(r, "p%d was pushed the completion %s", m[j].proc,
                       got & (1u << m[j].proc) ? "twice" : "without being queued for it");
        got |= 1u << m[j].proc;
    }
    if (got != want)
        return bad(r, "the completion pushed processes %#x, want %#x", got, want);
    return 0;
}

static int op_check(run_t *r, int i)
{
    dl_caller_t w = who(r, i);
    dl_call_t c;
    dl_call_once_check(&c, &w);
    if (run_call(r, &c))
        return 1;
    if (DL_REPLY(&c, once_check).done != r->done)
        return bad(r, "once_check says %d; the model: %d", DL_REPLY(&c, once_check).done, r->done);
    oproc_t *p = &r->p[i];
    if (p->holds && !DL_REPLY(&c, once_check).done && !p->running) {
        p->running = 1;           /* holding it, not complete: it runs the routine */
        r->runs++;
    }
    return 0;
}

static int op_take(run_t *r, int i)
{
    oproc_t *p = &r->p[i];
    if (p->holds)
        return 0;
    dl_caller_t w = who(r, i);
    dl_call_t c;
    char info[32];
    int il = snprintf(info, sizeof info, "pf\t%d\t%d", i, i);
    int queue = pick(r, 2) == 0;
    p->regid = ((uint64_t)r->step + 1) * 16 + (uint64_t)i;
    dl_call_acquire(&c, &w, &(dl_acquire_args_t){
        .mode = 'w', .lease_ms = r->lease, .info = info, .infolen = (size_t)il,
        .enqueue = queue, .regid = p->regid, .waiter_ttl_ms = WTTL_MS, .claim_ms = WTTL_MS });
    if (run_call(r, &c))
        return 1;
    if (DL_REPLY(&c, acquire).got == 1) {
        p->holds = 1;
        p->fence = DL_REPLY(&c, acquire).fence;
        p->rid = p->regid;
        p->running = 0;
    }
    return pushes(r, 0);
}

static int op_done(run_t *r, int i)
{
    oproc_t *p = &r->p[i];
    if (!p->running)
        return 0;
    osnap_t s;
    if (snapshot(r, &s))
        return 1;
    dl_caller_t w = who(r, i);
    dl_call_t c;
    dl_call_once_done(&c, &w, &(dl_once_done_args_t){ .fence = p->fence, .rid = p->rid,
                                                      .info = "pf", .infolen = 2 });
    int64_t t0 = now_ms();
    if (run_call(r, &c))
        return 1;
    int res = DL_REPLY(&c, once_done).result;
    int near = s.pttl >= 0 && s.pttl < MARGIN_MS + (now_ms() - t0);
    int want = r->done ? 3 : s.owner == i ? 1 : s.owner < 0 ? 2 : 0;
    if (res != want && !(near && !r->done && (res == 1 || res == 2 || res == 0)))
        return bad(r, "p%d once_done replied %d; Redis had the running state %s%d (%lld ms left): "
                   "want %d", i, res, s.owner < 0 ? "free " : "held by p", s.owner, s.pttl, want);
    if (res == 1 || res == 2) {
        if (r->done)
            return bad(r, "a second completion was kept");
        r->done = 1;
        r->completions++;
        if (pushes(r, s.queued & ~(1u << i)))
            return 1;
    } else if (pushes(r, 0)) {
        return 1;
    }
    if (res == 0)
        r->refusals++;
    p->running = 0;
    /* a completion's reply lost: sent again, it is told so */
    if ((res == 1 || res == 2) && pick(r, 4) == 0) {
        dl_call_once_done(&c, &w, &(dl_once_done_args_t){ .fence = p->fence, .rid = p->rid,
                                                          .info = "pf", .infolen = 2 });
        if (run_call(r, &c))
            return 1;
        if (DL_REPLY(&c, once_done).result != 3)
            return bad(r, "p%d's completion sent again replied %d, want 3", i,
                       DL_REPLY(&c, once_done).result);
    }
    return 0;
}

static int op_release(run_t *r, int i)
{
    oproc_t *p = &r->p[i];
    if (!p->holds)
        return 0;
    dl_caller_t w = who(r, i);
    dl_call_t c;
    dl_call_release(&c, &w, &(dl_release_args_t){ .mode = 'w', .fence = p->fence, .rid = p->rid });
    if (run_call(r, &c))
        return 1;
    p->holds = 0;
    p->running = 0;
    return pushes(r, 0);
}

static int op_renew(run_t *r, int i)
{
    oproc_t *p = &r->p[i];
    if (!p->holds)
        return 0;
    dl_caller_t w = who(r, i);
    dl_call_t c;
    dl_call_renew(&c, &w, &(dl_renew_args_t){ .mode = 'w', .lease_ms = r->lease,
                                               .fence = p->fence });
    if (run_call(r, &c))
        return 1;
    if (DL_REPLY(&c, renew).held != 1)
        p->holds = p->running = 0;   /* lapsed: it stopped renewing (stalled, died) */
    return 0;
}

static int check_state(run_t *r)
{
    osnap_t s;
    if (snapshot(r, &s))
        return 1;
    if (s.done != r->done)
        return bad(r, "the completion key %s; the model: %s", s.done ? "exists" : "is missing",
                   r->done ? "kept" : "not yet");
    if (s.done && s.done_pttl != -1)
        return bad(r, "the completion key expires (PTTL %lld)", s.done_pttl);
    if (r->done)
        for (int i = 0; i < r->o->procs; i++)
            if (r->p[i].running && !r->p[i].holds)
                r->p[i].running = 0;
    return 0;
}

/* The once of round n: its keys. */
static int use_round(run_t *r, int n)
{
    char name[16];
    int len = snprintf(name, sizeof name, "o%d", n);
    free(r->keybuf);
    r->keybuf = malloc(dl_kind_keys_size(DL_KIND_ONCE, r->prefix, (size_t)len));
    if (!r->keybuf)
        return bad(r, "out of memory");
    dl_kind_keys_write(DL_KIND_ONCE, r->keybuf, r->prefix, name, (size_t)len, r->keys, r->lens);
    r->round = n;
    r->done = 0;
    memset(r->p, 0, sizeof r->p);
    return 0;
}

static int step(run_t *r)
{
    int i = (int)pick(r, (unsigned)r->o->procs);
    unsigned k = pick(r, 100);
    /* a completed once is left behind, with whatever its processes held
     * (it lapses), for a new one: the completion is judged again */
    if (r->done && pick(r, 10) == 0)
        return use_round(r, r->round + 1);
    if (k < 8) {
        usleep((useconds_t)(1000 * (5 + pick(r, (unsigned)r->lease))));
        return 0;
    }
    if (k < 30)
        return op_take(r, i);
    if (k < 50)
        return op_check(r, i);
    if (k < 65)
        return op_done(r, i);
    if (k < 80)
        return op_renew(r, i);
    if (k < 90)
        return op_release(r, i);
    /* dies: forgets its hold (it lapses on its own) */
    r->p[i].holds = r->p[i].running = 0;
    return 0;
}

int pf_once_fuzz(const pf_once_opts_t *o, int *steps_done, char *why, size_t whylen)
{
    run_t r;
    memset(&r, 0, sizeof r);
    r.o = o;
    r.why = why;
    r.whylen = whylen;
    why[0] = 0;
    *steps_done = 0;
    r.rng = o->seed * 0x9E3779B97F4A7C15ull + 7;
    r.lease = 60 + (unsigned long)pick(&r, 140);
    snprintf(r.prefix, sizeof r.prefix, "pfonce%llu.%d:", (unsigned long long)o->seed,
             (int)getpid());
    for (int i = 0; i < o->procs && i < MAXP; i++)
        pf_token(i, r.token[i], sizeof r.token[i]);
    if (use_round(&r, 0))
        return -1;
    if (pf_conn_open(&r.k, o->host, o->port, r.prefix, 0)) {
        snprintf(why, whylen, "%s", r.k.err);
        free(r.keybuf);
        return -1;
    }
    int64_t end = o->max_ms > 0 ? now_ms() + o->max_ms : 0;
    int rc = 0;
    for (r.step = 0; r.step < o->steps && !rc; r.step++) {
        if (end && now_ms() > end)
            break;
        rc = step(&r) || check_state(&r);
        if (o->trace)
            fprintf(o->trace, "step %d: %s\n", r.step, r.done ? "complete" : "not yet");
    }
    *steps_done = r.step;
    if (!rc && !r.done) {
        /* The last process standing completes it. */
        for (int i = 0; i < o->procs && !rc && !r.done; i++) {
            r.p[i].holds = r.p[i].running = 0;
            usleep((useconds_t)(1000 * (r.lease + 20)));
            rc = op_take(&r, i) || (r.p[i].holds && (op_check(&r, i) || op_done(&r, i)));
        }
    }
    if (!rc && o->trace)
        fprintf(o->trace, "%ld runs, %ld completions, %ld refused, %d rounds\n", r.runs,
                r.completions, r.refusals, r.round + 1);
    pf_conn_close(&r.k);
    free(r.keybuf);
    return rc;
}
