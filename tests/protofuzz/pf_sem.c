/* SPDX-License-Identifier: BSD-3-Clause */
/* pf_sem.c - the semaphore's protocol fuzzer (pf_sem.h). */
#include <hiredis/hiredis.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "call_renew.h"
#include "call_sem_cancel.h"
#include "call_sem_open.h"
#include "call_sem_post.h"
#include "call_sem_renew.h"
#include "call_sem_value.h"
#include "call_sem_wait.h"
#include "call_sem_withdraw.h"
#include "call_withdraw.h"
#include "calls.h"
#include "keys.h"
#include "pf_sem.h"
#include "script.h"
#include "sem_calls.h"

#define MAXP 8
#define MARGIN_MS 10
#define WTTL_MS 200

typedef struct late {          /* a request held back on a given-up connection */
    int has;
    char what;                 /* 'w' a wait or try, 'r' a post */
    int wait;
    uint64_t id, fence;
    uint64_t inc;              /* the incarnation it was sent to */
} late_t;

typedef struct sproc {
    uint64_t id;               /* the last operation's id */
    uint64_t reg_last;         /* the last wait that registered, 0 none */
    char pend;                 /* an operation with no reply: 'w' | 'r', to settle */
    uint64_t pend_id;
    uint64_t pend_inc;         /* the incarnation it was sent to */
    uint64_t inc;              /* the incarnation it opened (prim/sem.c's inc) */
    late_t late;
    int held;                  /* leased: permits believed held */
    uint64_t fence;
    int64_t valid_until;       /* leased: local ms */
} sproc_t;

