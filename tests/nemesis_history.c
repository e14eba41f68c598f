/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * nemesis_history.c - the history of a run rebuilt from the record: every
 * lock call (nm_call_t), and every hold (nm_hold_t) from the lock call that
 * took it (depth 0, 0 or EOWNERDEAD) to the unlock that ended it, or to the
 * death of its process.  A call still in flight when its process was killed
 * is indeterminate (it may have run in Redis), as is an unlock that said
 * EIO; the checks excuse with them only what they can explain.
 */
#include "nemesis_int.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

const char *nm_check_name(int c)
{
    static const char *const n[NM_C_COUNT] = {
        [NM_C_OVERLAP] = "overlap",     [NM_C_STORE] = "store",   [NM_C_STALE] = "stale-return",
        [NM_C_LAPSE] = "unexplained-lapse", [NM_C_OWNERDEAD] = "ownerdead",
        [NM_C_LIVENESS] = "liveness",   [NM_C_HANG] = "hang",     [NM_C_CODE] = "code",
        [NM_C_CRASH] = "crash",         [NM_C_FENCE] = "fence-order", [NM_C_TIMED] = "timed",
        [NM_C_ORPHAN] = "orphan",       [NM_C_WAKEUP] = "lost-wakeup",
        [NM_C_SEM] = "sem-over",        [NM_C_SEMCOUNT] = "sem-count", [NM_C_SEMTOLD] = "sem-told",
        [NM_C_ALL] = "all-or-none",
        [NM_C_BARRIER] = "barrier",     [NM_C_ONCE] = "once",
    };
    return c >= 0 && c < NM_C_COUNT ? n[c] : "?";
}

double nm_rel(const nm_ctx_t *c, int64_t t)
{
    return (double)(t - c->start) / 1000.0;
}

void nm_viol_add(nm_hist_t *hs, int check, int name, int64_t t, const char *fmt, ...)
{
    if (hs->nv == hs->capv) {
        size_t cap = hs->capv ? hs->capv * 2 : 64;
        nm_viol_t *v = realloc(hs->v, cap * sizeof *v);
        if (!v)
            return;
        hs->v = v;
        hs->capv = cap;
    }
    nm_viol_t *v = &hs->v[hs->nv++];
    v->check = check;
    v->name = name;
    v->t = t;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(v->text, sizeof v->text, fmt, ap);
    va_end(ap);
}

const char *nm_hold_str(const nm_hist_t *hs, const nm_hold_t *h, char *buf, size_t size)
{
    const nm_ctx_t *c = hs->c;
    char un[48];
    if (h->died)
        snprintf(un, sizeof un, "its process died at %.1f", nm_rel(c, h->t_end));
    else if (h->open)
        snprintf(un, sizeof un, "still held at the end");
    else if (h->unlock_rc < 0)
        snprintf(un, sizeof un, "unlock at %.1f never returned", nm_rel(c, h->t_end));
    else
        snprintf(un, sizeof un, "unlock at %.1f said %s", nm_rel(c, h->t_end), th_errname(h->unlock_rc));
    snprintf(buf, size, "%s hold of %d/%d fence %llu (%s %s at %.1f..%.1f ms, %s)",
             h->mode == 'w' ? "write" : "read", h->pid, h->tid, (unsigned long long)h->fence,
             h->op == NM_OP_LOCK ? "lock" : h->op == NM_OP_TRY ? "trylock" : "timedlock",
             th_errname(h->lock_rc), nm_rel(c, h->t_call), nm_rel(c, h->t_ret), un);
    return buf;
}

int64_t nm_stopped_for(const nm_ctx_t *c, int pid, int64_t a, int64_t b)
{
    int64_t sum = 0;
    for (int i = 0; i < c->sch.n; i++) {
        const nm_fault_t *f = &c->sch.f[i];
        if (!(f->effects & NM_FX_STOP) || (f->pid != pid && f->pid != 0) || !f->t_start)
            continue;
        int64_t s = f->t_start > a ? f->t_start : a;
        int64_t e = f->ended ? f->t_end : b;
        if (e > b)
            e = b;
        if (e > s)
            sum += e - s;
    }
    return sum;
}

