/* SPDX-License-Identifier: BSD-3-Clause */
/* pf_cond.c - the condition scripts' model, ops and invariants (pf_cond.h). */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "call_cond_check.h"
#include "call_cond_enter.h"
#include "call_cond_leave.h"
#include "call_cond_signal.h"
#include "pf_cond.h"
#include "pf_model.h"      /* PF_MARGIN_MS */
#include "pf_redis.h"
#include "script.h"

enum { C_ENTER, C_SIGNAL, C_BROADCAST, C_CHECK, C_LEAVE, C_DELIVER, C_DROP, C_SLEEP, C_DIE,
       C_NKINDS };
static const char *const c_name[C_NKINDS] = {
    "enter", "signal", "broadcast", "check", "leave", "deliver", "drop", "sleep", "dies",
};
/* Enters and the ways a waiter ends dominate; deaths are rare (each turns
 * a process's waiters into orphans that must lapse). */
static const int c_weight[C_NKINDS] = { 20, 12, 4, 14, 8, 14, 3, 8, 2 };
static const int c_sleeps[] = { 1, 5, 20, 50, 120 };
static const int c_ttls[] = { 30, 60, 120, 250 };

#define SLOTS 3            /* waiting threads per process */
#define TRACE 48           /* steps printed before a failure */

typedef struct creg {      /* a registration, by regid, per process */
    enum { R_NONE, R_WAIT, R_TAKEN, R_GONE } st;
    uint64_t order;        /* entered at this step of the run (FIFO) */
    int64_t lo, hi;        /* its deadline lies within [lo, hi] (local ms) */
    int orphan;            /* its process died: nobody checks or leaves it */
} creg_t;

typedef struct cproc {
    int ttl;
    uint64_t regseq;
    creg_t *reg;           /* indexed by regid, steps + 2 of them */
    uint64_t slot[SLOTS];  /* waiting threads: their regid, 0 free */
    uint64_t inbox[16];    /* pushes not read yet: the regid they name */
    int ninbox;
} cproc_t;

typedef struct crun {
    const pf_opts_t *o;
    pf_conn_t k;
    char key[2][120];
    size_t keylen[2];
    int np, step;
    cproc_t p[PF_MAX_PROCS];
    pf_fail_t *fail;
    char line[512];
    char trace[TRACE][512];
    long pushes, signals, woken, lapsed;
} crun_t;

static uint64_t next(uint64_t *s)      /* splitmix64, as pf_fuzz.c */
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static int failf(crun_t *r, const char *what, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int failf(crun_t *r, const char *what, const char *fmt, ...)
{
    if (r->fail->step >= 0)
        return 1;
    r->fail->step = r->step;
    snprintf(r->fail->what, sizeof r->fail->what, "%s", what);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->fail->msg, sizeof r->fail->msg, fmt, ap);
    va_end(ap);
    return 1;
}

static void linef(crun_t *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void linef(crun_t *r, const char *fmt, ...)
{
    size_t at = strlen(r->line);
    if (at >= sizeof r->line - 1)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->line + at, sizeof r->line - at, fmt, ap);
    va_end(ap);
}

static int64_t now_hi(void)
{
    return (pf_now_us() + 999) / 1000;
}

/* Surely alive at `at`: its deadline is after at, with a margin. */
static int surely_live(const creg_t *g, int64_t at)
{
    return g->st == R_WAIT && g->lo > at + PF_MARGIN_MS;
}

static int surely_lapsed(const creg_t *g, int64_t at)
{
    return g->hi + PF_MARGIN_MS < at;
}

/* ------------------------------------------------------------- the calls */

/* Runs the call as the library sends it: EVALSHA (EVAL when the server
 * lacks the script), its keys declared both (one server, sentinel,
 * cluster) or the first only (a cluster ASK: the script derives the
 * other), drawn from `form`. */
