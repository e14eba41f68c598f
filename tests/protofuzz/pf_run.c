/* SPDX-License-Identifier: BSD-3-Clause */
/* pf_run.c - runs an op list step by step: each op is resolved against the
 * processes' state (an op that applies to nobody is skipped), its script
 * calls are made (or held back), pushes are read, and pf_check() judges
 * the result. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "pf_model.h"

int64_t pf_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int64_t pf_now_ms(void)
{
    return pf_now_us() / 1000;
}

/* An upper bound of "now" in ms (pf_now_ms rounds down). */
static int64_t now_ms_hi(void)
{
    return (pf_now_us() + 999) / 1000;
}

int pf_failf(pf_run_t *r, const char *what, const char *fmt, ...)
{
    if (r->fail->step >= 0)
        return 1;                 /* the first violation of a step is reported */
    if (r->o->only && strcmp(r->o->only, what) != 0 && strcmp(what, "infrastructure") != 0)
        return 0;
    r->fail->step = r->step;
    snprintf(r->fail->what, sizeof r->fail->what, "%s", what);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->fail->msg, sizeof r->fail->msg, fmt, ap);
    va_end(ap);
    return 1;
}

void pf_linef(pf_run_t *r, const char *fmt, ...)
{
    size_t at = strlen(r->line);
    if (at >= sizeof r->line - 1)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->line + at, sizeof r->line - at, fmt, ap);
    va_end(ap);
}

pf_reqinfo_t *pf_reqinfo(pf_run_t *r, int proc, uint64_t regid)
{
    pf_proc_t *p = &r->p[proc];
    if (regid >= p->nri) {
        size_t n = p->nri ? p->nri : 64;
        while (n <= regid)
            n *= 2;
        pf_reqinfo_t *v = realloc(p->ri, n * sizeof *v);
        if (!v)
            abort();
        memset(v + p->nri, 0, (n - p->nri) * sizeof *v);
        p->ri = v;
        p->nri = n;
    }
    return &p->ri[regid];
}

static long long elem(const redisReply *x, size_t i)
{
    if (!x || x->type != REDIS_REPLY_ARRAY || i >= x->elements ||
        x->element[i]->type != REDIS_REPLY_INTEGER)
        return -1;
    return x->element[i]->integer;
}

static void grant_seen(pf_run_t *r, int proc, char mode, uint64_t fence, const char *how)
{
    r->st.grants++;
    pf_note_fence(r, proc, mode, fence, how);
    if (r->ng < (int)(sizeof r->g / sizeof r->g[0]))
        r->g[r->ng++] = (pf_grant_t){ proc, mode, fence, how, r->unread };
}

/* Makes one call and records what any reply reports (fences, grants):
 * the fuzzer sees every reply, even those its process never reads.  The
 * reply, or NULL after recording the failure. */
static redisReply *call(pf_run_t *r, const pf_req_t *q, const char *why)
{
    r->st.calls++;
    redisReply *x = pf_call(&r->k, q);
    if (!x) {
        pf_failf(r, r->k.c->err ? "infrastructure" : "script-error", "%s (%s by p%d)", r->k.err,
                 why, q->proc);
        return NULL;
    }
    if ((q->script == PF_S_ACQUIRE || q->script == PF_S_CANCEL) && elem(x, 0) == 1) {
        int claimed = elem(x, 4) == 1;
        static const char *how[2][3] = {
            { "acquire reply", "acquire reply (mine)", "cancel reply" },
            { "reply to a held-back acquire", "reply to a held-back acquire (mine)",
              "reply to a held-back cancel" },
        };
        grant_seen(r, q->proc, q->mode, (uint64_t)elem(x, 1),
                   how[r->unread][q->script == PF_S_CANCEL ? 2 : claimed]);
    }
    if (q->script == PF_S_ACQUIRE && q->regid)
        pf_reqinfo(r, q->proc, q->regid)->t_ran = now_ms_hi();
    return x;
}

static const char *reply_str(const redisReply *x, char *buf, size_t size)
{
    if (!x)
        return "-";
    if (x->type == REDIS_REPLY_INTEGER) {
        snprintf(buf, size, "%lld", x->integer);
        return buf;
    }
    if (x->type == REDIS_REPLY_NIL)
        return "nil";
    if (x->type != REDIS_REPLY_ARRAY)
        return "?";
    size_t at = 0;
    buf[0] = 0;
    for (size_t i = 0; i < x->elements && at < size; i++)
        at += (size_t)snprintf(buf + at, size - at, "%s%lld", i ? "," : "{",
                               x->element[i]->type == REDIS_REPLY_INTEGER ? x->element[i]->integer : -1);
    if (at < size)
        snprintf(buf + at, size - at, "}");
    return buf;
}

static pf_req_t req(const pf_run_t *r, int script, int proc, char mode)
{
    const pf_proc_t *p = &r->p[proc];
    pf_req_t q = { script, proc, mode, 0, 0, 0, p->lease, p->wttl, p->claim, r->o->redlock, 0,
                   PF_L_MAIN, 0 };
    return q;
}

static void limbo_add(pf_run_t *r, int proc, const pf_req_t *a, const pf_req_t *b)
{
    pf_proc_t *p = &r->p[proc];
    if (p->nlimbo == PF_LIMBO) {  /* the oldest never reaches the server */
        memmove(p->limbo, p->limbo + 1, (PF_LIMBO - 1) * sizeof p->limbo[0]);
        p->nlimbo--;
    }
    pf_unit_t *u = &p->limbo[p->nlimbo++];
    u->r[0] = *a;
    u->n = 1;
    if (b)
        u->r[u->n++] = *b;
    r->st.lost++;
}

