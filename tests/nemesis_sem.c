/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * nemesis_sem.c - the semaphore role: two threads of each client use two
 * semaphores of NM_SEM_N permits, a counting one (flags 0) and one of
 * leased permits (DIST_SEM_LEASED), with wait, trywait and timedwait; a
 * thread that got a permit stays inside a while and posts it back.  Each
 * thread has its own dist_sem_t of each name; one that is told ENOLCK (the
 * semaphore was lost in Redis: SPEC) destroys and initializes it again.
 *
 * Its checks, on the intervals a thread was inside (from its wait's return
 * to its post's call, or its process's death):
 *
 *  sem-over   at no time more threads inside than permits.  Counting: a
 *             loss of Redis's state (a restart) makes a new semaphore; the
 *             threads inside since before it hold permits of the old one
 *             and are not counted after it, and each post they make into
 *             the new one with 0 (not told of the loss) is a permit more
 *             it may then grant.  Leased: only the threads whose post
 *             found their permit still held (0) are counted: a post that
 *             says EPERM (or ENOLCK) tells its thread the permit lapsed,
 *             and that lapse must have a cause, as a lock's
 *             (unexplained-lapse: a loss, a stop or cut of its process).
 *  sem-count  no permit is lost for good, and none made up: after the run
 *             (every client ended, a lease passed since the last death),
 *             the leased semaphore's value is NM_SEM_N; the counting one's
 *             is NM_SEM_N less the permits taken and never given back by
 *             killed threads (since the last loss, and plus the posts
 *             made into it by threads inside since before that loss),
 *             within what killed or failed calls (EIO) leave unknown.
 *  sem-told   (on unless NEMESIS_SEM_TOLD=0, for a library from before
 *             issue 28's SPEC sentence) after a loss of the counting
 *             semaphore, the first call of each thread that used it
 *             before says ENOLCK; and a post into the lost one adds
 *             nothing to the new one (sem-count counts none).
 *  timed      no timedwait says ETIMEDOUT before its deadline.
 *  code       (nemesis_history.c) only the codes SPEC gives.
 *
 * No semaphore under redlock:// (init says EINVAL: independent servers
 * cannot keep one count).
 */
#include "nemesis_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "distlock.h"

#define NM_SEM_N 2
#define NM_SEM_KINDS 2              /* 0 counting, 1 leased */
#define NM_SEM_THREADS 4            /* a role's threads at most (nemesis_roles.c) */

const char *const nm_sem_names[] = { "semc", "seml", NULL };

static int sem_base;                /* the first name's index (set in the client and the checker) */

static void find_base(void)
{
    for (int r = 0; r < nm_nroles; r++)
        if (nm_roles[r].names == nm_sem_names)
            sem_base = nm_role_base[r];
}
static dist_sem_t objs[NM_SEM_THREADS][NM_SEM_KINDS];

int nm_sem_usable(const nm_cfg_t *cfg, const char **why)
{
    if (cfg->topo == NM_TOPO_REDLOCK) {
        *why = "redlock:// has no semaphores";
        return 0;
    }
    return 1;
}

static int sem_init_one(dist_sem_t *s, const nm_client_cfg_t *cc, int k)
{
    return dist_sem_init(s, cc->sh->names[sem_base + k], NM_SEM_N, k ? DIST_SEM_LEASED : 0);
}

int nm_sem_open(const nm_client_cfg_t *cc, int base)
{
    sem_base = base;
    for (int t = 0; t < NM_SEM_THREADS; t++)
        for (int k = 0; k < NM_SEM_KINDS; k++) {
            int rc;
            /* (EIO: Redis not there yet; the thread's first call tries again) */
            for (int tries = 0; (rc = sem_init_one(&objs[t][k], cc, k)) == EIO && tries < 20; tries++)
                nm_sleep_us(100000);
            if (rc != 0)
                return -1;
        }
    return 0;
}

/* Told ENOLCK: the semaphore this process used was lost; SPEC: destroy and
 * initialize it again (until then every call says ENOLCK). */