static redisReply *run(crun_t *r, dl_call_t *c, unsigned form)
{
    for (int pass = 0; pass < 2; pass++) {
        dl_script_argv(c, !pass);
        if (form % 2 && c->argvlen[2] == 1 && c->argv[2][0] == '2') {
            memmove(&c->argv[4], &c->argv[5], (size_t)(c->argc - 5) * sizeof c->argv[0]);
            memmove(&c->argvlen[4], &c->argvlen[5], (size_t)(c->argc - 5) * sizeof c->argvlen[0]);
            c->argv[2] = "1";
            c->argc--;
        }
        redisReply *x = redisCommandArgv(r->k.c, c->argc, c->argv, c->argvlen);
        if (!x) {
            failf(r, "infrastructure", "connection: %s", r->k.c->errstr);
            return NULL;
        }
        if (x->type == REDIS_REPLY_ERROR && !pass && strncmp(x->str, "NOSCRIPT", 8) == 0) {
            freeReplyObject(x);
            continue;
        }
        if (x->type != REDIS_REPLY_INTEGER) {
            failf(r, "script-error", "%s: %s", dl_scripts[c->script].name,
                  x->type == REDIS_REPLY_ERROR ? x->str : "not an integer reply");
            freeReplyObject(x);
            return NULL;
        }
        return x;
    }
    return NULL;
}

/* enter | check | leave | signal ('s') | broadcast ('a') of process i.
 * The integer reply, or -1 (failure recorded). */
static long long call(crun_t *r, int script, int i, uint64_t regid)
{
    char token[16];
    pf_token(i, token, sizeof token);
    const char *keys[2] = { r->key[0], r->key[1] };
    dl_caller_t who = { keys, r->keylen, r->k.chan, strlen(r->k.chan), token };
    unsigned long ttl = (unsigned long)r->p[i].ttl;
    dl_call_t c;
    switch (script) {
    case C_ENTER:
        dl_call_cond_enter(&c, &who, &(dl_cond_enter_args_t){ .regid = regid, .ttl_ms = ttl });
        break;
    case C_CHECK:
        dl_call_cond_check(&c, &who, &(dl_cond_check_args_t){ .regid = regid, .ttl_ms = ttl });
        break;
    case C_LEAVE:
        dl_call_cond_leave(&c, &who, &(dl_cond_leave_args_t){ .regid = regid });
        break;
    default:
        dl_call_cond_signal(&c, &who, &(dl_cond_signal_args_t){ .all = script == C_BROADCAST });
        break;
    }
    redisReply *x = run(r, &c, (unsigned)(i * 7 + script * 3) + (unsigned)regid + (unsigned)r->step);
    if (!x)
        return -1;
    long long v = x->integer;
    freeReplyObject(x);
    linef(r, " -> %lld", v);
    return v;
}

/* ---------------------------------------------------------------- pushes */

/* Reads what the step published: each push must name a registration of its
 * process that was waiting and not surely lapsed at the signal (t0: its
 * sending).  The count of pushes, -1 on failure. */
static int drain(crun_t *r, int64_t t0, uint64_t *first_order)
{
    pf_msg_t m[64];
    int n = pf_drain(&r->k, m, 64);
    if (n < 0)
        return failf(r, "infrastructure", "%s", r->k.err), -1;
    int count = 0;
    for (int j = 0; j < n; j++) {
        unsigned long long regid;
        char key[160];
        if (m[j].proc < 0 || m[j].proc >= r->np ||
            sscanf(m[j].text, "k %llu %159s", &regid, key) != 2 || strcmp(key, r->key[0]) != 0) {
            failf(r, "push-format", "unexpected push \"%s\"", m[j].text);
            return -1;
        }
        count++;
        r->pushes++;
        cproc_t *p = &r->p[m[j].proc];
        linef(r, " [push to p%d: regid %llu]", m[j].proc, regid);
        creg_t *g = regid <= p->regseq ? &p->reg[regid] : NULL;
        if (!g || g->st != R_WAIT) {
            failf(r, "wake-unknown", "p%d's registration %llu was woken, but it was %s", m[j].proc,
                  regid, !g || g->st == R_NONE ? "never made" : g->st == R_TAKEN ?
                  "woken already" : "gone (left, or checked out)");
            return -1;
        }
        if (surely_lapsed(g, t0)) {
            failf(r, "woke-lapsed", "p%d's registration %llu was woken %lld ms after its deadline",
                  m[j].proc, regid, (long long)(t0 - g->hi));
            return -1;
        }
        g->st = R_TAKEN;
        if (first_order && (!*first_order || g->order < *first_order))
            *first_order = g->order;
        if (!g->orphan && p->ninbox < 16)
            p->inbox[p->ninbox++] = regid;
    }
    return count;
}