static void abandon(pf_run_t *r, int proc, char mode, uint64_t regid)
{
    pf_proc_t *p = &r->p[proc];
    if (p->nab == PF_ABANDONED) {
        memmove(p->ab, p->ab + 1, (PF_ABANDONED - 1) * sizeof p->ab[0]);
        p->nab--;
    }
    p->ab[p->nab].mode = mode;
    p->ab[p->nab].regid = regid;
    p->ab[p->nab].checks = 2;     /* watchdog.c: looks once more later */
    p->nab++;
}

/* A hold the process now believes in. */
static void believe(pf_run_t *r, int proc, char mode, uint64_t fence, uint64_t rid, int64_t until)
{
    pf_hold_t *h = &r->p[proc].hold;
    h->has = 1;
    h->mode = mode;
    h->fence = fence;
    h->rid = rid;
    h->valid_until = until;
    h->lost = 0;
    h->cut = 0;
}

static int hold_valid(const pf_hold_t *h, int64_t at)
{
    return h->has && !h->lost && h->valid_until > at + PF_MARGIN_MS;
}

static int applies(const pf_run_t *r, const pf_op_t *op, int i)
{
    const pf_proc_t *p = &r->p[i];
    switch (op->kind) {
    case PF_ACQ: return !p->hold.has && !p->wait.active;
    case PF_ALL: return !p->hold.has && !p->wait.active && !p->comp.has;
    case PF_REASK:
    case PF_DIE:
    case PF_CANCEL: return p->wait.active;
    case PF_RELEASE: return p->hold.has;
    case PF_RENEW: return p->hold.has && !p->hold.lost;
    case PF_MARK: return p->hold.has && !p->hold.lost && p->hold.mode == 'w';
    case PF_UNDO: return p->nab > 0 && !p->hold.has && !p->wait.active;
    case PF_DELIVER:
    case PF_DROP: return p->ninbox > 0;
    case PF_STALE: return p->nlimbo > 0;
    default: return 1;
    }
}

static const char *kind_name[PF_NKINDS] = {
    "acquire", "reask", "cancel", "release", "renew", "undo", "break",
    "deliver", "drop", "stale", "sleep", "mark", "dies", "lock-all",
};

static const char *lost_name(int lost)
{
    return lost == PF_LOST_UNDO ? " (lost, its withdrawal behind it)" : lost == PF_LOST ? " (lost)" : "";
}

/* Reads the pushes the step published: grants go to their process's inbox
 * (whether it reads them is another op), each checked for its mode and its
 * registration's deadline. */
static int drain(pf_run_t *r, int64_t t0)
{
    pf_msg_t m[64];
    int n = pf_drain(&r->k, m, 64);
    if (n < 0)
        return -1;
    for (int i = 0; i < n; i++) {
        unsigned long long regid, fence;
        int dead, more;
        if (m[i].text[0] != 'g')
            continue;             /* "w KEY": someone waits; not modelled */
        if (m[i].proc < 0 || m[i].proc >= r->np ||
            sscanf(m[i].text, "g %llu %llu %d %d", &regid, &fence, &dead, &more) != 4) {
            pf_failf(r, "push-format", "unexpected push \"%s\"", m[i].text);
            continue;
        }
        r->st.pushes++;
        pf_proc_t *p = &r->p[m[i].proc];
        pf_reqinfo_t *ri = pf_reqinfo(r, m[i].proc, regid);
        pf_linef(r, " [push to p%d: regid %llu fence %llu]", m[i].proc, regid, fence);
        if (!ri->mode) {
            pf_failf(r, "grant-unknown", "p%d was granted registration %llu, which it never sent",
                     m[i].proc, regid);
            continue;
        }
        ri->pushed = 1;
        grant_seen(r, m[i].proc, ri->mode, fence, "pushed grant");
        /* The registration lived until at most its acquire's reply plus
         * its ttl: a grant after that went to a waiter that may be gone. */
        if (ri->t_ran && t0 > ri->t_ran + p->wttl + PF_MARGIN_MS)
            pf_failf(r, "grant-past-deadline",
                     "p%d's registration %llu was granted %lld ms after it ran out",
                     m[i].proc, regid, (long long)(t0 - ri->t_ran - p->wttl));
        if (p->ninbox == PF_INBOX) {
            memmove(p->inbox, p->inbox + 1, (PF_INBOX - 1) * sizeof p->inbox[0]);
            p->ninbox--;
        }
        p->inbox[p->ninbox++] = (pf_push_t){ regid, fence, t0, 0 };
    }
    return 0;
}

/* The ops.  Each returns 0, or 1 when a call failed (recorded). */

/* redlock mode: the snapshot before a call whose reply pf_check judges
 * against the mark (a read acquire, a renew). */
static int mark_pre(pf_run_t *r, int kind, int proc)
{
    if (!r->o->redlock)
        return 0;
    if (pf_snapshot(&r->k, &r->mk.pre)) {
        pf_failf(r, "infrastructure", "%s", r->k.err);
        return 1;
    }
    r->mk.kind = kind;
    r->mk.proc = proc;
    return 0;
}

/* redlock mode: what an acquire's reply says of the mark. */
static void mark_acquired(pf_run_t *r, int proc, char mode, const redisReply *x)
{
    if (!r->o->redlock)
        return;
    r->mk.reply = elem(x, 0);
    r->mk.left = elem(x, 1);
    if (mode == 'w' && r->mk.reply == 1) {
        r->mk.kind = PF_MK_CLEARED;
        r->mk.proc = proc;
    }
}