static void renew_obj(nm_thr_t *t, int k)
{
    dist_sem_t *s = &objs[t->sub][k];
    for (int tries = 0; tries < 50 && !nm_stopping(t); tries++) {
        int rc = dist_sem_destroy(s);
        if (rc == 0 || rc == EINVAL) {
            if (sem_init_one(s, t->cc, k) == 0)
                return;
        }
        nm_sleep_us(20000);
    }
}

void *nm_sem_main(void *arg)
{
    nm_thr_t *t = arg;
    t->tid = (int)gettid();
    t->tl->tid = (uint32_t)t->tid;
    if (t->sub >= NM_SEM_THREADS)
        return NULL;
    int again = -1;
    while (!nm_stopping(t) && !t->tl->full) {
        /* after a call that failed (EIO), the same semaphore again: the
         * library settles what that call left unknown at its next call on
         * the object, and the value check at the end needs it settled */
        int armed = __atomic_load_n(&t->cc->sh->late_armed, __ATOMIC_ACQUIRE);
        int k = again >= 0 ? again : armed ? 0 : (int)nm_rnd_in(&t->rng, 0, NM_SEM_KINDS - 1);
        again = -1;
        dist_sem_t *s = &objs[t->sub][k];
        long r = nm_rnd_in(&t->rng, 0, 99);
        int op = r < 30 ? NM_OP_LOCK : r < 70 ? NM_OP_TIMED : NM_OP_TRY;
        /* The counting semaphore's permits taken by a killed thread are
         * gone for good (until a restart makes it anew): a wait without a
         * deadline there could outlast the run.  Timed instead. */
        if (k == 0 && op == NM_OP_LOCK)
            op = NM_OP_TIMED;
        t->hold++;
        nm_ev_t *e = nm_ev_begin(t->tl, NM_SWAIT, op, sem_base + k, 'w', 0, t->hold);
        int rc;
        if (op == NM_OP_TIMED) {
            int64_t rt0 = nm_realtime_us(), abs_us = rt0 + nm_rnd_in(&t->rng, 20, 1500) * 1000;
            if (e) {
                e->rt0_us = rt0;
                e->abs_rt_us = abs_us;
            }
            struct timespec ts = { abs_us / 1000000, (abs_us % 1000000) * 1000 };
            rc = dist_sem_timedwait(s, &ts);
        } else {
            rc = op == NM_OP_LOCK ? dist_sem_wait(s) : dist_sem_trywait(s);
        }
        if (e)
            e->rt1_us = nm_realtime_us();
        nm_ev_end(e, rc, 0);
        if (rc == ENOLCK) {
            renew_obj(t, k);
            continue;
        }
        if (rc == EIO)
            again = k;
        if (rc != 0) {
            if (rc != EAGAIN && rc != ETIMEDOUT)
                fprintf(stderr, "nemesis client %d/%d: sem wait %s: %s (%s)\n", t->pid, t->tid,
                        t->cc->sh->names[sem_base + k], strerror(rc), dist_lasterror());
            nm_sleep_us(rc == EAGAIN ? nm_rnd_in(&t->rng, 1000, 10000) : nm_rnd_in(&t->rng, 5000, 30000));
            continue;
        }
        /* inside up to 300 ms: long enough, mostly, for a fault aimed at a
         * thread inside (late replies) to come before its post */
        long in = nm_rnd_in(&t->rng, 0, 99) < 40 ? nm_rnd_in(&t->rng, 0, 30000)
                                                 : nm_rnd_in(&t->rng, 30000, 300000);
        /* a late fault waits for a post 80-400 ms away: be one */
        if (k == 0 && __atomic_load_n(&t->cc->sh->late_armed, __ATOMIC_ACQUIRE))
            in = nm_rnd_in(&t->rng, 150000, 350000);
        /* the plan, for the late fault's aim (nemesis_fault.c late_aim) */
        t->tl->plan_name = sem_base + k;
        t->tl->plan_mode = 'w';
        __atomic_store_n(&t->tl->plan_at, nm_now_us() + in, __ATOMIC_RELEASE);
        nm_sleep_us(in);
        __atomic_store_n(&t->tl->plan_at, 0, __ATOMIC_RELEASE);
        nm_ev_t *p = nm_ev_begin(t->tl, NM_SPOST, 0, sem_base + k, 'w', 0, t->hold);
        rc = dist_sem_post(s);
        nm_ev_end(p, rc, 0);
        if (rc == EIO)
            again = k;
        if (rc != 0 && rc != EPERM)
            fprintf(stderr, "nemesis client %d/%d: sem post %s: %s (%s)\n", t->pid, t->tid,
                    t->cc->sh->names[sem_base + k], strerror(rc), dist_lasterror());
        if (rc == ENOLCK)
            renew_obj(t, k);
        nm_sleep_us(nm_rnd_in(&t->rng, 500, 8000));
    }
    return NULL;
}