typedef struct run {
    const pf_sem_opts_t *o;
    redisContext *c;
    char prefix[64], chan[80], token[MAXP][8];
    char *keybuf;
    const char *keys[DL_KEYS_MAX];
    size_t lens[DL_KEYS_MAX];
    char kind;
    unsigned long lease;
    sproc_t p[MAXP];
    long long taken, posted;   /* counting: confirmed, in the present incarnation */
    uint64_t cur;              /* the present incarnation (0: none since a loss) */
    int losses;
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

/* Runs c as the library sends it (EVALSHA, EVAL on NOSCRIPT) and parses
 * its reply with its entry.  0, or 1 (the script failed: a finding). */
static int run_call(run_t *r, dl_call_t *c)
{
    for (int pass = 0; pass < 2; pass++) {
        dl_script_argv(c, !pass);
        redisReply *x = redisCommandArgv(r->c, c->argc, c->argv, c->argvlen);
        if (!x)
            return bad(r, "connection: %s", r->c->errstr);
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
    dl_caller_t w = { r->keys, r->lens, r->chan, strlen(r->chan), r->token[i] };
    return w;
}

static void build_wait(run_t *r, int i, int wait, uint64_t id, uint64_t inc, dl_call_t *c)
{
    dl_caller_t w = who(r, i);
    dl_call_sem_wait(c, &w, &(dl_sem_wait_args_t){
        .op = { r->kind, r->o->value, id, inc }, .wait = wait, .waiter_ttl_ms = WTTL_MS,
        .lease_ms = r->lease, .info = "pf", .infolen = 2 });
}

static void build_post(run_t *r, int i, uint64_t id, uint64_t fence, uint64_t inc, dl_call_t *c)
{
    dl_caller_t w = who(r, i);
    dl_call_sem_post(c, &w, &(dl_sem_post_args_t){ .op = { r->kind, r->o->value, id, inc },
                                                    .fence = fence });
}

static int withdraw(run_t *r, int i, char what, uint64_t id, uint64_t inc, int *result)
{
    dl_caller_t w = who(r, i);
    dl_call_t c;
    dl_call_sem_withdraw(&c, &w, &(dl_withdraw_args_t){ .mode = what, .regid = id,
                                                         .incarn = inc });
    if (run_call(r, &c))
        return 1;
    *result = DL_REPLY(&c, withdraw).result;
    return 0;
}

static void lapse(sproc_t *p);

/* prim/sem.c's dl_sem_open (an init): the semaphore, made if need be; the
 * process uses its incarnation from now on, and whatever it had of
 * another (a permit, a registration, an operation to settle) is gone. */
static int reopen(run_t *r, int i)
{
    sproc_t *p = &r->p[i];
    dl_caller_t w = who(r, i);
    dl_call_t c;
    dl_call_sem_open(&c, &w, &(dl_sem_open_args_t){ r->kind, r->o->value, 'c', ++p->id });
    if (run_call(r, &c))
        return 1;
    dl_sem_open_reply_t *x = &DL_REPLY(&c, sem_open);
    if ((x->result != 0 && x->result != 1) || !x->inc)
        return bad(r, "p%d sem_open replied %d (incarnation %llu)", i, x->result,
                   (unsigned long long)x->inc);
    if (x->result == 1 && r->cur)
        return bad(r, "p%d's sem_open made a semaphore beside incarnation %llu", i,
                   (unsigned long long)r->cur);
    if (x->result == 0 && x->inc != r->cur)
        return bad(r, "p%d's sem_open found incarnation %llu, the present one is %llu", i,
                   (unsigned long long)x->inc, (unsigned long long)r->cur);
    if (x->result == 1) {
        r->cur = x->inc;
        r->taken = r->posted = 0;
    }
    if (p->inc != x->inc) {
        if (p->pend_inc != x->inc)
            p->pend = 0;
        p->reg_last = 0;
        if (p->held)
            lapse(p);
    }
    p->inc = x->inc;
    return 0;
}

/* An answer LOST to i's operation sent with incarnation inc: right only
 * if that is not the present one; i then opens the new one. */
static int told_lost(run_t *r, int i, uint64_t inc, const char *what)
{
    if (inc == r->cur)
        return bad(r, "p%d's %s was told incarnation %llu is lost; it is the present one", i,
                   what, (unsigned long long)inc);
    return reopen(r, i);
}

/* A reply that did something in incarnation inc, to i's operation sent
 * with incarnation sent: only the present one, the one sent. */
static int done_in(run_t *r, int i, uint64_t sent, uint64_t inc, const char *what)
{
    if (inc != sent || inc != r->cur)
        return bad(r, "p%d's %s sent to incarnation %llu was done in %llu (the present one: %llu)",
                   i, what, (unsigned long long)sent, (unsigned long long)inc,
                   (unsigned long long)r->cur);
    return 0;
}

/* prim/sem.c's settle: the operation that got no reply, before the next. */
static int settle(run_t *r, int i)
{
    sproc_t *p = &r->p[i];
    if (!p->pend)
        return 0;
    int res;
    uint64_t inc = p->pend_inc;
    if (withdraw(r, i, p->pend, p->pend_id, inc, &res))
        return 1;
    if (res == DL_SEM_LOST) {
        p->pend = 0;
        return told_lost(r, i, inc, "settling");
    }
    if (inc != r->cur)
        return bad(r, "p%d settled an operation of incarnation %llu in %llu (replied %d)", i,
                   (unsigned long long)inc, (unsigned long long)r->cur, res);
    /* A post settled: made now (1) or it ran already (0); counting, either
     * way once.  (Leased: 0 may also mean the hold had lapsed.) */
    if (p->pend == 'r' && r->kind == 'c' && res >= 0)
        r->posted++;
    if (p->pend == 'w')
        p->reg_last = 0;
    p->pend = 0;
    return 0;
}

/* The held-back request of i runs now (a wait with its withdrawal right
 * behind it); nobody reads the replies. */
static int deliver(run_t *r, int i)
{
    late_t *l = &r->p[i].late;
    if (!l->has)
        return 0;
    l->has = 0;
    dl_call_t c;
    if (l->what == 'w') {
        build_wait(r, i, l->wait, l->id, l->inc, &c);
        if (run_call(r, &c))
            return 1;
        if (l->inc != r->cur && DL_REPLY(&c, sem_wait).got != DL_SEM_LOST)
            return bad(r, "p%d's late wait of incarnation %llu ran in %llu (replied %d)", i,
                       (unsigned long long)l->inc, (unsigned long long)r->cur,
                       DL_REPLY(&c, sem_wait).got);
        int res;
        if (withdraw(r, i, 'w', l->id, l->inc, &res))
            return 1;
        if (l->inc != r->cur && res != DL_SEM_LOST)
            return bad(r, "p%d's withdrawal of incarnation %llu ran in %llu (replied %d)", i,
                       (unsigned long long)l->inc, (unsigned long long)r->cur, res);
        return 0;
    }
    build_post(r, i, l->id, l->fence, l->inc, &c);
    if (run_call(r, &c))
        return 1;
    if (l->inc != r->cur && DL_REPLY(&c, sem_post).result != DL_SEM_LOST)
        return bad(r, "p%d's late post of incarnation %llu ran in %llu (replied %d)", i,
                   (unsigned long long)l->inc, (unsigned long long)r->cur,
                   DL_REPLY(&c, sem_post).result);
    return 0;
}

static void lapse(sproc_t *p)
{
    p->held = 0;
    p->fence = 0;
    p->valid_until = 0;
}

/* One wait or try by i; lost: 0 sent, 1 ran with its reply lost, 2 held
 * back (runs later). */
static int op_wait(run_t *r, int i, int wait, int lost)
{
    sproc_t *p = &r->p[i];
    uint64_t id = ++p->id, inc = p->inc;
    if (lost == 2) {
        p->late = (late_t){ 1, 'w', wait, id, 0, inc };
        p->pend = 'w';
        p->pend_id = id;
        p->pend_inc = inc;
        return 0;
    }
    dl_call_t c;
    build_wait(r, i, wait, id, inc, &c);
    int64_t sent = now_ms();
    if (run_call(r, &c))
        return 1;
    if (lost) {
        p->pend = 'w';
        p->pend_id = id;
        p->pend_inc = inc;
        return 0;
    }
    dl_sem_wait_reply_t *w = &DL_REPLY(&c, sem_wait);
    if (w->got == DL_SEM_LOST)
        return told_lost(r, i, inc, "wait");
    if (w->got >= 0 && done_in(r, i, inc, w->inc, "wait"))
        return 1;
    if (w->got == 1) {
        p->reg_last = 0;
        if (r->kind == 'c') {
            r->taken++;
        } else {
            p->held = (int)w->count;
            p->fence = w->fence;
            p->valid_until = sent + (int64_t)r->lease;
        }
    } else if (w->got == 0) {
        if (wait)
            p->reg_last = id;
    } else {
        return bad(r, "p%d sem_wait replied %d", i, w->got);
    }
    return 0;
}

static int op_post(run_t *r, int i, int lost)
{
    sproc_t *p = &r->p[i];
    if (r->kind == 'l' && !p->held)
        return 0;                       /* sem.c: EPERM, nothing sent */
    uint64_t id = ++p->id, inc = p->inc;
    uint64_t fence = p->fence;
    if (lost) {
        /* sem.c: given back as far as the process goes; made on settling */
        if (lost == 2)
            p->late = (late_t){ 1, 'r', 0, id, fence, inc };
        else {
            dl_call_t c;
            build_post(r, i, id, fence, inc, &c);
            if (run_call(r, &c))
                return 1;
        }
        p->pend = 'r';
        p->pend_id = id;
        p->pend_inc = inc;
        if (r->kind == 'l' && --p->held == 0)
            lapse(p);
        return 0;
    }
    dl_call_t c;
    build_post(r, i, id, fence, inc, &c);
    if (run_call(r, &c))
        return 1;
    int res = DL_REPLY(&c, sem_post).result;
    if (res == DL_SEM_LOST) {
        if (r->kind == 'l')
            lapse(p);
        return told_lost(r, i, inc, "post");
    }
    if (res >= 0 && done_in(r, i, inc, DL_REPLY(&c, sem_post).inc, "post"))
        return 1;
    if (r->kind == 'c') {
        if (res != 1 && res != 2)
            return bad(r, "p%d counting post replied %d", i, res);
        r->posted++;
    } else if (res == 1 || res == 2) {
        if (--p->held == 0)
            lapse(p);
    } else if (res == 0) {
        /* lapsed: only once its validity ended */
        if (p->valid_until && now_ms() + MARGIN_MS < p->valid_until)
            return bad(r, "p%d's post found its hold gone %lld ms before its lease ran out", i,
                       (long long)(p->valid_until - now_ms()));
        lapse(p);
    } else {
        return bad(r, "p%d leased post replied %d", i, res);
    }
    return 0;
}

static int op_cancel(run_t *r, int i)
{
    sproc_t *p = &r->p[i];
    if (!p->reg_last)
        return 0;
    dl_caller_t w = who(r, i);
    dl_call_t c;
    uint64_t inc = p->inc;
    dl_call_sem_cancel(&c, &w, &(dl_sem_cancel_args_t){
        .op = { r->kind, r->o->value, ++p->id, inc }, .upto = p->reg_last });
    if (run_call(r, &c))
        return 1;
    p->reg_last = 0;
    if (DL_REPLY(&c, sem_cancel).result == DL_SEM_LOST)
        return told_lost(r, i, inc, "cancel");
    return 0;
}

static int op_renew(run_t *r, int i)
{
    sproc_t *p = &r->p[i];
    if (r->kind != 'l' || !p->held)
        return 0;
    dl_caller_t w = who(r, i);
    dl_call_t c;
    dl_call_sem_renew(&c, &w, &(dl_renew_args_t){ .mode = 'w', .lease_ms = r->lease,
                                                   .fence = p->fence });
    int64_t sent = now_ms();
    if (run_call(r, &c))
        return 1;
    if (DL_REPLY(&c, renew).held == 1) {
        p->valid_until = sent + (int64_t)r->lease;
    } else {
        if (p->valid_until && now_ms() + MARGIN_MS < p->valid_until)
            return bad(r, "p%d's renewal found its hold gone %lld ms before its lease ran out", i,
                       (long long)(p->valid_until - now_ms()));
        lapse(p);
    }
    return 0;
}

/* The invariants against one atomic read of the semaphore's keys. */
static const char snap_lua[] =
    "local v = redis.call('HMGET', KEYS[1], 'v', 'n', 'used', 'i')\n"
    "local sum, who = 0, {}\n"
    "local h = redis.call('HGETALL', KEYS[6])\n"
    "for i = 1, #h, 2 do local c = cmsgpack.unpack(h[i + 1])[1]; sum = sum + c;"
    " who[#who + 1] = h[i]; who[#who + 1] = c end\n"
    "return {v[1] or '', v[2] or '', v[3] or '', sum, redis.call('ZCARD', KEYS[2]),"
    " redis.call('ZCARD', KEYS[3]), redis.call('HLEN', KEYS[4]), redis.call('ZCARD', KEYS[5]),"
    " redis.call('HLEN', KEYS[6]), who, v[4] or ''}\n";

static long long elem(const redisReply *x, size_t i)
{
    const redisReply *e = x->element[i];
    if (e->type == REDIS_REPLY_INTEGER)
        return e->integer;
    if (e->type == REDIS_REPLY_STRING && e->len)
        return atoll(e->str);
    return -1;
}

static int check(run_t *r)
{
    redisReply *x = redisCommand(r->c, "EVAL %s 6 %b %b %b %b %b %b", snap_lua,
                                 r->keys[0], r->lens[0], r->keys[1], r->lens[1], r->keys[2],
                                 r->lens[2], r->keys[3], r->lens[3], r->keys[4], r->lens[4],
                                 r->keys[5], r->lens[5]);
    if (!x || x->type != REDIS_REPLY_ARRAY || x->elements != 11) {
        int rc = bad(r, "snapshot failed: %s", x && x->str ? x->str : r->c->errstr);
        if (x)
            freeReplyObject(x);
        return rc;
    }
    long long v = elem(x, 0), n = elem(x, 1), used = elem(x, 2), sum = elem(x, 3);
    long long q = elem(x, 4), d = elem(x, 5), w = elem(x, 6), l = elem(x, 7), h = elem(x, 8);
    int rc = 0;
    if (q != d || q != w)
        rc = bad(r, "the queue's keys disagree: %lld queued, %lld deadlines, %lld registrations",
                 q, d, w);
    /* Requests sent to a lost incarnation may be unsettled or held back:
     * they must not count in the present one. */
    int quiet = 1;
    for (int i = 0; i < r->o->procs; i++)
        if ((r->p[i].pend && r->p[i].pend_inc == r->cur) ||
            (r->p[i].late.has && r->p[i].late.inc == r->cur))
            quiet = 0;
    int exists = x->element[0]->len > 0 || x->element[1]->len > 0;
    unsigned long long inc = strtoull(x->element[10]->str ? x->element[10]->str : "", NULL, 10);
    if (!rc && exists && inc != r->cur)
        rc = bad(r, "Redis has incarnation %llu, the present one is %llu", inc,
                 (unsigned long long)r->cur);
    if (!rc && r->kind == 'c' && exists) {
        long long want = (long long)r->o->value + r->posted - r->taken;
        if (v < 0)
            rc = bad(r, "value %lld", v);
        else if (quiet && v != want)
            rc = bad(r, "value %lld, want %u + %lld posted - %lld taken = %lld", v, r->o->value,
                     r->posted, r->taken, want);
    }
    if (!rc && r->kind == 'l' && exists) {
        if (used != sum || l != h)
            rc = bad(r, "used %lld, holders' counts %lld, %lld leases for %lld holders", used, sum,
                     l, h);
        else if (used > n)
            rc = bad(r, "%lld permits used of %lld", used, n);
        int64_t now = now_ms();
        long long believed = 0;
        const redisReply *who = x->element[9];
        for (int i = 0; !rc && i < r->o->procs; i++) {
            sproc_t *p = &r->p[i];
            if (!p->held || !p->valid_until || now + MARGIN_MS >= p->valid_until)
                continue;
            believed += p->held;
            long long in = 0;
            for (size_t k = 0; k + 1 < who->elements; k += 2)
                if (strcmp(who->element[k]->str, r->token[i]) == 0)
                    in = who->element[k + 1]->integer;
            if (in < p->held)
                rc = bad(r, "p%d believes it holds %d permits (%lld ms left), Redis has %lld", i,
                         p->held, (long long)(p->valid_until - now), in);
        }
        if (!rc && believed > n)
            rc = bad(r, "%lld permits believed held, of %lld", believed, n);
    }
    freeReplyObject(x);
    return rc;
}

/* Redis loses the semaphore (a restart without persistence, a flush): its
 * keys go.  The processes learn it at their next operation; the permits
 * they held are gone (their lapse is the library's to find: renewals). */
static int lose(run_t *r)
{
    redisReply *x = redisCommand(r->c, "DEL %b %b %b %b %b %b", r->keys[0], r->lens[0],
                                 r->keys[1], r->lens[1], r->keys[2], r->lens[2], r->keys[3],
                                 r->lens[3], r->keys[4], r->lens[4], r->keys[5], r->lens[5]);
    if (!x || x->type != REDIS_REPLY_INTEGER) {
        int rc = bad(r, "DEL failed: %s", x && x->str ? x->str : r->c->errstr);
        if (x)
            freeReplyObject(x);
        return rc;
    }
    freeReplyObject(x);
    r->cur = 0;
    r->taken = r->posted = 0;
    r->losses++;
    for (int i = 0; i < r->o->procs; i++)
        if (r->p[i].held)
            lapse(&r->p[i]);
    return 0;
}

static int step(run_t *r)
{
    int i = (int)pick(r, (unsigned)r->o->procs);
    sproc_t *p = &r->p[i];
    if (pick(r, 150) == 0)
        return lose(r);
    unsigned k = pick(r, 100);
    if (k < 6)
        return deliver(r, i);
    if (k < 12) {
        usleep((useconds_t)(1000 * (5 + pick(r, 60))));
        return 0;
    }
    if (k < 20 && r->kind == 'l')
        return op_renew(r, i);
    /* sem.c settles a lost operation before sending another */
    if (p->pend)
        return settle(r, i);
    unsigned lost = pick(r, 10) == 0 ? 1 + pick(r, 2) : 0;
    if (k < 55)
        return op_wait(r, i, pick(r, 3) != 0, (int)lost);
    if (k < 85)
        return op_post(r, i, (int)lost);
    return op_cancel(r, i);
}

/* Every request settled or delivered, registrations cancelled, permits
 * given back; then the value is the first one. */
static int finish(run_t *r)
{
    for (int i = 0; i < r->o->procs; i++) {
        if (settle(r, i) || deliver(r, i) || settle(r, i) || op_cancel(r, i))
            return 1;
        while (r->kind == 'l' && r->p[i].held)
            if (op_post(r, i, 0))
                return 1;
    }
    if (check(r))
        return 1;
    if (r->kind == 'c')
        return 0;
    usleep((useconds_t)(1000 * (r->lease + 20)));  /* lapsed permits come back */
    dl_caller_t w = who(r, 0);
    dl_call_t c;
    dl_call_sem_value(&c, &w, &(dl_sem_value_args_t){ r->kind, r->o->value, 0 });
    if (run_call(r, &c))
        return 1;
    if (DL_REPLY(&c, sem_value).value != (long long)r->o->value)
        return bad(r, "at the end: value %lld of %u permits", DL_REPLY(&c, sem_value).value,
                   r->o->value);
    return 0;
}

int pf_sem_fuzz(const pf_sem_opts_t *o, int *steps_done, char *why, size_t whylen)
{
    run_t r;
    memset(&r, 0, sizeof r);
    r.o = o;
    r.why = why;
    r.whylen = whylen;
    why[0] = 0;
    *steps_done = 0;
    r.rng = o->seed * 0x9E3779B97F4A7C15ull + 1;
    r.kind = o->leased ? 'l' : 'c';
    r.lease = 60 + (unsigned long)pick(&r, 240);
    snprintf(r.prefix, sizeof r.prefix, "pfsem%llu.%d:", (unsigned long long)o->seed, (int)getpid());
    snprintf(r.chan, sizeof r.chan, "%sn:", r.prefix);
    for (int i = 0; i < o->procs && i < MAXP; i++)
        snprintf(r.token[i], sizeof r.token[i], "t%d", i);
    r.keybuf = malloc(dl_kind_keys_size(DL_KIND_SEM, r.prefix, 1));
    dl_kind_keys_write(DL_KIND_SEM, r.keybuf, r.prefix, "s", 1, r.keys, r.lens);
    struct timeval tv = { 5, 0 };
    r.c = redisConnectWithTimeout(o->host, o->port, tv);
    if (!r.c || r.c->err) {
        snprintf(why, whylen, "connect: %s", r.c ? r.c->errstr : "out of memory");
        if (r.c)
            redisFree(r.c);
        free(r.keybuf);
        return -1;
    }
    redisSetTimeout(r.c, tv);
    int64_t end = o->max_ms > 0 ? now_ms() + o->max_ms : 0;
    int rc = 0;
    /* Each process initializes the semaphore first (dist_sem_init). */
    for (int i = 0; i < o->procs && !rc; i++)
        rc = reopen(&r, i);
    for (r.step = 0; r.step < o->steps && !rc; r.step++) {
        if (end && now_ms() > end)
            break;
        rc = step(&r) || check(&r);
        if (o->trace)
            fprintf(o->trace, "step %d taken %lld posted %lld incarnation %llu (%d lost)\n",
                    r.step, r.taken, r.posted, (unsigned long long)r.cur, r.losses);
    }
    *steps_done = r.step;
    if (!rc)
        rc = finish(&r);
    redisFree(r.c);
    free(r.keybuf);
    return rc;
}