/* Sends acquire q of process i (sent at t0) and reads its reply; a hold
 * it acquired is believed (one found ours already: validity unknown).
 * NULL: the run cannot go on. */
static redisReply *acquire_call(pf_run_t *r, int i, const pf_req_t *q, int64_t t0)
{
    if (q->mode == 'r' && mark_pre(r, PF_MK_READ, i))
        return NULL;
    redisReply *x = call(r, q, "acquire");
    if (!x)
        return NULL;
    char b[96];
    pf_linef(r, " -> %s", reply_str(x, b, sizeof b));
    mark_acquired(r, i, q->mode, x);
    if (elem(x, 0) == 1) {
        int claimed = elem(x, 4) == 1;
        believe(r, i, q->mode, (uint64_t)elem(x, 1), q->regid, claimed ? 0 : t0 + r->p[i].lease);
    }
    return x;
}

static int op_acquire(pf_run_t *r, const pf_op_t *op, int i, int64_t t0)
{
    pf_proc_t *p = &r->p[i];
    pf_req_t q = req(r, PF_S_ACQUIRE, i, (char)op->mode);
    q.enqueue = op->enqueue;
    if (q.redlock) {              /* no queue: a request that will wait retries */
        q.enqueue = 0;
        q.mark = op->enqueue ? p->mttl : 0;
    }
    q.regid = ++p->regseq;
    pf_reqinfo_t *ri = pf_reqinfo(r, i, q.regid);
    ri->mode = q.mode;
    ri->t_send = t0;
    p->nab = 0;                   /* a new request: the watchdog's undo is off (collect_undo) */
    pf_linef(r, "p%d acquire %c %s regid %llu%s", i, q.mode,
             q.redlock ? (op->enqueue ? "wait (mark)" : "try") : q.enqueue ? "queue" : "try",
             (unsigned long long)q.regid, lost_name(op->lost));
    if (op->lost) {
        pf_req_t w = req(r, PF_S_WITHDRAW, i, q.mode);
        w.regid = q.regid;
        limbo_add(r, i, &q, op->lost == PF_LOST_UNDO ? &w : NULL);
        abandon(r, i, q.mode, q.regid);
        return 0;
    }
    redisReply *x = acquire_call(r, i, &q, t0);
    if (!x)
        return 1;
    if (elem(x, 0) != 1 && (q.enqueue || (q.redlock && op->enqueue))) {
        p->wait = (pf_wait_t){ 1, q.mode, q.regid, t0 + p->wttl, 0 };
    }
    freeReplyObject(x);
    return 0;
}

static int op_reask(pf_run_t *r, int i, int64_t t0)
{
    pf_proc_t *p = &r->p[i];
    pf_req_t q = req(r, PF_S_ACQUIRE, i, p->wait.mode);
    q.enqueue = 1;
    if (q.redlock) {              /* a retry refreshes the mark */
        q.enqueue = 0;
        q.mark = p->mttl;
    }
    q.regid = ++p->regseq;
    pf_reqinfo_t *ri = pf_reqinfo(r, i, q.regid);
    ri->mode = q.mode;
    ri->t_send = t0;
    pf_linef(r, "p%d asks again %c regid %llu", i, q.mode, (unsigned long long)q.regid);
    redisReply *x = acquire_call(r, i, &q, t0);
    if (!x)
        return 1;
    if (elem(x, 0) == 1) {
        p->wait.active = 0;
    } else {
        p->wait.regid = q.regid;
        p->wait.reg_until_lo = t0 + p->wttl;
    }
    freeReplyObject(x);
    return 0;
}

static int op_cancel(pf_run_t *r, const pf_op_t *op, int i)
{
    pf_proc_t *p = &r->p[i];
    pf_req_t q = req(r, PF_S_CANCEL, i, p->wait.mode);
    q.regid = p->wait.regid;
    p->wait.active = 0;
    pf_linef(r, "p%d cancel %c regid %llu%s", i, q.mode, (unsigned long long)q.regid,
             lost_name(op->lost));
    if (op->lost) {
        limbo_add(r, i, &q, NULL);
        abandon(r, i, q.mode, q.regid);   /* g->maybe: the watchdog undoes it */
        return 0;
    }
    redisReply *x = call(r, &q, "cancel");
    if (!x)
        return 1;
    if (q.redlock) {
        r->mk.kind = PF_MK_CLEARED;
        r->mk.proc = i;
    }
    char b[96];
    pf_linef(r, " -> %s", reply_str(x, b, sizeof b));
    if (elem(x, 0) == 1)
        believe(r, i, q.mode, (uint64_t)elem(x, 1), q.regid, 0);
    freeReplyObject(x);
    return 0;
}

/* The companion lock a lock-all took, given back with the lock (each
 * with its own release, as dist_mutex_unlock does). */
static int release_comp(pf_run_t *r, int i)
{
    pf_proc_t *p = &r->p[i];
    if (!p->comp.has)
        return 0;
    pf_hold_t h = p->comp;
    pf_req_t q = req(r, PF_S_RELEASE, i, 'w');
    q.lock = PF_L_COMP;
    q.fence = h.fence;
    q.regid = h.rid;
    p->comp.has = 0;
    pf_linef(r, "; companion fence %llu", (unsigned long long)q.fence);
    redisReply *x = call(r, &q, "release of the companion");
    if (!x)
        return 1;
    int64_t t1 = now_ms_hi();
    char b[96];
    pf_linef(r, " -> %s", reply_str(x, b, sizeof b));
    if (hold_valid(&h, t1) && (x->type != REDIS_REPLY_INTEGER || x->integer != 1))
        pf_failf(r, "release-of-valid-hold",
                 "p%d released its companion hold fence %llu, valid for %lld ms more, and was "
                 "told %s", i, (unsigned long long)h.fence, (long long)(h.valid_until - t1), b);
    freeReplyObject(x);
    return 0;
}