/* ------------------------------------------------------------------- ops */

static void free_slot(cproc_t *p, uint64_t regid)
{
    for (int s = 0; s < SLOTS; s++)
        if (p->slot[s] == regid)
            p->slot[s] = 0;
}

/* The op's waiter of process i: one of its waiting threads, chosen by sel
 * (0 none). */
static uint64_t pick(const cproc_t *p, unsigned sel)
{
    for (int s = 0; s < SLOTS; s++) {
        uint64_t id = p->slot[(sel + (unsigned)s) % SLOTS];
        if (id)
            return id;
    }
    return 0;
}

static int op_enter(crun_t *r, int i, int64_t t0)
{
    cproc_t *p = &r->p[i];
    int s = 0;
    while (s < SLOTS && p->slot[s])
        s++;
    if (s == SLOTS)
        return 0;
    uint64_t id = ++p->regseq;
    linef(r, "p%d enter regid %llu", i, (unsigned long long)id);
    long long v = call(r, C_ENTER, i, id);
    if (v < 0)
        return 1;
    if (v != 1)
        return failf(r, "script-error", "cond_enter replied %lld", v);
    p->reg[id] = (creg_t){ R_WAIT, (uint64_t)r->step + 1, t0 + p->ttl, now_hi() + p->ttl, 0 };
    p->slot[s] = id;
    return 0;
}

static int op_signal(crun_t *r, int i, int all, int64_t t0)
{
    linef(r, "p%d %s", i, all ? "broadcast" : "signal");
    r->signals++;
    long long v = call(r, all ? C_BROADCAST : C_SIGNAL, i, 0);
    if (v < 0)
        return 1;
    int64_t t1 = now_hi();
    uint64_t first = 0;
    /* Before the pushes mark them taken: who surely waited as it ran. */
    uint64_t live_order[PF_MAX_PROCS * 64];
    int nl = 0;
    struct { int q; uint64_t id; } live[PF_MAX_PROCS * 64];
    for (int q = 0; q < r->np; q++)
        for (uint64_t id = 1; id <= r->p[q].regseq; id++)
            if (surely_live(&r->p[q].reg[id], t1) && nl < (int)(sizeof live / sizeof live[0])) {
                live[nl].q = q;
                live[nl].id = id;
                live_order[nl++] = r->p[q].reg[id].order;
            }
    int n = drain(r, t0, &first);
    if (n < 0)
        return 1;
    r->woken += n;
    if (n != v || (!all && n > 1))
        return failf(r, "reply-count", "%s replied %lld and pushed %d wake-ups",
                     all ? "broadcast" : "signal", v, n);
    if (nl && n == 0)
        return failf(r, "lost-signal", "%s woke nobody; %d waiter(s) surely waited",
                     all ? "broadcast" : "signal", nl);
    for (int j = 0; j < nl; j++) {
        const creg_t *g = &r->p[live[j].q].reg[live[j].id];
        if (all && g->st == R_WAIT)
            return failf(r, "broadcast-missed", "broadcast left p%d's registration %llu waiting",
                         live[j].q, (unsigned long long)live[j].id);
        if (!all && n == 1 && g->st == R_WAIT && live_order[j] < first)
            return failf(r, "signal-order", "signal woke a waiter that entered at step %llu; "
                         "p%d's registration %llu, entered at step %llu, surely waited",
                         (unsigned long long)first, live[j].q, (unsigned long long)live[j].id,
                         (unsigned long long)live_order[j]);
    }
    return 0;
}