int64_t nm_clock_back_within(const nm_ctx_t *c, int slot, int64_t a, int64_t b)
{
    const nm_slot_t *sl = &c->sh->slot[slot];
    int64_t sum = 0;
    uint32_t n = sl->njumps < NM_MAX_JUMPS ? sl->njumps : NM_MAX_JUMPS;
    for (uint32_t i = 0; i < n; i++)
        if (sl->jump[i][1] < 0 && sl->jump[i][0] >= a && sl->jump[i][0] <= b)
            sum -= sl->jump[i][1];
    return sum;
}

int nm_clock_back_at(const nm_ctx_t *c, int slot, int64_t a, int64_t b)
{
    return nm_clock_back_within(c, slot, a, b) > 0;
}

static int push_hold(nm_hist_t *hs, size_t *cap)
{
    if (hs->nh == *cap) {
        size_t n = *cap ? *cap * 2 : 1024;
        nm_hold_t *h = realloc(hs->h, n * sizeof *h);
        if (!h)
            return -1;
        hs->h = h;
        *cap = n;
    }
    memset(&hs->h[hs->nh], 0, sizeof hs->h[0]);
    return (int)hs->nh++;
}

static nm_call_t *push_call(nm_hist_t *hs, size_t *cap)
{
    if (hs->ncalls == *cap) {
        size_t n = *cap ? *cap * 2 : 4096;
        nm_call_t *v = realloc(hs->calls, n * sizeof *v);
        if (!v)
            return NULL;
        hs->calls = v;
        *cap = n;
    }
    nm_call_t *k = &hs->calls[hs->ncalls++];
    memset(k, 0, sizeof *k);
    k->hold = -1;
    return k;
}

/* A code the SPEC allows for this call. */
static int code_ok(const nm_ev_t *e)
{
    int rc = e->rc;
    if (e->kind == NM_UNLOCK)
        return rc == 0 || rc == ENOLCK || rc == EIO;
    if (e->kind == NM_CWAIT)
        return rc == 0 || rc == ETIMEDOUT || rc == EOWNERDEAD || rc == EIO;
    if (e->kind == NM_SIGNAL)
        return rc == 0 || rc == EIO;
    /* a semaphore: ENOLCK once Redis lost it (its next call, SPEC); a
     * leased post EPERM when its permit lapsed */
    if (e->kind == NM_SWAIT)
        return rc == 0 || rc == EIO || rc == ENOLCK || (rc == EAGAIN && e->op == NM_OP_TRY) ||
               (rc == ETIMEDOUT && e->op == NM_OP_TIMED);
    if (e->kind == NM_SPOST)
        return rc == 0 || rc == EIO || rc == ENOLCK || rc == EPERM;
    if (e->kind == NM_ALLCHECK)
        return 1;                   /* (judged by the lock-all role) */
    if (e->kind == NM_BWAIT)      /* ENOLCK: Redis lost the barrier (a restart) */
        return rc == 0 || rc == NM_RC_SERIAL || rc == ETIMEDOUT || rc == ENOLCK || rc == EIO;
    if (e->kind == NM_ONCE)
        return rc == 0 || rc == EIO;
    if (e->kind == NM_ORUN)
        return 1;
    if (e->kind != NM_LOCK)
        return rc == 0 || rc == 1;
    if (rc == 0 || rc == EOWNERDEAD || rc == EIO)
        return 1;
    if (rc == EBUSY)
        return e->op == NM_OP_TRY;
    if (rc == ETIMEDOUT)
        return e->op == NM_OP_TIMED;
    return 0;
}