/* What a lock-all (acquire_all.lua) may not take past: another process's
 * write hold or live read hold, or a live registration of another
 * process queued for the lock, in the snapshot just before the call
 * (each with a margin: it may lapse before the script runs). */
static const char *in_the_way(const pf_snap_t *s, int proc)
{
    if (s->writer != -1 && s->writer != proc && s->wpttl > PF_MARGIN_MS)
        return "a write hold";
    for (int j = 0; j < s->nrd; j++)
        if (s->rd[j].proc != proc && s->rd[j].score > s->now + PF_MARGIN_MS)
            return "a read hold";
    for (int j = 0; j < s->nwt; j++)
        if (s->wt[j].queued && s->wt[j].proc != proc && s->wt[j].deadline > s->now + PF_MARGIN_MS)
            return "a queued waiter";
    return NULL;
}

/* Lock-all of the lock and the companion (lua/acquire_all.lua), in the
 * order the op says: all or none (both snapshots after the call), never
 * past a holder or a queue (the snapshots before), the lock's grant
 * judged as an acquire's by every other invariant, the companion's by
 * its own: fences that increase, one valid holder at a time. */
static int op_all(pf_run_t *r, const pf_op_t *op, int i, int64_t t0)
{
    pf_proc_t *p = &r->p[i];
    pf_req_t q = req(r, PF_S_ACQUIRE_ALL, i, 'w');
    q.comp_first = op->sel & 1;
    q.regid = ++p->regseq;
    pf_reqinfo_t *ri = pf_reqinfo(r, i, q.regid);
    ri->mode = 'w';
    ri->t_send = t0;
    p->nab = 0;                   /* a new request, as an acquire */
    pf_linef(r, "p%d lock-all (%s) regid %llu%s", i,
             q.comp_first ? "companion, lock" : "lock, companion", (unsigned long long)q.regid,
             lost_name(op->lost));
    if (op->lost) {
        /* take_all.c: its undo behind it (withdraw_all.lua, what this very
         * request took); the library also has each lock withdrawn from a
         * new connection (dl_hold_undo_later): the watchdog's undo, here
         * of the lock. */
        pf_req_t w = req(r, PF_S_WITHDRAW_ALL, i, 'w');
        w.comp_first = q.comp_first;
        w.regid = q.regid;
        limbo_add(r, i, &q, &w);
        abandon(r, i, 'w', q.regid);
        return 0;
    }
    pf_snap_t pre[2], post[2];
    if (pf_snapshot_of(&r->k, PF_L_MAIN, &pre[0]) || pf_snapshot_of(&r->k, PF_L_COMP, &pre[1]))
        return pf_failf(r, "infrastructure", "%s", r->k.err);
    redisReply *x = call(r, &q, "lock-all");
    if (!x)
        return 1;
    int64_t t1 = now_ms_hi();
    char b[96];
    pf_linef(r, " -> %s", reply_str(x, b, sizeof b));
    if (pf_snapshot_of(&r->k, PF_L_MAIN, &post[0]) || pf_snapshot_of(&r->k, PF_L_COMP, &post[1])) {
        freeReplyObject(x);
        return pf_failf(r, "infrastructure", "%s", r->k.err);
    }
    static const char *lname[2] = { "the lock", "the companion" };
    long long got = elem(x, 0);
    int bad = 0;
    /* Only the first lock's key declared (an ASK): the others' keys may be
     * elsewhere, so it must take nothing and say so; else it never says
     * so. */
    if ((pf_call_form(&q) == 1) != (got == 2))
        bad = pf_failf(r, "lock-all-reply", "p%d's lock-all with %d keys declared answered %s", i,
                       pf_call_form(&q), b);
    if (bad) {
        /* (reported) */
    } else if (got == 1) {
        if (x->elements != 10 || elem(x, 1) != 2) {
            freeReplyObject(x);
            return pf_failf(r, "lock-all-reply", "p%d's lock-all of 2 locks: reply %s", i, b);
        }
        /* items in list order: the lock's at mi, the companion's at !mi */
        size_t mi = q.comp_first ? 1 : 0, at[2] = { 2 + 4 * mi, 2 + 4 * (1 - mi) };
        uint64_t fence[2];
        int claimed[2];
        for (int l = 0; l < 2; l++) {
            fence[l] = (uint64_t)elem(x, at[l]);
            claimed[l] = elem(x, at[l] + 2) == 1;
            const char *why = claimed[l] ? NULL : in_the_way(&pre[l], i);
            if (why && !bad)
                bad = pf_failf(r, "lock-all-past-holder", "p%d's lock-all took %s past %s; "
                               "before: writer %d (%lld ms left), %d readers, %d queued", i,
                               lname[l], why, pre[l].writer, pre[l].wpttl, pre[l].nrd, pre[l].nq);
            /* all: both are the caller's now (unless the call took so long
             * that the shortest lease could have run out) */
            if (!bad && t1 - t0 + PF_MARGIN_MS < p->lease &&
                (post[l].writer != i || post[l].wfence != fence[l]))
                bad = pf_failf(r, "lock-all-not-all", "p%d's lock-all says it took %s (fence "
                               "%llu), but Redis has writer %d fence %llu", i, lname[l],
                               (unsigned long long)fence[l], post[l].writer,
                               (unsigned long long)post[l].wfence);
        }
        grant_seen(r, i, 'w', fence[0], claimed[0] ? "lock-all reply (mine)" : "lock-all reply");
        if (r->o->redlock) {      /* a write hold taken: the caller's mark goes */
            r->mk.kind = PF_MK_CLEARED;
            r->mk.proc = i;
        }
        believe(r, i, 'w', fence[0], q.regid, claimed[0] ? 0 : t0 + p->lease);
        /* the companion: a fence above every one before (or its own hold
         * claimed again), and nobody else believing in a hold of it */
        if (!bad && !claimed[1] && fence[1] <= r->cmax)
            bad = pf_failf(r, "fence-not-increasing", "the companion's fence %llu, granted to "
                           "p%d, is not above %llu, granted before", (unsigned long long)fence[1],
                           i, (unsigned long long)r->cmax);
        if (fence[1] > r->cmax)
            r->cmax = fence[1];
        for (int j = 0; j < r->np && !bad; j++)
            if (j != i && hold_valid(&r->p[j].comp, t0))
                bad = pf_failf(r, "two-writers", "p%d and p%d both hold the companion (fences "
                               "%llu, %llu)", j, i, (unsigned long long)r->p[j].comp.fence,
                               (unsigned long long)fence[1]);
        p->comp = (pf_hold_t){ 1, 'w', fence[1], q.regid, claimed[1] ? 0 : t0 + p->lease, 0, 0 };
    } else if (got == 0 || got == 2) {
        /* none: neither lock became the caller's */
        for (int l = 0; l < 2 && !bad; l++)
            if (post[l].writer == i && (pre[l].writer != i || pre[l].wfence != post[l].wfence))
                bad = pf_failf(r, "lock-all-partial", "p%d's lock-all took nothing (%s), but "
                               "Redis now has it holding %s (fence %llu)", i, b, lname[l],
                               (unsigned long long)post[l].wfence);
    } else {
        bad = pf_failf(r, "lock-all-reply", "p%d's lock-all: unexpected reply %s", i, b);
    }
    freeReplyObject(x);
    return bad;
}