/* check (refresh) or leave (a timed wait ran out) of one waiting thread. */
static int op_check_leave(crun_t *r, int i, int leave, unsigned sel, int64_t t0)
{
    cproc_t *p = &r->p[i];
    uint64_t id = pick(p, sel);
    if (!id)
        return 0;
    creg_t *g = &p->reg[id];
    int was = g->st;
    int lapsed = surely_lapsed(g, t0);
    linef(r, "p%d %s regid %llu (%s)", i, leave ? "leave" : "check", (unsigned long long)id,
          was == R_TAKEN ? "signalled" : "waiting");
    long long v = call(r, leave ? C_LEAVE : C_CHECK, i, id);
    if (v < 0)
        return 1;
    if (v != 0 && v != 1)
        return failf(r, "script-error", "%s replied %lld", leave ? "leave" : "check", v);
    int live = surely_live(g, now_hi());      /* it ran before its reply came */
    if (was == R_TAKEN && v == 1)
        return failf(r, leave ? "signal-lost-on-leave" : "taken-still-registered",
                     "p%d's registration %llu was taken by a signal, and %s said it still waited",
                     i, (unsigned long long)id, leave ? "leave" : "check");
    if (was == R_WAIT && live && v == 0)
        return failf(r, "live-dropped", "%s found p%d's registration %llu gone %lld ms before "
                     "its deadline", leave ? "leave" : "check", i, (unsigned long long)id,
                     (long long)(g->lo - t0));
    if (!leave && was == R_WAIT && lapsed && v == 1)
        return failf(r, "lapsed-revived", "check kept p%d's registration %llu, %lld ms past its "
                     "deadline", i, (unsigned long long)id, (long long)(t0 - g->hi));
    if (!leave && v == 1) {
        g->lo = t0 + p->ttl;
        g->hi = now_hi() + p->ttl;
        return 0;
    }
    /* The thread returns: woken (0 after a signal), spuriously (lapsed), or
     * by its time running out (leave 1).  A push still on its way is read
     * by nobody. */
    if (was == R_WAIT && v == 0)
        r->lapsed++;
    g->st = R_GONE;
    free_slot(p, id);
    for (int j = 0; j < p->ninbox; j++)
        if (p->inbox[j] == id) {
            memmove(p->inbox + j, p->inbox + j + 1, (size_t)(p->ninbox - j - 1) * sizeof p->inbox[0]);
            p->ninbox--;
            j--;
        }
    return 0;
}

static int op_deliver(crun_t *r, int i, int lose)
{
    cproc_t *p = &r->p[i];
    if (!p->ninbox)
        return 0;
    uint64_t id = p->inbox[0];
    memmove(p->inbox, p->inbox + 1, (size_t)(p->ninbox - 1) * sizeof p->inbox[0]);
    p->ninbox--;
    linef(r, "p%d %s the push for regid %llu", i, lose ? "loses" : "reads", (unsigned long long)id);
    if (!lose) {          /* the thread wakes; its registration is gone already */
        p->reg[id].st = R_GONE;
        free_slot(p, id);
    }
    return 0;
}

static int op_die(crun_t *r, int i)
{
    cproc_t *p = &r->p[i];
    int any = 0;
    for (int s = 0; s < SLOTS; s++)
        any |= p->slot[s] != 0;
    if (!any)
        return 0;
    /* Its waiters are never heard from again; the process number goes on
     * as a new process (a new token would change nothing the scripts see). */
    linef(r, "p%d dies with its waiters", i);
    for (int s = 0; s < SLOTS; s++)
        if (p->slot[s]) {
            p->reg[p->slot[s]].orphan = 1;
            p->slot[s] = 0;
        }
    p->ninbox = 0;
    return 0;
}

/* ------------------------------------------------------------- snapshot */

/* The two keys against the model: every member of the condition has a
 * deadline and is a registration that waits; every surely live one there; a TTL on them. */