/* ------------------------------------------------------------- the checks */

/* A thread's time inside: from its wait's return to its post's call (or
 * its process's death, or the run's end). */
enum { IN_CLEAN, IN_LAPSED, IN_EIO, IN_DIED, IN_OPEN };
typedef struct inside {
    int64_t a, b;
    int64_t w0;                 /* its wait's call */
    int64_t p1;                 /* its post's return (0: none) */
    int slot, pid, tid, end;
    int post_rc;                /* -1: none, or in flight */
} inside_t;

/* What each semaphore's final value was read as (nm_sem_after). */
static int final_ok[NM_SEM_KINDS];
static int final_value[NM_SEM_KINDS];
static int64_t final_at;

typedef struct sweep_ev { int64_t t; int d; } sweep_ev_t;

static int cmp_sweep(const void *x, const void *y)
{
    const sweep_ev_t *p = x, *q = y;
    /* at one time, leaving before entering */
    return p->t < q->t ? -1 : p->t > q->t ? 1 : p->d - q->d;
}

/* Losses of Redis's state that a semaphore of this kind feels: a restart
 * (any kind); a server clock's jump forward (leased: the holds' deadlines
 * are Redis's time). */
static int sem_loss(const nm_fault_t *f, int k)
{
    if (!f->done || !f->t_start || !(f->effects & NM_FX_LOSS) || (f->effects & NM_FX_MINORITY))
        return 0;
    if (f->kind == NM_F_RESTART)
        return 1;
    return k == 1 && f->kind == NM_F_SRVCLOCK;
}

/* The library tells a semaphore's users of its loss (SPEC, Semaphore:
 * ENOLCK until it is made again; issue 28), so a post into a lost
 * incarnation adds nothing to the new one.  On by default;
 * NEMESIS_SEM_TOLD=0 judges a library from before that (a holder's post
 * after a loss then may add a permit to the new semaphore). */
static int sem_told(void)
{
    const char *told = getenv("NEMESIS_SEM_TOLD");
    return !told || *told != '0';
}

/* Collects the intervals of semaphore k, and counts what the value check
 * needs: *sure permits kept by killed threads, *maybe those a killed or
 * failed call leaves unknown; both since `since` (the last loss). */