static int op_release(pf_run_t *r, const pf_op_t *op, int i)
{
    pf_proc_t *p = &r->p[i];
    pf_hold_t h = p->hold;
    pf_req_t q = req(r, PF_S_RELEASE, i, h.mode);
    q.fence = h.fence;
    q.regid = h.rid;
    p->hold.has = 0;              /* whatever comes back, the process is done with it */
    pf_linef(r, "p%d release %c fence %llu%s", i, q.mode, (unsigned long long)q.fence,
             lost_name(op->lost));
    if (op->lost) {
        limbo_add(r, i, &q, NULL);
        return 0;
    }
    redisReply *x = call(r, &q, "release");
    if (!x)
        return 1;
    int64_t t1 = now_ms_hi();
    char b[96];
    pf_linef(r, " -> %s", reply_str(x, b, sizeof b));
    if (hold_valid(&h, t1) && (x->type != REDIS_REPLY_INTEGER || x->integer != 1))
        pf_failf(r, "release-of-valid-hold",
                 "p%d released its %c hold fence %llu, valid for %lld ms more, and was told %s",
                 i, h.mode, (unsigned long long)h.fence, (long long)(h.valid_until - t1), b);
    freeReplyObject(x);
    return release_comp(r, i);
}

static int op_renew(pf_run_t *r, const pf_op_t *op, int i, int64_t t0)
{
    pf_proc_t *p = &r->p[i];
    pf_hold_t h = p->hold;
    pf_req_t q = req(r, PF_S_RENEW, i, h.mode);
    q.fence = h.fence;
    pf_linef(r, "p%d renew %c fence %llu%s", i, q.mode, (unsigned long long)q.fence,
             lost_name(op->lost));
    if (op->lost) {
        limbo_add(r, i, &q, NULL);
        return 0;
    }
    if (mark_pre(r, PF_MK_RENEW, i))
        return 1;
    redisReply *x = call(r, &q, "renew");
    if (!x)
        return 1;
    int64_t t1 = now_ms_hi();
    char b[96];
    pf_linef(r, " -> %s", reply_str(x, b, sizeof b));
    /* 1 renewed (today); n >= 1 renewed with n-1 queued (next version). */
    long long n = x->type == REDIS_REPLY_INTEGER ? x->integer : elem(x, 0);
    r->mk.reply = n;
    if (n >= 1) {
        /* Once cut, the claim window (a held-back cut may run after this). */
        p->hold.valid_until = t0 + (p->hold.cut && p->wttl < p->lease ? p->wttl : p->lease);
    } else {
        if (hold_valid(&h, t1))
            pf_failf(r, "renew-of-valid-hold",
                     "p%d renewed its %c hold fence %llu, valid for %lld ms more, and was told %s",
                     i, h.mode, (unsigned long long)h.fence, (long long)(h.valid_until - t1), b);
        p->hold.lost = 1;
    }
    freeReplyObject(x);
    return 0;
}

/* lock.c settle: a lingering write unlock posts the mark that cuts the
 * hold's TTL to the claim window (the library's min(lease, 2 s), here the
 * process's waiter ttl).  The hold is then believed valid until the cut at
 * most: the cut happened after t0. */
