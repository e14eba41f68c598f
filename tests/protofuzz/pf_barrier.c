/* SPDX-License-Identifier: BSD-3-Clause */
/* pf_barrier.c - the barrier's protocol fuzzer (pf_barrier.h). */
#include <hiredis/hiredis.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "call_barrier_check.h"
#include "call_barrier_leave.h"
#include "call_barrier_open.h"
#include "call_barrier_wait.h"
#include "calls.h"
#include "keys.h"
#include "pf_barrier.h"
#include "pf_redis.h"
#include "script.h"

#define MAXP 8
#define MAXT 3                 /* threads per process */
#define MAXA 8192              /* arrivals recorded */
#define MAXPEND 8

enum { A_WAIT, A_REL, A_SERIAL, A_WD };

typedef struct arr {           /* an arrival that ran in Redis */
    int proc;
    uint64_t id, gen;
    int st;                    /* A_* */
} arr_t;

typedef struct late {          /* a request held back on a given-up connection */
    int has;
    char what;                 /* 'a' an arrival, 'l' a leave */
    uint64_t op, arr, gen, inc;
} late_t;

typedef struct kept {          /* a request that got no reply (prim/barrier.c) */
    uint64_t op, arr, gen, inc;
    int thr;
} kept_t;

typedef struct bthr {          /* what a thread believes */
    int waiting;
    uint64_t id, gen, inc;
} bthr_t;

typedef struct bproc {
    uint64_t id;               /* the last operation id drawn */
    uint64_t sid, sgen, sarr;  /* its last operation as Redis keeps it (the model) */
    char sres;
    bthr_t thr[MAXT];
    int nkept;
    kept_t kept[MAXPEND];
    late_t late;
} bproc_t;