static inside_t *collect(nm_hist_t *hs, int k, size_t *np)
{
    const nm_ctx_t *c = hs->c;
    size_t cap = 256, n = 0;
    inside_t *v = malloc(cap * sizeof *v);
    if (!v)
        return NULL;
    for (int s = 0; s < c->sh->nslots; s++) {
        const nm_slot_t *sl = &c->sh->slot[s];
        if (sl->pid <= 0)
            continue;
        for (int t = 0; t < NM_MAX_THREADS; t++) {
            const nm_thread_log_t *tl = &sl->th[t];
            uint32_t ne = __atomic_load_n(&tl->n, __ATOMIC_ACQUIRE);
            int open = -1;
            for (uint32_t i = 0; i < ne; i++) {
                const nm_ev_t *e = &tl->ev[i];
                if ((e->kind != NM_SWAIT && e->kind != NM_SPOST) || e->name != sem_base + k)
                    continue;
                int done = __atomic_load_n(&e->state, __ATOMIC_ACQUIRE) == 2;
                if (e->kind == NM_SWAIT && done && e->rc == 0) {
                    if (n == cap) {
                        inside_t *m = realloc(v, 2 * cap * sizeof *v);
                        if (!m)
                            break;
                        v = m;
                        cap *= 2;
                    }
                    v[n] = (inside_t){ e->t1, 0, e->t0, 0, s, sl->pid, (int)tl->tid, IN_OPEN, -1 };
                    open = (int)n++;
                } else if (e->kind == NM_SPOST && open >= 0) {
                    inside_t *x = &v[open];
                    x->b = e->t0;
                    x->post_rc = done ? e->rc : -1;
                    x->p1 = done ? e->t1 : 0;
                    x->end = !done ? (sl->died_us ? IN_DIED : IN_OPEN) : e->rc == 0 ? IN_CLEAN
                             : e->rc == EIO ? IN_EIO : IN_LAPSED;
                    open = -1;
                }
            }
            if (open >= 0) {
                inside_t *x = &v[open];
                x->b = sl->died_us ? sl->died_us : hs->end;
                x->end = sl->died_us ? IN_DIED : IN_OPEN;
            }
        }
    }
    *np = n;
    return v;
}

/* The last loss of semaphore k's state before t (its end), or 0. */
static int64_t loss_before(const nm_hist_t *hs, int k, int64_t t, int64_t *start)
{
    const nm_ctx_t *c = hs->c;
    int64_t last = 0;
    for (int i = 0; i < c->sch.n; i++) {
        const nm_fault_t *f = &c->sch.f[i];
        if (!sem_loss(f, k) || f->t_start > t)
            continue;
        int64_t e = f->ended ? f->t_end : hs->end;
        if (e > last) {
            last = e;
            if (start)
                *start = f->t_start;
        }
    }
    return last;
}

/* The first loss of semaphore k's state that ended after a and began by
 * upto: its start, or 0. */
static int64_t first_loss(const nm_hist_t *hs, int k, int64_t a, int64_t upto)
{
    const nm_ctx_t *c = hs->c;
    int64_t first = 0;
    for (int i = 0; i < c->sch.n; i++) {
        const nm_fault_t *f = &c->sch.f[i];
        int64_t e = f->ended ? f->t_end : hs->end;
        if (sem_loss(f, k) && e > a && f->t_start <= upto && (!first || f->t_start < first))
            first = f->t_start;
    }
    return first;
}