static int op_mark(pf_run_t *r, const pf_op_t *op, int i, int64_t t0)
{
    pf_proc_t *p = &r->p[i];
    pf_req_t q = req(r, PF_S_MARK, i, 'w');
    q.fence = p->hold.fence;
    q.regid = ++p->regseq;        /* the mark's number (mark.lua ARGV[5]) */
    pf_linef(r, "p%d lingers: mark cuts fence %llu to %d ms%s", i, (unsigned long long)q.fence,
             p->wttl, lost_name(op->lost));
    /* The library lowers its validity once the mark is written (tenure.c,
     * dl_tenure_cut), whenever Redis runs it: a mark held back on a connection
     * given up still cuts the TTL when it runs. */
    if (p->hold.valid_until > t0 + p->wttl)
        p->hold.valid_until = t0 + p->wttl;
    p->hold.cut = 1;
    if (op->lost) {
        limbo_add(r, i, &q, NULL);
        return 0;
    }
    redisReply *x = call(r, &q, "mark");
    if (!x)
        return 1;
    freeReplyObject(x);
    return 0;
}

/* watchdog.c undo_all for one failed acquisition, from a new connection:
 * withdraw exactly what that request made (its place in the queue, or a
 * hold taken for it), named by its registration id.  The library looks
 * twice, the second time a little later. */
static int op_undo(pf_run_t *r, int i)
{
    pf_proc_t *p = &r->p[i];
    char mode = p->ab[0].mode;
    uint64_t regid = p->ab[0].regid;
    if (--p->ab[0].checks <= 0) {
        memmove(p->ab, p->ab + 1, (size_t)(p->nab - 1) * sizeof p->ab[0]);
        p->nab--;
    }
    pf_req_t w = req(r, PF_S_WITHDRAW, i, mode);
    w.regid = regid;
    pf_linef(r, "p%d undo: withdraw %c regid %llu", i, mode, (unsigned long long)regid);
    redisReply *x = call(r, &w, "undo: withdraw");
    if (!x)
        return 1;
    char b[96];
    pf_linef(r, " -> %s", reply_str(x, b, sizeof b));
    freeReplyObject(x);
    return 0;
}

static int op_break(pf_run_t *r)
{
    pf_req_t q = req(r, PF_S_BREAK, 0, 'w');
    pf_linef(r, "break");
    r->st.breaks++;
    redisReply *x = call(r, &q, "break");
    if (!x)
        return 1;
    char b[96];
    pf_linef(r, " -> %s", reply_str(x, b, sizeof b));
    freeReplyObject(x);
    /* Every hold granted so far is gone, believed or not yet known. */
    for (int i = 0; i < r->np; i++) {
        pf_proc_t *p = &r->p[i];
        if (p->hold.has)
            p->hold.lost = 1;
        for (int j = 0; j < p->ninbox; j++)
            p->inbox[j].broken = 1;
        if (p->wait.active)
            p->wait.exempt = 1;
    }
    return 0;
}

static void op_deliver(pf_run_t *r, const pf_op_t *op, int i)
{
    pf_proc_t *p = &r->p[i];
    pf_push_t m = p->inbox[0];
    memmove(p->inbox, p->inbox + 1, (size_t)(p->ninbox - 1) * sizeof p->inbox[0]);
    p->ninbox--;
    if (op->kind == PF_DROP) {
        pf_linef(r, "p%d loses the push for regid %llu", i, (unsigned long long)m.regid);
        return;
    }
    pf_linef(r, "p%d reads the push for regid %llu fence %llu", i, (unsigned long long)m.regid,
             (unsigned long long)m.fence);
    /* notify.c: only the registration it waits with now; others are stale. */
    if (!p->wait.active || p->wait.regid != m.regid) {
        pf_linef(r, " (stale: ignored)");
        return;
    }
    p->wait.active = 0;
    believe(r, i, p->wait.mode, m.fence, m.regid, m.t0 + p->claim);
    p->hold.lost = m.broken;
}

/* A held-back acquisition ran with its undo right behind it (the link
 * writes it there: cmdlink_io.c): whatever write hold that very request
 * took is gone once the undo ran, on the lock (acquire.lua with
 * withdraw.lua) and on both locks (acquire_all.lua with withdraw_all.lua):
 * its process was told it failed, and nobody else may wait out a lease
 * for it.  A later request's hold (a larger id) is not the undo's. */
static int undone(pf_run_t *r, int i, const pf_unit_t *u)
{
    if (u->n != 2 || u->r[0].mode != 'w' ||
        !(u->r[1].script == PF_S_WITHDRAW || u->r[1].script == PF_S_WITHDRAW_ALL))
        return 0;
    int locks = u->r[0].script == PF_S_ACQUIRE_ALL ? 2 : 1;
    for (int l = 0; l < locks; l++) {
        pf_snap_t s;
        if (pf_snapshot_of(&r->k, l ? PF_L_COMP : PF_L_MAIN, &s))
            return pf_failf(r, "infrastructure", "%s", r->k.err);
        if (s.writer == i && s.wrid == u->r[0].regid)
            return pf_failf(r, "undo-left-hold", "p%d's held-back %s regid %llu ran with its "
                            "undo right behind, and Redis still has its write hold of %s "
                            "(fence %llu)", i, locks == 2 ? "lock-all" : "acquire",
                            (unsigned long long)u->r[0].regid, l ? "the companion" : "the lock",
                            (unsigned long long)s.wfence);
    }
    return 0;
}