static int check_keys(crun_t *r, int64_t t0)
{
    redisReply *x = redisCommand(r->k.c, "EVAL %s 2 %b %b",
                                 "return {redis.call('ZRANGE', KEYS[1], 0, -1), "
                                 "redis.call('ZRANGE', KEYS[2], 0, -1), "
                                 "redis.call('PTTL', KEYS[1]), redis.call('PTTL', KEYS[2])}",
                                 r->key[0], r->keylen[0], r->key[1], r->keylen[1]);
    if (!x || x->type != REDIS_REPLY_ARRAY || x->elements != 4) {
        failf(r, "infrastructure", "snapshot: %s", x ? x->type == REDIS_REPLY_ERROR ? x->str : "?"
                                                     : r->k.c->errstr);
        if (x)
            freeReplyObject(x);
        return 1;
    }
    const redisReply *a = x->element[0], *b = x->element[1];
    int bad = 0;
    /* (The deadlines' key may hold a member the condition's has not: the
     * two expire together, but PEXPIRE counts from each call, so at the
     * very end the deadlines outlive the condition by a millisecond, with
     * lapsed registrations only: live-missing below judges that.) */
    for (size_t j = 0; !bad && j < a->elements; j++) {
        int q = -1;
        unsigned long long id = 0;
        char t[16];
        if (sscanf(a->element[j]->str, "%15[^:]:%llu", t, &id) != 2 ||
            (q = pf_token_proc(t, strlen(t))) < 0 || q >= r->np || id == 0 || id > r->p[q].regseq) {
            bad = failf(r, "ghost-registration", "a member not ours: \"%s\"", a->element[j]->str);
            break;
        }
        int inb = 0;
        for (size_t h = 0; h < b->elements; h++)
            inb |= strcmp(b->element[h]->str, a->element[j]->str) == 0;
        const creg_t *g = &r->p[q].reg[id];
        if (!inb)
            bad = failf(r, "ghost-registration", "\"%s\" has no deadline", a->element[j]->str);
        else if (g->st != R_WAIT)
            bad = failf(r, "ghost-registration", "p%d's registration %llu is still listed, but it "
                        "was %s", q, id, g->st == R_TAKEN ? "woken" : "gone");
    }
    int64_t t1 = now_hi();
    for (int q = 0; !bad && q < r->np; q++)
        for (uint64_t id = 1; !bad && id <= r->p[q].regseq; id++) {
            if (!surely_live(&r->p[q].reg[id], t1))
                continue;
            char m[48];
            snprintf(m, sizeof m, "t%d:%llu", q, (unsigned long long)id);
            int found = 0;
            for (size_t j = 0; j < a->elements; j++)
                found |= strcmp(a->element[j]->str, m) == 0;
            if (!found)
                bad = failf(r, "live-missing", "p%d's registration %llu, %lld ms before its "
                            "deadline, is not listed", q, (unsigned long long)id,
                            (long long)(r->p[q].reg[id].lo - t1));
        }
    if (!bad && a->elements && (x->element[2]->integer < 0 || x->element[3]->integer < 0))
        bad = failf(r, "no-expiry", "the keys hold %zu registrations, PTTL %lld and %lld",
                    a->elements, x->element[2]->integer, x->element[3]->integer);
    (void)t0;
    freeReplyObject(x);
    return bad;
}

/* ------------------------------------------------------------------- run */

static int step(crun_t *r, int kind, int i, unsigned sel, int ms)
{
    int64_t t0 = pf_now_ms();
    r->line[0] = 0;
    int rc = 0;
    switch (kind) {
    case C_ENTER: rc = op_enter(r, i, t0); break;
    case C_SIGNAL: rc = op_signal(r, i, 0, t0); break;
    case C_BROADCAST: rc = op_signal(r, i, 1, t0); break;
    case C_CHECK: rc = op_check_leave(r, i, 0, sel, t0); break;
    case C_LEAVE: rc = op_check_leave(r, i, 1, sel, t0); break;
    case C_DELIVER: rc = op_deliver(r, i, 0); break;
    case C_DROP: rc = op_deliver(r, i, 1); break;
    case C_DIE: rc = op_die(r, i); break;
    case C_SLEEP:
        linef(r, "sleep %d ms", ms);
        usleep((useconds_t)ms * 1000);
        break;
    }
    if (!rc && kind != C_SIGNAL && kind != C_BROADCAST && drain(r, t0, NULL) > 0)
        rc = failf(r, "wake-unknown", "a push nobody sent a signal for");
    if (!rc && r->line[0])
        rc = check_keys(r, t0);
    if (!r->line[0])
        snprintf(r->line, sizeof r->line, "(%s: applies to nobody)", c_name[kind]);
    snprintf(r->trace[r->step % TRACE], sizeof r->trace[0], "%s", r->line);
    if (r->o->verbose && r->o->out)
        fprintf(r->o->out, "  %5d. %s\n", r->step + 1, r->line);
    return rc;
}