static void check_over(nm_hist_t *hs, int k, inside_t *v, size_t n)
{
    const nm_ctx_t *c = hs->c;
    sweep_ev_t *ev = malloc((4 * n + 1) * sizeof *ev);
    if (!ev)
        return;
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        inside_t *x = &v[i];
        if (x->b <= x->a)
            continue;
        if (k == 1) {
            /* leased: only permits a post found still held; and a
             * process's permits are one hold, not each thread's: after a
             * lapse, which of its threads' posts says EPERM is the
             * process's choice, so none of its permits held beside a
             * lapsed one counts */
            if (x->end != IN_CLEAN)
                continue;
            int beside = 0;
            for (size_t j = 0; j < n && !beside; j++)
                beside = v[j].pid == x->pid && v[j].end != IN_CLEAN && v[j].a < x->b && v[j].b > x->a;
            if (beside)
                continue;
            ev[m++] = (sweep_ev_t){ x->a, +1 };
            ev[m++] = (sweep_ev_t){ x->b, -1 };
            continue;
        }
        /* counting: a permit of the semaphore as it was since its last
         * loss before the wait; one held across a loss counts only until
         * the loss, and its post, if made (0), is a permit more after it */
        /* (a wait that returned before the loss ended was served by the
         * server that lost its state: a reply does not outlive its server) */
        int64_t ls = 0, le = loss_before(hs, k, x->p1 ? x->p1 : x->b, &ls);
        if (le && le > x->a) {
            /* counted until the first loss after its wait (several may
             * follow each other), its post's permit after the last */
            int64_t l1 = first_loss(hs, k, x->a, x->p1 ? x->p1 : x->b);
            int64_t until = l1 && l1 < x->b ? l1 : x->b;
            if (until > x->a) {
                ev[m++] = (sweep_ev_t){ x->a, +1 };
                ev[m++] = (sweep_ev_t){ until, -1 };
            }
            /* (a post under way at the loss may reach the new one: resent) */
            if (x->end == IN_CLEAN || x->end == IN_EIO || x->post_rc < 0)
                ev[m++] = (sweep_ev_t){ x->b > ls ? x->b : ls + 1, -2 };  /* allowance (below) */
            continue;
        }
        ev[m++] = (sweep_ev_t){ x->a, +1 };
        ev[m++] = (sweep_ev_t){ x->b, -1 };
    }
    qsort(ev, m, sizeof *ev, cmp_sweep);
    /* the losses reset the allowance (a new semaphore of N permits) */
    int inside = 0, extra = 0, reported = 0;
    int64_t next_loss = 0;
    size_t li = 0;
    int64_t losses[NM_MAX_FAULTS];
    size_t nl = 0;
    for (int i = 0; i < c->sch.n; i++)
        if (sem_loss(&c->sch.f[i], k) && k == 0)
            losses[nl++] = c->sch.f[i].t_start;
    next_loss = nl ? losses[0] : INT64_MAX;
    for (size_t i = 0; i < m; i++) {
        /* (after the holders from before the loss stopped counting at it) */
        while (ev[i].t > next_loss) {
            extra = 0;
            li++;
            next_loss = li < nl ? losses[li] : INT64_MAX;
        }
        if (ev[i].d == -2) {
            extra++;
            continue;
        }
        inside += ev[i].d;
        if (inside > NM_SEM_N + extra && reported < 3) {
            reported++;
            if (getenv("NEMESIS_SEM_DEBUG"))
                for (size_t j = 0; j < n; j++)
                    if (v[j].a <= ev[i].t && v[j].b > ev[i].t)
                        fprintf(stderr, "  inside: %d/%d from %.1f to %.1f ms (wait at %.1f, end %d, "
                                "post %s)\n", v[j].pid, v[j].tid, nm_rel(c, v[j].a), nm_rel(c, v[j].b),
                                nm_rel(c, v[j].w0), v[j].end, th_errname(v[j].post_rc));
            nm_viol_add(hs, NM_C_SEM, sem_base + k, ev[i].t,
                        "%d threads inside %s semaphore %s at %.1f ms, which has %d permits%s%s",
                        inside, k ? "the leased" : "the counting", c->sh->names[sem_base + k],
                        nm_rel(c, ev[i].t), NM_SEM_N, extra ? " (and " : "",
                        extra ? "permits posted into it by holders from before a loss)" : "");
        }
    }
    free(ev);
}

/* Leased: a permit whose post said it lapsed (EPERM, ENOLCK) must have lost
 * it to a cause, as a lock's hold (the process's permits are one hold,
 * renewed by its watchdog). */
static void check_lapses(nm_hist_t *hs, int k, inside_t *v, size_t n)
{
    const nm_ctx_t *c = hs->c;
    int reported = 0;
    for (size_t i = 0; i < n && reported < 3; i++) {
        inside_t *x = &v[i];
        if (x->end != IN_LAPSED)
            continue;
        /* the process's hold: from the first of its permits that overlap
         * this one without a gap */
        int64_t g = x->w0, ret = x->a;
        for (int changed = 1; changed;) {
            changed = 0;
            for (size_t j = 0; j < n; j++) {
                inside_t *y = &v[j];
                if (y->pid == x->pid && y->a < ret && y->b >= g && y->w0 < g) {
                    g = y->w0;
                    ret = y->a;
                    changed = 1;
                }
            }
        }
        nm_hold_t h;
        memset(&h, 0, sizeof h);
        h.slot = x->slot;
        h.pid = x->pid;
        h.tid = x->tid;
        h.name = sem_base + k;
        h.mode = 'w';
        h.t_call = g;
        h.t_ret = ret;
        h.g_lb = g;
        h.t_end = x->b;
        int64_t t = x->p1 ? x->p1 : x->b;
        if (nm_lapse_explained(hs, &h, g, ret, t))
            continue;
        reported++;
        nm_viol_add(hs, NM_C_LAPSE, sem_base + k, t,
                    "the leased permit of %d/%d taken at %.1f ms (its process's hold since %.1f ms) "
                    "lapsed: its post at %.1f ms said %s, though no fault explains it (no loss of "
                    "Redis state, no stop or cut of its process long enough)",
                    x->pid, x->tid, nm_rel(c, x->a), nm_rel(c, g), nm_rel(c, x->b),
                    th_errname(x->post_rc));
    }
}