int nm_hist_build(nm_hist_t *hs, nm_ctx_t *c, int64_t end)
{
    hs->c = c;
    hs->end = end;
    size_t hcap = 0, ccap = 0;
    for (int s = 0; s < c->sh->nslots; s++) {
        nm_slot_t *sl = &c->sh->slot[s];
        if (sl->pid <= 0)
            continue;
        int64_t death = sl->died_us;
        for (int t = 0; t < NM_MAX_THREADS; t++) {
            nm_thread_log_t *tl = &sl->th[t];
            uint32_t n = __atomic_load_n(&tl->n, __ATOMIC_ACQUIRE);
            /* the thread's hold of each name (a lock-all's thread has several) */
            int cur[NM_MAX_NAMES];
            for (int k = 0; k < NM_MAX_NAMES; k++)
                cur[k] = -1;
            size_t grp = 0;
            for (uint32_t i = 0; i < n; i++) {
                nm_ev_t *e = &tl->ev[i];
                int done = __atomic_load_n(&e->state, __ATOMIC_ACQUIRE) == 2;
                if (e->kind == NM_LOCK || e->kind == NM_UNLOCK)
                    hs->ops++;
                if (done && !code_ok(e))
                    nm_viol_add(hs, e->kind == NM_LOCK || e->kind == NM_UNLOCK ? NM_C_CODE : NM_C_CODE,
                                e->name, e->t1, "%s of %s by %d/%d (depth %d) returned %s (%d), which "
                                "the SPEC does not give for it",
                                e->kind == NM_LOCK ? (e->all ? "lock-all" : "lock call") : e->kind ==
                                NM_UNLOCK ? "unlock" : e->kind == NM_CWAIT ? "condition wait" : e->kind
                                == NM_SIGNAL ? "signal" : e->kind == NM_SWAIT ? "semaphore wait" :
                                e->kind == NM_SPOST ? "semaphore post" : "store op (harness)",
                                c->sh->names[e->name], sl->pid,
                                (int)tl->tid, e->depth, e->kind == NM_WRITE || e->kind == NM_READ
                                ? "error" : th_errname(e->rc), e->rc);
                if (e->kind == NM_LOCK) {
                    nm_call_t *k = push_call(hs, &ccap);
                    if (!k)
                        return -1;
                    k->slot = s;
                    k->th = t;
                    k->pid = sl->pid;
                    k->tid = (int)tl->tid;
                    k->name = e->name;
                    k->op = e->op;
                    k->depth = e->depth;
                    k->mode = (char)e->mode;
                    k->t0 = e->t0;
                    k->abs_rt_us = e->abs_rt_us;
                    k->rt0_us = e->rt0_us;
                    k->all = e->all;
                    /* a lock-all's calls follow each other: the first starts its group */
                    if (!e->all || i == 0 || tl->ev[i - 1].kind != NM_LOCK || !tl->ev[i - 1].all ||
                        hs->ncalls - 1 - grp >= (size_t)e->all)
                        grp = hs->ncalls - 1;
                    k->grp = (int)grp;
                    if (done) {
                        k->rc = e->rc;
                        k->t1 = e->t1;
                        k->fence = e->fence;
                        k->rt1_us = e->rt1_us;
                        if (e->rc == EOWNERDEAD)
                            hs->ownerdead++;
                        if (e->rc == EIO)
                            hs->eio++;
                    } else {
                        k->rc = -1;
                        hs->indeterminate++;
                    }
                    if (done && e->depth == 0 && (e->rc == 0 || e->rc == EOWNERDEAD)) {
                        int hi = push_hold(hs, &hcap);
                        if (hi < 0)
                            return -1;
                        nm_hold_t *h = &hs->h[hi];
                        h->slot = s;
                        h->th = t;
                        h->pid = sl->pid;
                        h->tid = (int)tl->tid;
                        h->name = e->name;
                        h->mode = (char)e->mode;
                        h->op = e->op;
                        h->lock_rc = e->rc;
                        h->hold = e->hold;
                        h->fence = e->fence;
                        h->t_call = e->t0;
                        h->t_ret = e->t1;
                        h->unlock_rc = -1;
                        h->chain = hi;
                        hs->calls[hs->ncalls - 1].hold = hi;
                        cur[e->name] = hi;
                    }
                } else if (e->kind == NM_UNLOCK && e->depth == 0 && cur[e->name] >= 0) {
                    nm_hold_t *h = &hs->h[cur[e->name]];
                    h->t_end = e->t0;
                    if (done) {
                        h->t_unlock_ret = e->t1;
                        h->unlock_rc = e->rc;
                        if (e->rc == ENOLCK)
                            hs->enolck++;
                        if (e->rc == EIO) {
                            hs->eio++;
                            hs->indeterminate++;
                        }
                    } else if (death) {
                        h->died = 1;        /* killed inside its unlock */
                        hs->indeterminate++;
                    } else {
                        h->open = 1;
                    }
                    cur[e->name] = -1;
                } else if ((e->kind == NM_WRITE || e->kind == NM_READ) && cur[e->name] >= 0) {
                    if (e->kind == NM_WRITE)
                        hs->writes++;
                    if (done && e->rc == 0) {
                        hs->refused++;
                        nm_hold_t *h = &hs->h[cur[e->name]];
                        if (!h->lapse_ev || e->t1 < h->lapse_ev) {
                            h->lapse_ev = e->t1;
                            snprintf(h->lapse_why, sizeof h->lapse_why,
                                     "the store %s its %s at %.1f ms: fence %llu < %llu",
                                     e->kind == NM_WRITE ? "refused" : "had a newer write than",
                                     e->kind == NM_WRITE ? "write" : "read", nm_rel(c, e->t1),
                                     (unsigned long long)e->fence, (unsigned long long)e->hi);
                        }
                    }
                }
            }
            for (int k = 0; k < NM_MAX_NAMES; k++) {
                if (cur[k] < 0)
                    continue;
                nm_hold_t *h = &hs->h[cur[k]];
                if (death) {
                    h->died = 1;
                    h->t_end = death;
                } else {
                    h->open = 1;
                    h->t_end = end;
                }
            }
        }
    }
    return 0;
}