typedef struct run {
    const pf_barrier_opts_t *o;
    pf_conn_t k;               /* its command connection and subscriber */
    char token[MAXP][8];
    char *keybuf;
    const char *keys[DL_KEYS_MAX];
    size_t lens[DL_KEYS_MAX];
    unsigned count;
    uint64_t gen, inc;         /* the model: the generation under way */
    int ncur;                  /* ... its arrivals */
    arr_t *arr;
    int narr;
    bproc_t p[MAXP];
    long trips, withdrawn, resends, stale;
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

/* Runs c as the library sends it (EVALSHA, EVAL on NOSCRIPT), with its
 * KEYS in full or (one time in four) only the first, as a cluster's ASK
 * sends them, and parses its reply with its entry.  0, or 1 (the script
 * failed: a finding). */
static int run_call(run_t *r, dl_call_t *c)
{
    int first_only = pick(r, 4) == 0;
    for (int pass = 0; pass < 2; pass++) {
        dl_script_argv(c, !pass);
        if (first_only) {
            /* argv: EVALSHA sha 2 K1 K2 ARGV... -> EVALSHA sha 1 K1 ARGV... */
            c->argv[2] = "1";
            c->argvlen[2] = 1;
            memmove(&c->argv[4], &c->argv[5], (size_t)(c->argc - 5) * sizeof c->argv[0]);
            memmove(&c->argvlen[4], &c->argvlen[5], (size_t)(c->argc - 5) * sizeof c->argvlen[0]);
            c->argc--;
        }
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

static arr_t *find(run_t *r, int i, uint64_t id)
{
    for (int a = r->narr - 1; a >= 0; a--)
        if (r->arr[a].proc == i && r->arr[a].id == id)
            return &r->arr[a];
    return NULL;
}

/* ------------------------------------------------------------- the model */

/* What barrier_wait.lua must do with arrival (i, id) of `count`, applied
 * to the model: the reply {res, gen}; *tripped: it tripped a generation
 * (the processes to push: those with an arrival in it, but i). */
static int model_arrive(run_t *r, int i, uint64_t id, unsigned count, uint64_t *gen,
                        unsigned *pushto)
{
    bproc_t *p = &r->p[i];
    *pushto = 0;
    if (count != r->count)
        return -2;
    if (id < p->sid)
        return -3;
    if (id == p->sid) {
        *gen = p->sgen;
        if (p->sres != 'a' && p->sres != 's')
            return -4;
        if (p->sres == 's')
            return 2;
        return r->gen > p->sgen ? 1 : 0;
    }
    if (r->narr >= MAXA)
        return -9;
    arr_t *a = &r->arr[r->narr++];
    *a = (arr_t){ i, id, r->gen, A_WAIT };
    *gen = r->gen;
    p->sid = id;
    p->sgen = r->gen;
    p->sarr = id;
    if ((unsigned)r->ncur + 1 >= r->count) {
        a->st = A_SERIAL;
        for (int b = 0; b < r->narr - 1; b++)
            if (r->arr[b].st == A_WAIT && r->arr[b].gen == r->gen) {
                r->arr[b].st = A_REL;
                if (r->arr[b].proc != i)
                    *pushto |= 1u << r->arr[b].proc;
            }
        p->sres = 's';
        r->gen++;
        r->ncur = 0;
        r->trips++;
        return 2;
    }
    p->sres = 'a';
    r->ncur++;
    return 0;
}

/* What barrier_leave.lua must answer for leave op of arrival arr (gen,
 * settling the request `failed`), applied. */
static int model_leave(run_t *r, int i, uint64_t arr, uint64_t gen, uint64_t op, uint64_t failed)
{
    bproc_t *p = &r->p[i];
    if (op < p->sid)
        return -3;
    if (op == p->sid)
        return p->sres == 'W' ? 1 : p->sres == 'R' ? 2 : 0;
    arr_t *a = find(r, i, arr);
    int out;
    if (failed && failed == p->sid && p->sarr == arr &&
        (p->sres == 'W' || p->sres == 'R' || p->sres == 'N')) {
        out = p->sres == 'W' ? 1 : p->sres == 'R' ? 2 : 0;
    } else if (a && a->st == A_WAIT) {
        a->st = A_WD;
        r->ncur--;
        r->withdrawn++;
        out = 1;
    } else if (arr == p->sid && (p->sres == 'a' || p->sres == 's')) {
        out = p->sres == 's' || r->gen > p->sgen ? 2 : 0;
    } else {
        out = gen && r->gen > gen ? 2 : 0;
    }
    p->sid = op;
    p->sres = out == 1 ? 'W' : out == 2 ? 'R' : 'N';
    p->sgen = 0;
    p->sarr = arr;
    return out;
}

/* ------------------------------------------------------------- pushes */

static int released(run_t *r, int i, uint64_t id, const char *how);

/* Reads what the step published: exactly one "k GEN KEY" to each process
 * of want, for generation gen; and the threads of those processes waiting
 * in it are released (unless the push is lost: one in four). */
static int pushes(run_t *r, unsigned want, uint64_t gen)
{
    pf_msg_t m[64];
    int n = pf_drain(&r->k, m, 64);
    if (n < 0)
        return bad(r, "subscriber: %s", r->k.err);
    unsigned got = 0;
    for (int j = 0; j < n; j++) {
        unsigned long long g;
        char key[200];
        if (m[j].proc < 0 || sscanf(m[j].text, "k %llu %199s", &g, key) != 2)
            return bad(r, "unexpected push \"%s\"", m[j].text);
        if (strcmp(key, r->keys[0]) != 0)
            return bad(r, "a push names another key: \"%s\"", m[j].text);
        if (!(want & (1u << m[j].proc)))
            return bad(r, "p%d was pushed generation %llu: it had no arrival in it, or tripped it",
                       m[j].proc, g);
        if (got & (1u << m[j].proc))
            return bad(r, "p%d was pushed twice for one generation", m[j].proc);
        if (g != gen)
            return bad(r, "p%d was pushed generation %llu, which is not the one tripped (%llu)",
                       m[j].proc, g, (unsigned long long)gen);
        got |= 1u << m[j].proc;
        if (pick(r, 4) == 0)
            continue;             /* lost: a check makes up for it */
        for (int t = 0; t < MAXT; t++) {
            bthr_t *h = &r->p[m[j].proc].thr[t];
            if (h->waiting && h->gen == g) {
                h->waiting = 0;
                if (released(r, m[j].proc, h->id, "a push"))
                    return 1;
            }
        }
    }
    if (got != want)
        return bad(r, "a trip pushed processes %#x, want %#x", got, want);
    return 0;
}

/* ------------------------------------------------------------- the ops */

/* Runs an arrival (i, id) now and compares it with the model.  *res, *gen:
 * the reply. */
static int send_arrival(run_t *r, int i, uint64_t id, unsigned count, int *res, uint64_t *gen)
{
    dl_caller_t w = who(r, i);
    dl_call_t c;
    dl_call_barrier_wait(&c, &w, &(dl_barrier_wait_args_t){ .count = count, .id = id });
    if (run_call(r, &c))
        return 1;
    uint64_t mgen = 0;
    unsigned pushto = 0;
    int want = model_arrive(r, i, id, count, &mgen, &pushto);
    if (want == -9)
        return bad(r, "too many arrivals for the model");
    const dl_barrier_wait_reply_t *x = &DL_REPLY(&c, barrier_wait);
    if (x->result != want || (want >= 0 && x->gen != mgen) || (want >= 0 && x->inc != r->inc))
        return bad(r, "p%d arrival %llu replied %d (gen %llu, inc %llu); the model: %d (gen %llu)",
                   i, (unsigned long long)id, x->result, (unsigned long long)x->gen,
                   (unsigned long long)x->inc, want, (unsigned long long)mgen);
    if (want == 0 && x->arrived != r->ncur)
        return bad(r, "p%d arrival: %lld so far, the model %d", i, x->arrived, r->ncur);
    if (want == 2 && pushes(r, pushto, mgen))
        return 1;
    *res = x->result;
    *gen = x->gen;
    return 0;
}

static int send_leave(run_t *r, int i, uint64_t arr, uint64_t gen, uint64_t inc, uint64_t op,
                      uint64_t failed, int *res)
{
    dl_caller_t w = who(r, i);
    dl_call_t c;
    dl_call_barrier_leave(&c, &w, &(dl_barrier_leave_args_t){
        .arrival = arr, .gen = gen, .inc = inc, .id = op, .failed = failed });
    if (run_call(r, &c))
        return 1;
    int want = model_leave(r, i, arr, gen, op, failed);
    if (DL_REPLY(&c, barrier_leave).result != want)
        return bad(r, "p%d leave %llu of arrival %llu (gen %llu, settling %llu) replied %d; the "
                   "model: %d", i, (unsigned long long)op, (unsigned long long)arr,
                   (unsigned long long)gen, (unsigned long long)failed,
                   DL_REPLY(&c, barrier_leave).result, want);
    *res = want;
    return 0;
}

/* A released thread (a reply, a leave, a check, a push said so): its
 * arrival must be of a tripped generation. */
static int released(run_t *r, int i, uint64_t id, const char *how)
{
    arr_t *a = find(r, i, id);
    if (!a || (a->st != A_REL && a->st != A_SERIAL))
        return bad(r, "p%d's arrival %llu was released by %s, but %s", i,
                   (unsigned long long)id, how,
                   !a ? "it never counted" : a->st == A_WAIT ? "its generation waits"
                                                             : "it was withdrawn");
    return 0;
}

/* prim/barrier.c's settle: every kept request, oldest first, by a leave
 * of its arrival (never lost here).  *mine: one of thread t's was
 * released. */
static int settle(run_t *r, int i, int t, int *mine)
{
    bproc_t *p = &r->p[i];
    while (p->nkept) {
        kept_t k = p->kept[0];
        int res;
        if (send_leave(r, i, k.arr, k.gen, k.inc, ++p->id, k.op, &res))
            return 1;
        if (res == 2) {
            if (released(r, i, k.arr, "a settle"))
                return 1;
            if (k.thr == t && mine)
                *mine = 1;
        }
        memmove(&p->kept[0], &p->kept[1], (size_t)(p->nkept - 1) * sizeof p->kept[0]);
        p->nkept--;
    }
    return 0;
}

static void keep(bproc_t *p, uint64_t op, uint64_t arr, uint64_t gen, uint64_t inc, int t)
{
    if (p->nkept < MAXPEND)
        p->kept[p->nkept++] = (kept_t){ op, arr, gen, inc, t };
}

/* The held-back request of i runs now; nobody reads its reply. */
static int deliver(run_t *r, int i)
{
    late_t *l = &r->p[i].late;
    if (!l->has)
        return 0;
    l->has = 0;
    r->stale++;
    int res;
    uint64_t gen;
    if (l->what == 'a')
        return send_arrival(r, i, l->arr, r->count, &res, &gen);
    return send_leave(r, i, l->arr, l->gen, l->inc, l->op, 0, &res);
}

/* Thread t of i waits: settles what is kept, then arrives. */
static int op_arrive(run_t *r, int i, int t)
{
    bproc_t *p = &r->p[i];
    bthr_t *h = &p->thr[t];
    if (h->waiting)
        return 0;
    int mine = 0;
    if (settle(r, i, t, &mine))
        return 1;
    if (mine) {
        r->resends++;
        return 0;                 /* its earlier wait completed: this one returns */
    }
    uint64_t id = ++p->id;
    unsigned lost = pick(r, 8) == 0 ? 1 + pick(r, 2) : 0;
    if (lost == 2 && !p->late.has) {
        p->late = (late_t){ 1, 'a', id, id, 0, 0 };
        keep(p, id, id, 0, 0, t);
        return 0;
    }
    int res;
    uint64_t gen;
    if (send_arrival(r, i, id, r->count, &res, &gen))
        return 1;
    if (lost) {
        keep(p, id, id, 0, 0, t);
        return 0;
    }
    if (res == 0)
        *h = (bthr_t){ 1, id, gen, r->inc };
    else if (res == 1 || res == 2)
        return released(r, i, id, "its arrival's reply");
    else
        return bad(r, "p%d thread %d arrival replied %d", i, t, res);
    return 0;
}

/* Thread t of i: its timed wait runs out. */
static int op_timeout(run_t *r, int i, int t)
{
    bproc_t *p = &r->p[i];
    bthr_t *h = &p->thr[t];
    if (!h->waiting)
        return 0;
    if (settle(r, i, -1, NULL))
        return 1;
    h->waiting = 0;
    uint64_t op = ++p->id;
    unsigned lost = pick(r, 8) == 0 ? 1 + pick(r, 2) : 0;
    if (lost == 2 && !p->late.has) {
        p->late = (late_t){ 1, 'l', op, h->id, h->gen, h->inc };
        keep(p, op, h->id, h->gen, h->inc, t);
        return 0;
    }
    int res;
    if (send_leave(r, i, h->id, h->gen, h->inc, op, 0, &res))
        return 1;
    if (lost) {
        keep(p, op, h->id, h->gen, h->inc, t);
        return 0;
    }
    if (res == 2)
        return released(r, i, h->id, "its leave");
    if (res != 1)
        return bad(r, "p%d thread %d: a waiting arrival's leave replied %d", i, t, res);
    return 0;
}

/* One waiting thread of i checks for the process. */
static int op_check(run_t *r, int i)
{
    dl_caller_t w = who(r, i);
    dl_call_t c;
    dl_call_barrier_check(&c, &w);
    if (run_call(r, &c))
        return 1;
    const dl_barrier_check_reply_t *x = &DL_REPLY(&c, barrier_check);
    if (x->result != 1 || x->inc != r->inc || x->gen != r->gen)
        return bad(r, "check replied %d (inc %llu, gen %llu); the model: inc %llu, gen %llu",
                   x->result, (unsigned long long)x->inc, (unsigned long long)x->gen,
                   (unsigned long long)r->inc, (unsigned long long)r->gen);
    for (int t = 0; t < MAXT; t++) {
        bthr_t *h = &r->p[i].thr[t];
        if (h->waiting && h->inc == x->inc && x->gen > h->gen) {
            h->waiting = 0;
            if (released(r, i, h->id, "a check"))
                return 1;
        }
    }
    return 0;
}

/* An arrival of an object with another count: refused, nothing done. */
static int op_other_count(run_t *r, int i)
{
    int res;
    uint64_t gen;
    return send_arrival(r, i, ++r->p[i].id, r->count + 1, &res, &gen);
}

/* Redis against the model: the count, the generation, the arrivals. */
static int check_state(run_t *r)
{
    redisReply *x = redisCommand(r->k.c, "HMGET %b c g n id", r->keys[0], r->lens[0]);
    redisReply *y = redisCommand(r->k.c, "HLEN %b", r->keys[1], r->lens[1]);
    int rc = 0;
    if (!x || !y || x->type != REDIS_REPLY_ARRAY || x->elements != 4 ||
        y->type != REDIS_REPLY_INTEGER) {
        rc = bad(r, "snapshot failed");
    } else {
        long long c = x->element[0]->str ? atoll(x->element[0]->str) : -1;
        unsigned long long g = x->element[1]->str ? strtoull(x->element[1]->str, NULL, 10) : 0;
        long long n = x->element[2]->str ? atoll(x->element[2]->str) : -1;
        if (c != (long long)r->count || g != r->gen || n != r->ncur || y->integer != r->ncur)
            rc = bad(r, "Redis has count %lld, generation %llu, %lld arrivals (%lld listed); the "
                     "model: count %u, generation %llu, %d arrivals", c, g, n, y->integer,
                     r->count, (unsigned long long)r->gen, r->ncur);
    }
    if (x)
        freeReplyObject(x);
    if (y)
        freeReplyObject(y);
    return rc;
}

static int step(run_t *r)
{
    int i = (int)pick(r, (unsigned)r->o->procs);
    int t = (int)pick(r, MAXT);
    unsigned k = pick(r, 100);
    if (k < 8)
        return deliver(r, i);
    if (k < 18)
        return op_check(r, i);
    if (k < 21)
        return op_other_count(r, i);
    if (k < 40)
        return op_timeout(r, i, t);
    return op_arrive(r, i, t);
}

/* Every held-back request delivered, every kept arrival settled, every
 * waiter leaves: no arrival is left. */
static int finish(run_t *r)
{
    for (int i = 0; i < r->o->procs; i++)
        if (deliver(r, i) || settle(r, i, -1, NULL))
            return 1;
    for (int i = 0; i < r->o->procs; i++)
        for (int t = 0; t < MAXT; t++) {
            bthr_t *h = &r->p[i].thr[t];
            if (!h->waiting)
                continue;
            h->waiting = 0;
            int res;
            if (send_leave(r, i, h->id, h->gen, h->inc, ++r->p[i].id, 0, &res))
                return 1;
            if (res == 2 ? released(r, i, h->id, "its leave") : res != 1)
                return bad(r, "p%d thread %d's last leave replied %d", i, t, res);
        }
    if (check_state(r))
        return 1;
    if (r->ncur != 0)
        return bad(r, "%d arrivals left", r->ncur);
    /* Every generation: `count` released, one serial, none withdrawn. */
    for (uint64_t g = r->inc; g < r->gen; g++) {
        int rel = 0, ser = 0;
        for (int a = 0; a < r->narr; a++)
            if (r->arr[a].gen == g) {
                rel += r->arr[a].st == A_REL || r->arr[a].st == A_SERIAL;
                ser += r->arr[a].st == A_SERIAL;
            }
        if ((unsigned)rel != r->count || ser != 1)
            return bad(r, "generation %llu released %d with %d serials", (unsigned long long)g,
                       rel, ser);
    }
    return 0;
}

int pf_barrier_fuzz(const pf_barrier_opts_t *o, int *steps_done, char *why, size_t whylen)
{
    run_t r;
    memset(&r, 0, sizeof r);
    r.o = o;
    r.why = why;
    r.whylen = whylen;
    why[0] = 0;
    *steps_done = 0;
    r.rng = o->seed * 0x9E3779B97F4A7C15ull + 1;
    r.count = o->count;
    char prefix[64];
    snprintf(prefix, sizeof prefix, "pfbar%llu.%d:", (unsigned long long)o->seed, (int)getpid());
    for (int i = 0; i < o->procs && i < MAXP; i++)
        pf_token(i, r.token[i], sizeof r.token[i]);
    r.keybuf = malloc(dl_kind_keys_size(DL_KIND_BARRIER, prefix, 1));
    r.arr = calloc(MAXA, sizeof *r.arr);
    if (!r.keybuf || !r.arr) {
        snprintf(why, whylen, "out of memory");
        free(r.keybuf);
        free(r.arr);
        return -1;
    }
    dl_kind_keys_write(DL_KIND_BARRIER, r.keybuf, prefix, "b", 1, r.keys, r.lens);
    if (pf_conn_open(&r.k, o->host, o->port, prefix, 0)) {
        snprintf(why, whylen, "%s", r.k.err);
        free(r.keybuf);
        free(r.arr);
        return -1;
    }
    int rc = 0;
    /* dist_barrier_init: the barrier made with the count; the model takes
     * its incarnation and first generation from Redis. */
    dl_caller_t w = who(&r, 0);
    dl_call_t c;
    dl_call_barrier_open(&c, &w, &(dl_barrier_open_args_t){ .count = r.count, .idle_ms = 1000 });
    if (run_call(&r, &c) || DL_REPLY(&c, barrier_open).result != 1)
        rc = rc ? rc : bad(&r, "barrier_open replied %d", DL_REPLY(&c, barrier_open).result);
    dl_call_barrier_check(&c, &w);
    if (!rc && (run_call(&r, &c) || DL_REPLY(&c, barrier_check).result != 1))
        rc = rc ? rc : bad(&r, "the first check replied %d", DL_REPLY(&c, barrier_check).result);
    r.inc = DL_REPLY(&c, barrier_check).inc;
    r.gen = DL_REPLY(&c, barrier_check).gen;
    if (!rc && r.gen != r.inc)
        rc = bad(&r, "a new barrier's generation %llu is not its incarnation %llu",
                 (unsigned long long)r.gen, (unsigned long long)r.inc);
    int64_t end = o->max_ms > 0 ? now_ms() + o->max_ms : 0;
    for (r.step = 0; r.step < o->steps && !rc; r.step++) {
        if (end && now_ms() > end)
            break;
        rc = step(&r) || check_state(&r);
        if (o->trace)
            fprintf(o->trace, "step %d: generation %llu, %d arrivals\n", r.step,
                    (unsigned long long)(r.gen - r.inc), r.ncur);
    }
    *steps_done = r.step;
    if (!rc)
        rc = finish(&r);
    if (!rc && o->trace)
        fprintf(o->trace, "%ld generations, %ld withdrawn, %ld continued, %ld held back\n",
                r.trips, r.withdrawn, r.resends, r.stale);
    pf_conn_close(&r.k);
    free(r.keybuf);
    free(r.arr);
    return rc;
}