/* The timed waits, and the value at the end. */
static void check_timed(nm_hist_t *hs, int k)
{
    const nm_ctx_t *c = hs->c;
    for (int s = 0; s < c->sh->nslots; s++) {
        const nm_slot_t *sl = &c->sh->slot[s];
        for (int t = 0; sl->pid > 0 && t < NM_MAX_THREADS; t++) {
            const nm_thread_log_t *tl = &sl->th[t];
            uint32_t ne = __atomic_load_n(&tl->n, __ATOMIC_ACQUIRE);
            for (uint32_t i = 0; i < ne; i++) {
                const nm_ev_t *e = &tl->ev[i];
                if (e->kind == NM_SWAIT && e->name == sem_base + k && e->op == NM_OP_TIMED &&
                    __atomic_load_n(&e->state, __ATOMIC_ACQUIRE) == 2 && e->rc == ETIMEDOUT &&
                    nm_timed_early(hs, s, e->t0, e->rt0_us, e->abs_rt_us, e->rt1_us, e->t1))
                    nm_viol_add(hs, NM_C_TIMED, sem_base + k, e->t1, "timedwait of %s by %d/%d "
                                "returned ETIMEDOUT %.3f ms before its deadline", c->sh->names[sem_base + k],
                                sl->pid, (int)tl->tid, (double)(e->abs_rt_us - e->rt1_us) / 1000.0);
            }
        }
    }
}