int pf_cond_fuzz(const pf_opts_t *o, int *steps_done, pf_fail_t *fail)
{
    FILE *out = o->out ? o->out : stderr;
    memset(fail, 0, sizeof *fail);
    fail->step = -1;
    crun_t *r = calloc(1, sizeof *r);
    if (!r)
        return -1;
    r->o = o;
    r->fail = fail;
    r->np = o->procs < 2 ? 2 : o->procs > PF_MAX_PROCS ? PF_MAX_PROCS : o->procs;
    char prefix[64];
    snprintf(prefix, sizeof prefix, "pfc:%d:%llu:", (int)getpid(), (unsigned long long)o->seed);
    if (pf_conn_open(&r->k, o->host, o->port, prefix, 0)) {
        snprintf(fail->what, sizeof fail->what, "infrastructure");
        snprintf(fail->msg, sizeof fail->msg, "%s", r->k.err);
        free(r);
        return -1;
    }
    r->keylen[0] = (size_t)snprintf(r->key[0], sizeof r->key[0], "%s{C}", prefix);
    r->keylen[1] = (size_t)snprintf(r->key[1], sizeof r->key[1], "%s{C}:d", prefix);
    uint64_t s = o->seed ^ 0xC0DDull;
    int total = 0;
    for (int k = 0; k < C_NKINDS; k++)
        total += c_weight[k];
    for (int i = 0; i < r->np; i++) {
        r->p[i].ttl = c_ttls[next(&s) % (sizeof c_ttls / sizeof c_ttls[0])];
        r->p[i].reg = calloc((size_t)o->steps + 2, sizeof *r->p[i].reg);
        if (!r->p[i].reg)
            abort();
    }
    int rc = 0;
    int64_t start = pf_now_ms();
    for (r->step = 0; r->step < o->steps; r->step++) {
        uint64_t x = next(&s), y = next(&s);
        int w = (int)(x % (uint64_t)total), k = 0;
        while (w >= c_weight[k])
            w -= c_weight[k++];
        int i = (int)((x >> 20) % (uint64_t)r->np);
        rc = step(r, k, i, (unsigned)(y & 0xff),
                  c_sleeps[(y >> 8) % (sizeof c_sleeps / sizeof c_sleeps[0])]);
        if (rc || (o->max_ms > 0 && pf_now_ms() - start >= o->max_ms))
            break;
    }
    *steps_done = r->step + (rc ? 1 : 0);
    fail->steps_run = *steps_done;
    if (rc) {
        int from = r->step + 1 > TRACE ? r->step + 1 - TRACE : 0;
        fprintf(out, "protofuzz (conditions): FAILED: seed %llu, %d processes, step %d: %s: %s\n"
                "protofuzz (conditions): ttl (ms):", (unsigned long long)o->seed, r->np,
                r->step + 1, fail->what, fail->msg);
        for (int i = 0; i < r->np; i++)
            fprintf(out, " p%d %d", i, r->p[i].ttl);
        fprintf(out, "; the last steps:\n");
        for (int j = from; j <= r->step; j++)
            fprintf(out, "  %5d. %s\n", j + 1, r->trace[j % TRACE]);
        fprintf(out, "protofuzz (conditions): replay with --cond --seed %llu --steps %d --procs %d "
                "--verbose\n", (unsigned long long)o->seed, r->step + 1, r->np);
    } else if (out && o->verbose) {
        fprintf(out, "protofuzz (conditions): %ld signals, %ld waiters woken, %ld pushes, "
                "%ld registrations lapsed\n", r->signals, r->woken, r->pushes, r->lapsed);
    }
    redisReply *d = redisCommand(r->k.c, "DEL %s %s", r->key[0], r->key[1]);
    if (d)
        freeReplyObject(d);
    pf_conn_close(&r->k);
    for (int i = 0; i < r->np; i++)
        free(r->p[i].reg);
    free(r);
    return rc ? (strcmp(fail->what, "infrastructure") == 0 ? -1 : 1) : 0;
}