void nm_hist_free(nm_hist_t *hs)
{
    free(hs->h);
    free(hs->calls);
    free(hs->v);
    for (int i = 0; i < NM_MAX_NAMES; i++)
        free(hs->store[i]);
    memset(hs, 0, sizeof *hs);
}

typedef struct line {
    int64_t t;
    char s[220];
} line_t;

static int cmp_line(const void *a, const void *b)
{
    const line_t *x = a, *y = b;
    return x->t < y->t ? -1 : x->t > y->t;
}

/* The events of name (-1: all) that began within [from, to], and the
 * faults that began then, by time; *n lines (malloc'ed). */
static line_t *collect(const nm_hist_t *hs, int name, int64_t from, int64_t to, size_t *np)
{
    const nm_ctx_t *c = hs->c;
    size_t cap = 4096, n = 0;
    line_t *l = malloc(cap * sizeof *l);
    if (!l)
        return NULL;
    for (int s = 0; s < c->sh->nslots; s++) {
        const nm_slot_t *sl = &c->sh->slot[s];
        for (int th = 0; th < NM_MAX_THREADS; th++) {
            const nm_thread_log_t *tl = &sl->th[th];
            uint32_t ne = __atomic_load_n(&tl->n, __ATOMIC_ACQUIRE);
            for (uint32_t i = 0; i < ne; i++) {
                const nm_ev_t *e = &tl->ev[i];
                if ((name >= 0 && e->name != name) || e->t0 < from || e->t0 > to)
                    continue;
                if (n == cap) {
                    line_t *m = realloc(l, cap * 2 * sizeof *l);
                    if (!m)
                        break;
                    l = m;
                    cap *= 2;
                }
                int done = e->state == 2;
                const char *what = e->kind == NM_LOCK
                    ? (e->all ? (e->op == NM_OP_LOCK ? "lockall" : e->op == NM_OP_TRY ? "trylockall"
                                 : "timedlockall")
                       : e->op == NM_OP_LOCK ? "lock" : e->op == NM_OP_TRY ? "trylock" : "timedlock")
                    : e->kind == NM_UNLOCK ? "unlock" : e->kind == NM_WRITE ? "store write"
                    : e->kind == NM_CWAIT ? "cond timedwait" : e->kind == NM_SIGNAL ? "cond signal"
                    : e->kind == NM_SWAIT ? (e->op == NM_OP_LOCK ? "sem wait" : e->op == NM_OP_TRY
                                             ? "sem trywait" : "sem timedwait")
                    : e->kind == NM_SPOST ? "sem post" : e->kind == NM_ALLCHECK ? "lockall held"
                    : e->kind == NM_BWAIT ? "barrier wait" : e->kind == NM_ONCE ? "once"
                    : e->kind == NM_ORUN ? "once run" : "store read";
                char res[80];
                if (!done)
                    snprintf(res, sizeof res, "(no return)");
                else if (e->kind == NM_WRITE || e->kind == NM_READ)
                    snprintf(res, sizeof res, "%s (store had %llu)", e->rc == 1 ? "accepted" : e->rc == 0
                             ? "REFUSED" : "error", (unsigned long long)e->hi);
                else if (e->kind == NM_BWAIT && e->rc == NM_RC_SERIAL)
                    snprintf(res, sizeof res, "SERIAL");
                else if (e->kind == NM_ALLCHECK)
                    snprintf(res, sizeof res, "mask %llx", (unsigned long long)e->fence);
                else
                    snprintf(res, sizeof res, "%s", th_errname(e->rc));
                l[n].t = e->t0;
                int w = snprintf(l[n].s, sizeof l[n].s, "%10.1f ms %6d/%-6d %-5s %-11s %c d%d hold %u fence %llu -> %s",
                                 nm_rel(c, e->t0), sl->pid, (int)tl->tid, nm_name_tag(e->name), what,
                                 e->mode ? e->mode : '-', e->depth, e->hold, (unsigned long long)e->fence, res);
                if (done && w > 0 && (size_t)w < sizeof l[n].s)
                    snprintf(l[n].s + w, sizeof l[n].s - (size_t)w, " at %.1f", nm_rel(c, e->t1));
                n++;
            }
        }
    }
    for (int i = 0; i < c->sch.n; i++) {
        const nm_fault_t *f = &c->sch.f[i];
        if (!f->done || !f->t_start || f->t_start < from || f->t_start > to)
            continue;
        if (n == cap) {
            line_t *m = realloc(l, cap * 2 * sizeof *l);
            if (!m)
                break;
            l = m;
            cap *= 2;
        }
        l[n].t = f->t_start;
        snprintf(l[n].s, sizeof l[n].s, "%10.1f ms FAULT %s pid %d until %.1f ms (%s)", nm_rel(c, f->t_start),
                 nm_fault_name(f->kind), (int)f->pid, nm_rel(c, f->t_end), f->note);
        n++;
    }
    qsort(l, n, sizeof *l, cmp_line);
    *np = n;
    return l;
}

void nm_hist_dump_around(const nm_hist_t *hs, FILE *out, int name, int64_t t, int64_t span)
{
    size_t n = 0;
    line_t *l = collect(hs, name, t - span, t + span, &n);
    if (!l)
        return;
    fprintf(out, "  events of %s within %.1f s (ms from the start, pid/tid, lock, call, mode, depth):\n",
            hs->c->sh->names[name], (double)span / 1e6);
    size_t mid = 0;
    while (mid < n && l[mid].t < t)
        mid++;
    size_t from = mid > 40 ? mid - 40 : 0;
    size_t to = mid + 25 < n ? mid + 25 : n;
    for (size_t i = from; i < to; i++)
        fprintf(out, "  %s\n", l[i].s);
    free(l);
}

int nm_hist_write(const nm_hist_t *hs, const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    size_t n = 0;
    line_t *l = collect(hs, -1, INT64_MIN, INT64_MAX, &n);
    for (size_t i = 0; l && i < n; i++)
        fprintf(f, "%s\n", l[i].s);
    free(l);
    fclose(f);
    return 0;
}