static int op_stale(pf_run_t *r, const pf_op_t *op, int i)
{
    pf_proc_t *p = &r->p[i];
    int at = op->sel % p->nlimbo;
    pf_unit_t u = p->limbo[at];
    memmove(p->limbo + at, p->limbo + at + 1, (size_t)(p->nlimbo - at - 1) * sizeof p->limbo[0]);
    p->nlimbo--;
    r->st.stale++;
    static const char *sname[] = { "acquire", "release", "renew", "cancel", "withdraw", "break",
                                   "mark", "acquire_all", "withdraw_all" };
    pf_linef(r, "p%d's held-back", i);
    for (int j = 0; j < u.n; j++) {
        const pf_req_t *q = &u.r[j];
        pf_linef(r, "%s %s %c", j ? " +" : "", sname[q->script], q->mode);
        if (q->regid)
            pf_linef(r, " regid %llu", (unsigned long long)q->regid);
        if (q->fence)
            pf_linef(r, " fence %llu", (unsigned long long)q->fence);
    }
    pf_linef(r, " runs now ->");
    for (int j = 0; j < u.n; j++) {
        r->unread = 1;
        redisReply *x = call(r, &u.r[j], "held-back request");
        r->unread = 0;
        if (!x)
            return 1;
        char b[96];
        pf_linef(r, " %s", reply_str(x, b, sizeof b));
        if (u.r[j].script == PF_S_ACQUIRE_ALL && elem(x, 0) == 1 && x->elements == 10) {
            /* what it took, judged as any grant (fences), though nobody
             * reads it */
            size_t mi = u.r[j].comp_first ? 1 : 0;
            grant_seen(r, i, 'w', (uint64_t)elem(x, 2 + 4 * mi), "reply to a held-back lock-all");
            uint64_t cf = (uint64_t)elem(x, 2 + 4 * (1 - mi));
            if (cf > r->cmax)
                r->cmax = cf;
        }
        freeReplyObject(x);
    }
    return undone(r, i, &u);
}

/* redlock mode: a waiting process dies: no retry, no cancel; its mark (if
 * it was the last to refresh it) must lapse by itself. */
static void op_die(pf_run_t *r, int i)
{
    pf_proc_t *p = &r->p[i];
    pf_linef(r, "p%d dies waiting (%c)", i, p->wait.mode);
    p->wait.active = 0;
}

/* One op: 0 done (or skipped), 1 an invariant broke, -1 the server failed. */
static int run_step(pf_run_t *r, const pf_op_t *op)
{
    r->line[0] = 0;
    r->ng = 0;
    r->mk.kind = PF_MK_NONE;
    int i = -1;
    for (int j = 0; j < r->np; j++) {
        int c = (op->proc + j) % r->np;
        if (applies(r, op, c)) {
            i = c;
            break;
        }
    }
    if (i < 0) {
        r->st.skipped++;
        pf_linef(r, "(%s: applies to no process, skipped)", kind_name[op->kind]);
        return 0;
    }
    r->st.steps++;
    r->proc = i;
    r->maxfence_before = r->nf ? r->fv[r->nf - 1].fence : 0;
    if (op->kind == PF_SLEEP) {
        pf_linef(r, "%d ms pass", op->ms);
        usleep((useconds_t)op->ms * 1000);
        r->st.sleeps_ms += op->ms;
    } else if (op->kind == PF_DELIVER || op->kind == PF_DROP) {
        op_deliver(r, op, i);
    }
    int64_t t0 = pf_now_ms();
    int bad = 0;
    switch (op->kind) {
    case PF_ACQ: bad = op_acquire(r, op, i, t0); break;
    case PF_REASK: bad = op_reask(r, i, t0); break;
    case PF_CANCEL: bad = op_cancel(r, op, i); break;
    case PF_RELEASE: bad = op_release(r, op, i); break;
    case PF_RENEW: bad = op_renew(r, op, i, t0); break;
    case PF_UNDO: bad = op_undo(r, i); break;
    case PF_BREAK: bad = op_break(r); break;
    case PF_STALE: bad = op_stale(r, op, i); break;
    case PF_MARK: bad = op_mark(r, op, i, t0); break;
    case PF_DIE: op_die(r, i); break;
    case PF_ALL: bad = op_all(r, op, i, t0); break;
    default: break;
    }
    if (bad && r->k.c->err)
        return -1;
    if (drain(r, t0) < 0) {
        pf_failf(r, "infrastructure", "%s", r->k.err);
        return -1;
    }
    int c = pf_check(r, t0);
    if (c < 0)
        return -1;
    return c || r->fail->step >= 0;
}

void pf_op_str(const pf_op_t *op, char *buf, size_t size)
{
    switch (op->kind) {
    case PF_ACQ:
        snprintf(buf, size, "p%d acquire %c %s%s", op->proc, op->mode, op->enqueue ? "queue" : "try",
                 lost_name(op->lost));
        break;
    case PF_CANCEL:
    case PF_RELEASE:
    case PF_RENEW:
    case PF_MARK:
        snprintf(buf, size, "p%d %s%s", op->proc, kind_name[op->kind], lost_name(op->lost));
        break;
    case PF_STALE:
        snprintf(buf, size, "p%d stale #%d", op->proc, op->sel);
        break;
    case PF_ALL:
        snprintf(buf, size, "p%d lock-all%s%s", op->proc, op->sel & 1 ? " (companion first)" : "",
                 lost_name(op->lost));
        break;
    case PF_SLEEP:
        snprintf(buf, size, "sleep %d ms", op->ms);
        break;
    case PF_BREAK:
        snprintf(buf, size, "break");
        break;
    default:
        snprintf(buf, size, "p%d %s", op->proc, kind_name[op->kind]);
        break;
    }
}