static void check_value(nm_hist_t *hs, int k, inside_t *v, size_t n)
{
    const nm_ctx_t *c = hs->c;
    if (!final_ok[k])
        return;
    int V = final_value[k];
    if (k == 1) {
        if (V != NM_SEM_N)
            nm_viol_add(hs, NM_C_SEMCOUNT, sem_base + k, final_at,
                        "the leased semaphore %s's value after the run is %d, not %d: permits %s for "
                        "good (every client has ended, and a lease has passed since the last death)",
                        c->sh->names[sem_base + k], V, NM_SEM_N, V < NM_SEM_N ? "lost" : "made up");
        return;
    }
    /* counting: since the last loss */
    int64_t ls = 0, last = loss_before(hs, k, INT64_MAX, &ls);
    int sure = 0, maybe = 0, extra = 0, extra_maybe = 0;
    for (size_t i = 0; i < n; i++) {
        inside_t *x = &v[i];
        if (last && x->a < last) {
            /* inside across the loss: its post, made into the new one (its
             * return after the loss began), is a permit more.  Told
             * (sem_told), a post begun before the loss adds nothing to the
             * new one: the old server ran it, or it said ENOLCK (or was
             * settled) on the lost incarnation it was sent to; only a post
             * begun after the process made the semaphore again adds one. */
            int64_t eff = x->p1 ? x->p1 : x->b;
            if (sem_told())
                eff = x->b;
            /* (a wait that returned while the server restarted may have
             * been served by the new one, just up: its post then adds
             * nothing) */
            int sure_old = x->a < ls - 25000;
            if (eff > ls && x->end == IN_CLEAN)
                (x->b > ls && sure_old ? extra++ : extra_maybe++);
            else if (eff > ls && (x->end == IN_EIO || (x->end == IN_DIED && x->post_rc < 0 && x->p1 == 0 &&
                                                         x->b != c->sh->slot[x->slot].died_us)))
                extra_maybe++;
            continue;
        }
        if (x->end == IN_DIED)
            (x->post_rc < 0 && x->b != c->sh->slot[x->slot].died_us) ? maybe++ : sure++;
        else if (x->end == IN_EIO || x->end == IN_OPEN)
            maybe++;
    }
    /* calls that may have taken a permit and not given it back: waits of a
     * killed process in flight, failed waits (EIO) and posts of killed
     * processes, since the loss */
    for (int s = 0; s < c->sh->nslots; s++) {
        const nm_slot_t *sl = &c->sh->slot[s];
        for (int t = 0; sl->pid > 0 && t < NM_MAX_THREADS; t++) {
            const nm_thread_log_t *tl = &sl->th[t];
            uint32_t ne = __atomic_load_n(&tl->n, __ATOMIC_ACQUIRE);
            for (uint32_t i = 0; i < ne; i++) {
                const nm_ev_t *e = &tl->ev[i];
                if (e->kind != NM_SWAIT || e->name != sem_base + k || e->t0 < last)
                    continue;
                int done = __atomic_load_n(&e->state, __ATOMIC_ACQUIRE) == 2;
                if (!done || e->rc == EIO)
                    maybe++;
            }
        }
    }
    int hi = NM_SEM_N + extra + extra_maybe - sure, lo = NM_SEM_N + extra - sure - maybe;
    /* a run that passes keeps no history: say what was judged, so that a
     * missed post counted twice can be told from one that never ran */
    if (c->cfg->verbose)
        fprintf(stderr, "nemesis: %s's value %d judged against %d..%d (%d permits, %d kept by killed "
                "threads, %d unknown, %d (+%d maybe) posted across a loss; last loss %s)\n",
                c->sh->names[sem_base + k], V, lo, hi, NM_SEM_N, sure, maybe, extra, extra_maybe,
                last ? "a restart" : "none");
    if (V > hi || V < lo)
        nm_viol_add(hs, NM_C_SEMCOUNT, sem_base + k, final_at,
                    "the counting semaphore %s's value after the run is %d; since the last loss of "
                    "Redis state (%s) it must be %d..%d: %d permits, %d kept by killed threads, %d "
                    "unknown (calls of killed processes, EIO), %d%s posted by holders from before the "
                    "loss: permits %s", c->sh->names[sem_base + k], V,
                    last ? "a restart" : "none", lo, hi, NM_SEM_N, sure, maybe, extra,
                    extra_maybe ? " (or more)" : "", V > hi ? "made up (a post counted twice?)"
                    : "lost for good");
}

/* After a loss (a restart), each thread that used the counting semaphore
 * before it is told so by its first call that begins after the server is
 * back (SPEC, Semaphore: ENOLCK until the object is made again). */
static void check_told(nm_hist_t *hs, int k)
{
    const nm_ctx_t *c = hs->c;
    int reported = 0;
    for (int i = 0; i < c->sch.n && reported < 3; i++) {
        const nm_fault_t *f = &c->sch.f[i];
        if (!sem_loss(f, k))
            continue;
        int64_t ls = f->t_start, le = f->ended ? f->t_end : hs->end;
        for (int s = 0; s < c->sh->nslots && reported < 3; s++) {
            const nm_slot_t *sl = &c->sh->slot[s];
            /* SPEC tells the process, not each thread: once one of its
             * threads was told (ENOLCK) after the loss and made the
             * semaphore again, its siblings use the new one, a call in
             * flight meanwhile too (it returns after the sibling's) */
            int64_t told_at = INT64_MAX;
            for (int t = 0; sl->pid > 0 && t < NM_MAX_THREADS; t++) {
                const nm_thread_log_t *tl = &sl->th[t];
                uint32_t ne = __atomic_load_n(&tl->n, __ATOMIC_ACQUIRE);
                for (uint32_t j = 0; j < ne; j++) {
                    const nm_ev_t *e = &tl->ev[j];
                    if ((e->kind == NM_SWAIT || e->kind == NM_SPOST) && e->name == sem_base + k &&
                        __atomic_load_n(&e->state, __ATOMIC_ACQUIRE) == 2 && e->rc == ENOLCK &&
                        e->t1 >= ls && e->t1 < told_at)
                        told_at = e->t1;
                }
            }
            for (int t = 0; sl->pid > 0 && t < NM_MAX_THREADS && reported < 3; t++) {
                const nm_thread_log_t *tl = &sl->th[t];
                uint32_t ne = __atomic_load_n(&tl->n, __ATOMIC_ACQUIRE);
                int used = 0;
                for (uint32_t j = 0; j < ne; j++) {
                    const nm_ev_t *e = &tl->ev[j];
                    if ((e->kind != NM_SWAIT && e->kind != NM_SPOST) || e->name != sem_base + k)
                        continue;
                    int done = __atomic_load_n(&e->state, __ATOMIC_ACQUIRE) == 2;
                    if (done && e->t1 < ls && e->rc != ENOLCK)
                        used = 1;
                    if (e->t0 < le || !used)
                        continue;
                    if (done && e->rc != ENOLCK && e->rc != EIO && e->t1 < told_at) {
                        reported++;
                        nm_viol_add(hs, NM_C_SEMTOLD, sem_base + k, e->t1,
                                    "%d/%d used the counting semaphore %s before Redis lost it "
                                    "(restart at %.1f ms), and its next call (%s at %.1f ms) said "
                                    "%s, not ENOLCK", sl->pid, (int)tl->tid, c->sh->names[sem_base + k],
                                    nm_rel(c, ls), e->kind == NM_SPOST ? "post" : "wait",
                                    nm_rel(c, e->t0), th_errname(e->rc));
                    }
                    break;
                }
            }
        }
    }
}