/* Each process's lock attributes, from the seed: short leases, waiter ttls
 * (the library's min(lease, 2 s), scaled down), and either the default
 * (claim window = waiter ttl) or a fixed lease (claim = lease). */
static void attrs(pf_run_t *r)
{
    static const int leases[] = { 80, 150, 300 }, wttls[] = { 40, 100, 200 },
                     mttls[] = { 30, 60, 120 };
    uint64_t x = r->o->seed * 0x9E3779B97F4A7C15ull + 12345;
    r->maxlease = r->maxwttl = r->maxmttl = 0;
    for (int i = 0; i < r->np; i++) {
        x ^= x >> 29;
        x *= 0xBF58476D1CE4E5B9ull;
        x ^= x >> 32;
        pf_proc_t *p = &r->p[i];
        p->lease = leases[x % 3];
        p->wttl = wttls[(x >> 8) % 3];
        if (p->wttl > p->lease)
            p->wttl = p->lease;
        p->claim = (x >> 16) % 4 == 0 ? p->lease : p->wttl;
        if (p->lease > r->maxlease)
            r->maxlease = p->lease;
        if (p->wttl > r->maxwttl)
            r->maxwttl = p->wttl;
        p->mttl = mttls[(x >> 24) % 3];
        if (p->mttl > r->maxmttl)
            r->maxmttl = p->mttl;
    }
}

int pf_exec(const pf_opts_t *o, const pf_op_t *ops, int n, pf_fail_t *fail, FILE *trace)
{
    return pf_exec_ran(o, ops, n, fail, trace, NULL);
}

int pf_exec_ran(const pf_opts_t *o, const pf_op_t *ops, int n, pf_fail_t *fail, FILE *trace,
                uint8_t *ran)
{
    static unsigned runs;
    pf_run_t *r = calloc(1, sizeof *r);
    if (!r)
        return -1;
    r->o = o;
    r->np = o->procs < 2 ? 2 : o->procs > PF_MAX_PROCS ? PF_MAX_PROCS : o->procs;
    r->fail = fail;
    memset(fail, 0, sizeof *fail);
    fail->step = -1;
    char prefix[64];
    snprintf(prefix, sizeof prefix, "pf:%d.%u:", (int)getpid(), ++runs);
    if (pf_conn_open(&r->k, o->host, o->port, prefix, o->by_slot)) {
        snprintf(fail->what, sizeof fail->what, "infrastructure");
        snprintf(fail->msg, sizeof fail->msg, "%s", r->k.err);
        free(r);
        return -1;
    }
    attrs(r);
    if (trace) {
        for (int i = 0; i < r->np; i++)
            fprintf(trace, "  p%d: lease %d ms, waiter ttl %d ms, claim window %d ms%s%.0d\n", i,
                    r->p[i].lease, r->p[i].wttl, r->p[i].claim,
                    o->redlock ? ", writer mark ttl (ms) " : "", o->redlock ? r->p[i].mttl : 0);
    }
    /* Without redlock no script may read or write the mark: plant one (a
     * process of ours, an hour long) and check it stays as it is. */
    pf_snap_t ps;
    if (!o->redlock && (pf_plant_mark(&r->k, 0, 3600000) || pf_snapshot(&r->k, &ps))) {
        snprintf(fail->what, sizeof fail->what, "infrastructure");
        snprintf(fail->msg, sizeof fail->msg, "%s", r->k.err);
        pf_conn_close(&r->k);
        free(r);
        return -1;
    }
    r->planted_wwx = o->redlock ? -1 : ps.wwx;
    int rc = 0;
    int64_t start = pf_now_ms(), last = start;
    r->step = -1;
    for (int s = 0; s < n; s++) {
        r->step = s;
        r->proc = -1;
        rc = run_step(r, &ops[s]);
        if (ran)
            ran[s] = (uint8_t)(r->proc + 1);
        if (trace && (rc || o->verbose || r->line[0] != '('))
            fprintf(trace, "  %4d. %s\n", s + 1, r->line);
        if (rc)
            break;
        if (o->progress_ms > 0 && o->out && pf_now_ms() - last >= o->progress_ms) {
            last = pf_now_ms();
            fprintf(o->out, "protofuzz: seed %llu step %d/%d: %ld grants (%ld pushed), %ld held back "
                    "(%ld run late), %ld breaks, %.1f s\n", (unsigned long long)o->seed, s + 1, n,
                    r->st.grants, r->st.pushes, r->st.lost, r->st.stale, r->st.breaks,
                    (double)(last - start) / 1000);
            fflush(o->out);
        }
        if (o->max_ms > 0 && pf_now_ms() - start >= o->max_ms)
            break;
    }
    fail->steps_run = r->step + 1;
    fail->pushes = r->st.pushes;
    if (rc == 0)
        fail->step = -1;
    else if (rc < 0 && fail->step < 0)
        fail->step = r->step;
    /* Leave nothing behind in a server that may be shared. */
    for (int l = 0; l < 2; l++) {
        char (*key)[96] = l ? r->k.ckeys : r->k.keys;
        redisReply *x = redisCommand(r->k.c, "DEL %s %s %s %s %s %s", key[0], key[1], key[2],
                                     key[3], key[4], key[5]);
        if (x)
            freeReplyObject(x);
    }
    pf_conn_close(&r->k);
    for (int i = 0; i < r->np; i++)
        free(r->p[i].ri);
    free(r->fv);
    free(r);
    return rc < 0 ? -1 : rc;
}