void nm_sem_check(nm_hist_t *hs)
{
    find_base();
    for (int k = 0; k < NM_SEM_KINDS; k++) {
        size_t n = 0;
        inside_t *v = collect(hs, k, &n);
        if (!v)
            continue;
        check_over(hs, k, v, n);
        if (k == 1)
            check_lapses(hs, k, v, n);
        check_timed(hs, k);
        check_value(hs, k, v, n);
        if (k == 0 && sem_told())
            check_told(hs, k);
        free(v);
    }
}

/* After the run: each semaphore's value, read with the library from this
 * process once a lease (and any time a server's clock was set back) has
 * passed since the last death, so that a dead holder's leased permit has
 * come back. */
void nm_sem_after(nm_hist_t *hs)
{
    const nm_ctx_t *c = hs->c;
    const nm_cfg_t *cfg = c->cfg;
    find_base();
    int64_t until = nm_now_us();
    int64_t back = 0;
    for (int i = 0; i < c->sch.n; i++) {
        const nm_fault_t *f = &c->sch.f[i];
        if (f->done && f->kind == NM_F_SRVCLOCK && f->dir < 0)
            back += f->param * 1000;
    }
    for (int s = 0; s < c->sh->nslots; s++) {
        int64_t d = c->sh->slot[s].died_us;
        if (d && d + cfg->lease_ms * 1000 + back + 1000000 > until)
            until = d + cfg->lease_ms * 1000 + back + 1000000;
    }
    while (nm_now_us() < until)
        th_sleep_ms(50);
    setenv("DISTLOCK_URL", c->direct_url, 1);
    for (int k = 0; k < NM_SEM_KINDS; k++) {
        dist_sem_t s;
        final_ok[k] = 0;
        if (dist_sem_init(&s, c->sh->names[sem_base + k], NM_SEM_N, k ? DIST_SEM_LEASED : 0) != 0) {
            fprintf(stderr, "nemesis: semaphore %s: %s\n", c->sh->names[sem_base + k], dist_lasterror());
            continue;
        }
        final_ok[k] = dist_sem_getvalue(&s, &final_value[k]) == 0;
        if (!final_ok[k])
            fprintf(stderr, "nemesis: semaphore %s's value: %s\n", c->sh->names[sem_base + k],
                    dist_lasterror());
        dist_sem_destroy(&s);
    }
    final_at = nm_now_us();
    if (cfg->verbose)
        fprintf(stderr, "nemesis: semaphores after the run: %s %d, %s %d\n", c->sh->names[sem_base],
                final_value[0], c->sh->names[sem_base + 1], final_value[1]);
}
