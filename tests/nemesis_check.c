/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * nemesis_check.c - the checks of a run's history.  Each is generic: it
 * states a property of every lock, whatever the fault, and excuses only
 * what the recorded faults and indeterminate calls can explain.
 *
 *  overlap       two holds of one name overlap (write/write or write/read)
 *                only when the earlier holder was told ENOLCK by the
 *                unlock that ended its hold, died, or that unlock is
 *                indeterminate (EIO), and the later has the greater fence.
 *                Within one process, never.  A relock by the holder's
 *                thread that says EOWNERDEAD with a greater fence (it took
 *                the lock anew after its own hold lapsed) is evidence of
 *                the lapse, not the telling of it: SPEC (ENOLCK) has the
 *                unlock that ends the section say ENOLCK as well.
 *  store         every write the fenced store refused (and every read that
 *                found a newer write) belongs to a hold whose last unlock
 *                said ENOLCK, that died, or whose unlock is indeterminate;
 *                two processes never write with one fence.
 *  stale-return  no lock call (relocks too) returns 0 or EOWNERDEAD with a
 *                fence below that of another process's conflicting hold
 *                whose own lock call had already returned: Redis had given
 *                the lock on, so the hold was past its validity.  Nor
 *                returns a hold its process had before Redis lost it (a
 *                restart, a break of that name) later than 100 ms after.
 *  unexplained-lapse  a hold lapses (ENOLCK, overlapped by a later hold,
 *                refused by the store) only when a fault explains it: Redis
 *                lost state (restart, break, failover) during it; its fixed
 *                lease ran out; or its process was stopped, or cut from
 *                Redis, long enough that no renewal could keep it: from its
 *                grant or its last renewal (every lease/3) to the evidence,
 *                a lease (a claim window for a network fault at its grant).
 *  ownerdead     every EOWNERDEAD follows a real lapse (a relock's: of the
 *                thread's own hold, above): a hold with a lower
 *                fence that died, was told ENOLCK or EIO, lapsed (above), or
 *                a lock call in flight when its process was killed that
 *                could have been granted, or a break; with no hold released
 *                cleanly in between (which clears the trace).  With redlock
 *                also a copy on one server that lapsed there: a hold
 *                released while that server was cut off (the release owed
 *                to it), whose lease ran out there before the owed release
 *                could reach it (the server away that long, or the process
 *                stopped, cut or killed before it could pay).
 *  liveness      the lock is never free (no hold, no fault or its healing
 *                time, no hold a dead process may keep) for longer than
 *                lease/3 + 1 s while a lock or timed lock call waits for it.
 *  hang          every call returns within its bound (the run's watchdog
 *                and the end of the run).
 *  code          every code is one the SPEC gives for that call.
 *  crash         no client dies unless the nemesis killed it.
 *  fence-order   a hold that began after another process's hold ended (its
 *                unlock returned, or it died) has the greater fence.
 *  timed         ETIMEDOUT never before the deadline (CLOCK_REALTIME, as
 *                the caller's clock says: it may have been set back).
 *
 * The roles' checks (nemesis_roles.c) run after these: the condition's
 * here (lost-wakeup), the others' in their files.
 *
 * Times are taken by the clients around their calls, so a violation is
 * reported only when the times prove it: a return is taken as late as the
 * thread read the clock (or as early as a stop of its process that began
 * during the call), and tolerances cover the reading itself.
 */
#include "nemesis_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* The thread reads the clock after the call returns: on a loaded machine
 * it may be scheduled out in between. */
#define NM_TOL_US 25000
/* SPEC "Local trust": after a loss without a sign, no thread gets or joins
 * a lost hold later than 50 ms after the loss. */
#define NM_TOL_LOSS_US 60000
/* After a loss the clients are shown (a dropped connection, a break's
 * push), a thread may still take the lost hold while that sign is on its
 * way: the SPEC says at once, this allows 100 ms on a loaded machine. */
#define NM_TOL_SIGN_US 100000
/* How late a renewal may run (the watchdog's tick, a loaded machine). */
#define NM_SLACK_US 250000
/* A fixed lease's own allowance: 1 % + 2 ms of drift, and the clock. */
#define NM_FIXED_SLACK_US 20000

static int conflict(char a, char b)
{
    return a == 'w' || b == 'w';
}

/* A lock with a fixed lease (a role's names: the default lease, renewed). */
static int fixed_name(int name)
{
    return name >= 0 && name < nm_nlocks && nm_locks[name].fixed;
}

static int64_t lease_us(const nm_hist_t *hs, int name)
{
    const nm_cfg_t *cfg = hs->c->cfg;
    return (fixed_name(name) ? cfg->fixed_ms : cfg->lease_ms) * 1000LL;
}

static int64_t claim_us(const nm_hist_t *hs, int name)
{
    int64_t l = lease_us(hs, name);
    return fixed_name(name) ? l : (l < 2000000 ? l : 2000000);
}

/* A fault that lost state of name (LOSS) ran at some time within [a, b]
 * (an instant fault runs from its start until the nemesis saw it done: a
 * break is the CLI's run). */
static const nm_fault_t *loss_within_(const nm_hist_t *hs, int name, int64_t a, int64_t b, int sure,
                                      int latest)
{
    const nm_ctx_t *c = hs->c;
    const nm_fault_t *last = NULL;
    /* latest: the tolerances count from the loss that took the hold (a
     * restart before a break of the same hold must not shorten the break's
     * sign delay; single seed 16); else the earliest. */
    for (int i = 0; i < c->sch.n; i++) {
        const nm_fault_t *f = &c->sch.f[i];
        int64_t e = f->ended ? f->t_end : hs->end;
        if (sure && (f->effects & NM_FX_MINORITY))
            continue;
        /* a server clock's jump forward surely loses only the holds whose
         * time left is shorter: any hold of name only past its lease */
        if (sure && f->kind == NM_F_SRVCLOCK && name >= 0 && name < nm_nlocks &&
            f->param * 1000 < lease_us(hs, name) + NM_SLACK_US)
            continue;
        if ((f->effects & NM_FX_LOSS) && f->t_start <= b && e >= a &&
            (f->name < 0 || (f->kind != NM_F_BREAK && f->kind != NM_F_DELKEY) || f->name == name) &&
            (!last || (latest ? f->t_start > last->t_start : f->t_start < last->t_start)))
            last = f;
    }
    return last;
}

static const nm_fault_t *loss_within(const nm_hist_t *hs, int name, int64_t a, int64_t b)
{
    return loss_within_(hs, name, a, b, 0, 1);
}

const nm_fault_t *nm_loss_within(const nm_hist_t *hs, int name, int64_t a, int64_t b)
{
    return loss_within_(hs, name, a, b, 0, 1);
}

/* The first loss within [a, b] that surely took every hold of name (not
 * one server of several: NM_FX_MINORITY). */
static const nm_fault_t *sure_loss_within(const nm_hist_t *hs, int name, int64_t a, int64_t b)
{
    return loss_within_(hs, name, a, b, 1, 0);
}

/* How late a sign of a loss at time t (a dropped connection, a break's
 * push) may reach process pid: its link's delay then, or until a cut or a
 * stop of it ends. */
static int64_t sign_delay(const nm_hist_t *hs, int pid, int64_t t)
{
    const nm_ctx_t *c = hs->c;
    int64_t most = 0;
    for (int i = 0; i < c->sch.n; i++) {
        const nm_fault_t *f = &c->sch.f[i];
        /* (a restart's own down time is the sign, not a delay of it) */
        if (!f->t_start || f->t_start > t || !(f->pid == 0 || f->pid == pid) ||
            !(f->effects & (NM_FX_NET | NM_FX_STOP)) || (f->effects & NM_FX_LOSS))
            continue;
        int64_t e = f->ended ? f->t_end : hs->end;
        int64_t d = 0;
        if (f->kind == NM_F_DELAY || f->kind == NM_F_JITTER)
            d = e + f->param * 1000 >= t ? f->param * 1000 : 0;
        else if (f->kind == NM_F_LATE)
            d = e + f->param * 1000 >= t ? e + f->param * 1000 - t + c->cfg->io_timeout_ms * 1000 : 0;
        else if (e >= t)
            d = e - t + c->cfg->io_timeout_ms * 1000;
        if (d > most)
            most = d;
    }
    return most;
}

/* ------------------------------------------------------------- indexes */

typedef struct byname {
    int *ix;                    /* holds of the name by t_ret */
    size_t n;
} byname_t;

static const nm_hist_t *sort_hs;

static int cmp_ret(const void *a, const void *b)
{
    const nm_hold_t *x = &sort_hs->h[*(const int *)a], *y = &sort_hs->h[*(const int *)b];
    return x->t_ret < y->t_ret ? -1 : x->t_ret > y->t_ret;
}

static void index_names(const nm_hist_t *hs, byname_t *bn)
{
    for (int k = 0; k < nm_nlocks; k++) {
        bn[k].ix = malloc((hs->nh ? hs->nh : 1) * sizeof(int));
        bn[k].n = 0;
    }
    for (size_t i = 0; i < hs->nh; i++) {
        byname_t *b = &bn[hs->h[i].name];
        if (b->ix)
            b->ix[b->n++] = (int)i;
    }
    sort_hs = hs;
    for (int k = 0; k < nm_nlocks; k++)
        if (bn[k].ix)
            qsort(bn[k].ix, bn[k].n, sizeof(int), cmp_ret);
}

/* ------------------------------------------------ chains and grant times */

/* Holds of one process with one fence are one Redis hold passed between
 * its threads; it was granted no earlier than its first lock call, nor
 * before another process's conflicting hold with a lower fence was
 * released (that one was vouched for until its unlock began). */
static void grant_bounds(nm_hist_t *hs, byname_t *bn)
{
    for (int k = 0; k < nm_nlocks; k++) {
        byname_t *b = &bn[k];
        for (size_t i = 0; i < b->n; i++) {
            nm_hold_t *h = &hs->h[b->ix[i]];
            h->chain = b->ix[i];
            for (size_t j = i; j-- > 0;) {
                nm_hold_t *u = &hs->h[b->ix[j]];
                if (u->pid == h->pid && u->fence == h->fence) {
                    h->chain = u->chain;
                    break;
                }
            }
        }
        for (size_t i = 0; i < b->n; i++) {
            nm_hold_t *h = &hs->h[b->ix[i]];
            if (h->chain != b->ix[i]) {
                h->g_lb = hs->h[h->chain].g_lb;
                continue;
            }
            int64_t g = h->t_call;
            for (size_t j = i; j-- > 0;) {
                nm_hold_t *u = &hs->h[b->ix[j]];
                if (u->pid != h->pid && u->unlock_rc == 0 && u->fence < h->fence &&
                    conflict(u->mode, h->mode) && u->t_end < h->t_ret && u->t_end > g)
                    g = u->t_end;
            }
            h->g_lb = g;
        }
    }
}

/* ------------------------------------------------------------- overlap */

static void note_lapse(nm_hold_t *a, int64_t t, const char *why)
{
    if (!a->lapse_ev || t < a->lapse_ev) {
        a->lapse_ev = t;
        snprintf(a->lapse_why, sizeof a->lapse_why, "%s", why);
    }
}

static void check_overlap(nm_hist_t *hs, byname_t *bn)
{
    char sa[256], sb[256], why[160];
    for (int k = 0; k < nm_nlocks; k++) {
        byname_t *b = &bn[k];
        for (size_t i = 0; i < b->n; i++) {
            nm_hold_t *a = &hs->h[b->ix[i]];
            for (size_t j = i + 1; j < b->n; j++) {
                nm_hold_t *x = &hs->h[b->ix[j]];
                if (x->t_ret >= a->t_end)
                    break;
                if (!conflict(a->mode, x->mode) || (a->pid == x->pid && a->tid == x->tid))
                    continue;
                if (a->pid == x->pid) {
                    nm_viol_add(hs, NM_C_OVERLAP, k, x->t_ret,
                                "two threads of one process hold %s at once: %s, and %s",
                                hs->c->sh->names[k], nm_hold_str(hs, a, sa, sizeof sa),
                                nm_hold_str(hs, x, sb, sizeof sb));
                    continue;
                }
                if (x->fence > a->fence) {
                    snprintf(why, sizeof why, "%d/%d took it with fence %llu at %.1f ms", x->pid,
                             x->tid, (unsigned long long)x->fence, nm_rel(hs->c, x->t_ret));
                    note_lapse(a, x->t_ret, why);
                }
                int lapsed = a->unlock_rc == ENOLCK || a->unlock_rc == EIO || a->died || a->open;
                if (lapsed && x->fence > a->fence)
                    continue;
                /* x returned after a began but holds the older grant (its
                 * process stopped or slowed between the grant and the
                 * return): x is the earlier holder, and must be the one
                 * told; whether its return came too late is stale-return's
                 * to judge, with its tolerances (netns seed 218) */
                int x_lapsed = x->unlock_rc == ENOLCK || x->unlock_rc == EIO || x->died || x->open;
                if (x_lapsed && x->fence < a->fence)
                    continue;
                const nm_fault_t *xl = a->unlock_rc == 0 && x->fence > a->fence
                                       ? loss_within(hs, k, x->t_call - 2000000, x->t_ret) : NULL;
                if (xl && a->t_end - x->t_ret <= NM_TOL_LOSS_US + sign_delay(hs, a->pid, xl->t_start))
                    continue;       /* within the SPEC's 50 ms of a loss, and its sign's delay */
                nm_viol_add(hs, NM_C_OVERLAP, k, x->t_ret,
                            "%s began while %s was still held (%.1f ms of overlap): %s",
                            nm_hold_str(hs, x, sb, sizeof sb), nm_hold_str(hs, a, sa, sizeof sa),
                            (double)(a->t_end - x->t_ret) / 1000.0,
                            x->fence <= a->fence ? "the later hold does not have the greater fence"
                                                 : "the earlier holder was not told ENOLCK");
            }
        }
    }
}

/* --------------------------------------------------------------- store */

static nm_hold_t *find_hold(nm_hist_t *hs, int name, int pid, int tid, uint32_t hold)
{
    /* (a lock-all's holds share their hold number: one per name) */
    for (size_t i = 0; i < hs->nh; i++)
        if (hs->h[i].pid == pid && hs->h[i].tid == tid && hs->h[i].hold == hold && hs->h[i].name == name)
            return &hs->h[i];
    return NULL;
}

static void check_store(nm_hist_t *hs)
{
    char sa[256];
    for (int k = 0; k < nm_nlocks; k++) {
        uint64_t hi = 0;
        int hi_pid = 0;
        for (size_t i = 0; i < hs->nstore[k]; i++) {
            nm_store_entry_t *e = &hs->store[k][i];
            if (e->ok && e->write) {
                if (e->fence < hi)
                    nm_viol_add(hs, NM_C_STORE, k, 0, "the store accepted fence %llu after %llu",
                                (unsigned long long)e->fence, (unsigned long long)hi);
                if (e->fence == hi && hi_pid && e->pid != hi_pid)
                    nm_viol_add(hs, NM_C_FENCE, k, 0,
                                "processes %d and %d both wrote %s with fence %llu",
                                hi_pid, e->pid, hs->c->sh->names[k], (unsigned long long)hi);
                hi = e->fence;
                hi_pid = e->pid;
            }
            if (e->ok)
                continue;
            nm_hold_t *h = find_hold(hs, k, e->pid, e->tid, e->hold);
            if (!h) {
                nm_viol_add(hs, NM_C_STORE, k, 0, "the store refused a %s of %d/%d fence %llu that "
                            "no recorded hold made", e->write ? "write" : "read", e->pid, e->tid,
                            (unsigned long long)e->fence);
                continue;
            }
            /* A loss with no sign (a server clock's jump forward) may go
             * unseen for SPEC's 50 ms: a hold passed on or kept in the
             * process meanwhile ends with 0, as overlap excuses it too
             * (single seed 1: the jump 0.2 ms before the grant returned,
             * the unlock 9 ms after, left to a waiting sibling) */
            const nm_fault_t *hl = loss_within(hs, k, h->t_call - 2000000, h->t_end);
            if (hl && h->t_end - hl->t_start <= NM_TOL_LOSS_US + sign_delay(hs, h->pid, hl->t_start))
                continue;
            if (h->unlock_rc == 0 && !h->died)
                nm_viol_add(hs, NM_C_STORE, k, h->lapse_ev ? h->lapse_ev : h->t_end,
                            "the store %s a %s with fence %llu (it had %llu from %d) during the %s, "
                            "yet its unlock said 0",
                            e->write ? "refused" : "had a newer write than",
                            e->write ? "write" : "read", (unsigned long long)e->fence,
                            (unsigned long long)e->prev_hi, e->prev_pid, nm_hold_str(hs, h, sa, sizeof sa));
        }
    }
}

/* ---------------------------------------------------------- stale return */

static void check_stale(nm_hist_t *hs, byname_t *bn)
{
    char sq[256];
    for (size_t i = 0; i < hs->ncalls; i++) {
        nm_call_t *r = &hs->calls[i];
        if (r->t1 == 0 || (r->rc != 0 && r->rc != EOWNERDEAD))
            continue;
        /* The thread reads the clock right after the call returns: a stop
         * of its process in between is possible in principle, but the stops
         * are sent at random times or right after a return was recorded,
         * never in that window of a few hundred ns.  A call that returns
         * after a stop returns what it had before it. */
        int64_t t1 = r->t1;
        byname_t *b = &bn[r->name];
        for (size_t j = 0; j < b->n; j++) {
            nm_hold_t *q = &hs->h[b->ix[j]];
            if (q->t_ret >= t1)
                break;
            if (q->pid == r->pid || q->fence <= r->fence || !conflict(q->mode, r->mode))
                continue;
            const nm_fault_t *ql = loss_within(hs, r->name, q->t_call - 2000000, q->t_ret);
            int64_t tol = ql ? NM_TOL_LOSS_US + sign_delay(hs, r->pid, ql->t_start) : NM_TOL_US;
            if (t1 - q->t_ret <= tol)
                continue;
            nm_viol_add(hs, NM_C_STALE, r->name, r->t1,
                        "%s of %s by %d/%d (depth %d, called at %.1f ms) returned %s with fence %llu "
                        "at %.1f ms, %.1f ms after another process's hold with a greater fence had "
                        "begun: %s",
                        r->op == NM_OP_LOCK ? "lock" : r->op == NM_OP_TRY ? "trylock" : "timedlock",
                        hs->c->sh->names[r->name], r->pid, r->tid, r->depth, nm_rel(hs->c, r->t0),
                        th_errname(r->rc), (unsigned long long)r->fence, nm_rel(hs->c, r->t1),
                        (double)(t1 - q->t_ret) / 1000.0, nm_hold_str(hs, q, sq, sizeof sq));
            break;
        }
        /* a hold Redis had lost (a restart, a break) while the process had
         * it, returned again by its process after the loss: the clients
         * see these losses (a dropped connection, the break's push) */
        const nm_hold_t *root = NULL;
        for (size_t j = 0; j < b->n; j++) {
            const nm_hold_t *h = &hs->h[b->ix[j]];
            if (h->t_ret > r->t1)
                break;
            if (h->pid == r->pid && h->fence == r->fence) {
                root = h;
                break;
            }
        }
        if (!root)
            continue;
        /* (one server of several that lost its state may have left the
         * hold its majority: the rule above judges those) */
        const nm_fault_t *lf = sure_loss_within(hs, r->name, root->t_ret + 1, t1 - NM_TOL_SIGN_US);
        if (lf && lf->t_start > root->t_ret && t1 - lf->t_start > NM_TOL_SIGN_US + sign_delay(hs, r->pid, lf->t_start))
            nm_viol_add(hs, NM_C_STALE, r->name, r->t1,
                        "%s of %s by %d/%d (depth %d, called at %.1f ms) returned %s at %.1f ms for the "
                        "hold of fence %llu its process took at %.1f ms, which Redis lost at %.1f ms "
                        "(%s): %.1f ms after the loss",
                        r->op == NM_OP_LOCK ? "lock" : r->op == NM_OP_TRY ? "trylock" : "timedlock",
                        hs->c->sh->names[r->name], r->pid, r->tid, r->depth, nm_rel(hs->c, r->t0),
                        th_errname(r->rc), nm_rel(hs->c, r->t1), (unsigned long long)r->fence,
                        nm_rel(hs->c, root->t_ret), nm_rel(hs->c, lf->t_start), nm_fault_name(lf->kind),
                        (double)(t1 - lf->t_start) / 1000.0);
    }
}

/* ------------------------------------------------------------- lapses */

/* A disturbance of one process: stopped (no renewal at all) or cut from
 * Redis (nothing passes), from a to b; or a slow link (each renewal
 * arrives up to slow_ms late). */
typedef struct dist {
    int64_t a, b;
    int stop, net;
    long slow_ms;
} dist_t;

/* Can disturbance d explain that hold h (granted no earlier than g, its
 * Redis hold first returned at root_ret) had lapsed by t?  A renewed hold
 * is renewed every lease/3 while its process runs and reaches Redis: it
 * lapses only when a lease passes without, counted from its grant or
 * from lease/3 before the disturbance.  A cut at the grant may have held
 * back the renewal of a pushed grant: a claim window then suffices. */
static int explains(const nm_hist_t *hs, const dist_t *d, const nm_hold_t *h, int64_t g,
                    int64_t root_ret, int64_t t)
{
    int64_t L = lease_us(hs, h->name), W = claim_us(hs, h->name);
    if (d->a >= t || d->b <= h->t_call)
        return 0;
    if (!d->net && d->b <= root_ret)
        return 0;               /* stopped before it had it: the call had to confirm it */
    int64_t from = d->a - L / 3 - NM_SLACK_US;
    if (from < g)
        from = g;
    int64_t to = d->b < t ? d->b : t;
    int64_t span = to - from;
    if (d->slow_ms) {
        int64_t most = L / 3 + 2 * d->slow_ms * 1000 + NM_SLACK_US;
        if (span > most)
            span = most;
    }
    int64_t need = L;
    if (d->net && d->a <= root_ret + 300000)
        need = W < L ? W : L;
    need = need * 99 / 100 - NM_SLACK_US;
    return span >= need;
}

static int cmp_dist(const void *x, const void *y)
{
    const dist_t *p = x, *q = y;
    return p->a < q->a ? -1 : p->a > q->a;
}

/* The disturbances of pid, stops and cuts that follow each other within
 * the slack merged into one (a process that runs for a few ms between
 * two stops cannot count on a renewal in between). */
static size_t disturbances(const nm_hist_t *hs, int pid, dist_t *out, size_t max)
{
    const nm_ctx_t *c = hs->c;
    size_t n = 0;
    for (int i = 0; i < c->sch.n && n < max; i++) {
        const nm_fault_t *f = &c->sch.f[i];
        if (!f->t_start)
            continue;
        int stop = (f->effects & NM_FX_STOP) && (f->pid == pid || f->pid == 0);
        int net = (f->effects & NM_FX_NET) && (f->pid == 0 || f->pid == pid);
        if (!stop && !net)
            continue;
        int slow = f->kind == NM_F_DELAY || f->kind == NM_F_JITTER;
        int64_t e = f->ended ? f->t_end : hs->end;
        /* A partition's healing does not end it for a connection whose
         * segments it dropped: TCP sends them again only when its backoff
         * says (each wait twice the last), up to about as long again as
         * the cut lasted; the library gives the connection up after its
         * I/O time-out. */
        if (f->kind == NM_F_PARTITION) {
            int64_t more = e - f->t_start, io = c->cfg->io_timeout_ms * 1000;
            e += more < io ? more : io;
        }
        /* Late replies: a cut, until the last reply of the window came
         * (each after the calls waiting for it gave up). */
        if (f->kind == NM_F_LATE)
            e += f->param * 1000;
        out[n++] = (dist_t){ f->t_start, e, stop, net && !stop, slow ? f->param : 0 };
    }
    /* the times its own heartbeat found it held up (a loaded machine) */
    for (int s = 0; s < c->sh->nslots; s++) {
        const nm_slot_t *sl = &c->sh->slot[s];
        if (sl->pid != pid)
            continue;
        uint32_t ns = sl->nstalls < NM_MAX_STALLS ? sl->nstalls : NM_MAX_STALLS;
        for (uint32_t i = 0; i < ns && n < max; i++)
            out[n++] = (dist_t){ sl->stall[i][0], sl->stall[i][1], 1, 0, 0 };
    }
    qsort(out, n, sizeof *out, cmp_dist);
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if (m && !out[i].slow_ms && !out[m - 1].slow_ms && out[i].a - out[m - 1].b < NM_SLACK_US) {
            if (out[i].b > out[m - 1].b)
                out[m - 1].b = out[i].b;
            out[m - 1].stop |= out[i].stop;
            out[m - 1].net |= out[i].net;
            continue;
        }
        out[m++] = out[i];
    }
    return m;
}

int nm_lapse_explained(const nm_hist_t *hs, const nm_hold_t *h, int64_t root_call, int64_t root_ret,
                       int64_t t)
{
    if (loss_within(hs, h->name, root_call - 1000, t))
        return 1;
    dist_t d[NM_MAX_FAULTS];
    size_t nd = disturbances(hs, h->pid, d, NM_MAX_FAULTS);
    for (size_t k = 0; k < nd; k++)
        if (explains(hs, &d[k], h, h->g_lb, root_ret, t))
            return 1;
    return 0;
}

static void check_lapses(nm_hist_t *hs)
{
    const nm_ctx_t *c = hs->c;
    char sa[256];
    for (size_t i = 0; i < hs->nh; i++) {
        nm_hold_t *h = &hs->h[i];
        if (h->unlock_rc == ENOLCK) {
            char why[64];
            snprintf(why, sizeof why, "its unlock said ENOLCK at %.1f ms", nm_rel(c, h->t_unlock_ret));
            note_lapse(h, h->t_unlock_ret, why);
        }
        if (!h->lapse_ev)
            continue;
        int64_t t = h->lapse_ev;
        if (h->died && t >= h->t_end)
            continue;
        /* Redis lost state while its process had the hold (from the lock
         * call of the first of its holds with this fence) */
        const nm_fault_t *lf = loss_within(hs, h->name, hs->h[h->chain].t_call - 1000, t);
        if (lf) {
            h->explained = 1;
            continue;
        }
        int64_t g = h->g_lb;
        if (fixed_name(h->name)) {
            if (t >= g + lease_us(hs, h->name) * 99 / 100 - NM_FIXED_SLACK_US) {
                h->explained = 1;
                continue;
            }
        } else {
            dist_t d[NM_MAX_FAULTS];
            size_t nd = disturbances(hs, h->pid, d, NM_MAX_FAULTS);
            int64_t root_ret = hs->h[h->chain].t_ret;
            for (size_t k = 0; k < nd && !h->explained; k++)
                h->explained = explains(hs, &d[k], h, g, root_ret, t);
            if (h->explained)
                continue;
        }
        nm_viol_add(hs, NM_C_LAPSE, h->name, t,
                    "%s lapsed (%s) though no fault explains it: granted no earlier than %.1f ms, "
                    "%s lease %ld ms, no loss of Redis state, no stop or cut of its process long "
                    "enough",
                    nm_hold_str(hs, h, sa, sizeof sa), h->lapse_why, nm_rel(c, g),
                    fixed_name(h->name) ? "fixed" : "renewed",
                    (long)(lease_us(hs, h->name) / 1000));
    }
}

/* ---------------------------------------------------------- EOWNERDEAD */

/* A hold released cleanly after lower and before upper (fences), ending
 * before t: the death trace was cleared in between. */
static int clean_between(const nm_hist_t *hs, const byname_t *b, uint64_t lower, uint64_t upper, int64_t t)
{
    for (size_t j = 0; j < b->n; j++) {
        const nm_hold_t *v = &hs->h[b->ix[j]];
        if (v->t_ret >= t)
            break;
        if (v->unlock_rc == 0 && v->fence > lower && v->fence < upper && v->t_unlock_ret && v->t_unlock_ret < t)
            return 1;
    }
    return 0;
}

/* A vouched hold of another process covering [a, b] in a mode that
 * conflicts with mode: no grant to anyone else could happen then. */
static int covered(const nm_hist_t *hs, const byname_t *b, int pid, char mode, int64_t a, int64_t e)
{
    for (size_t j = 0; j < b->n; j++) {
        const nm_hold_t *v = &hs->h[b->ix[j]];
        if (v->t_ret > a)
            break;
        if (v->pid != pid && v->unlock_rc == 0 && v->t_end >= e && conflict(v->mode, mode))
            return 1;
    }
    return 0;
}

/* If lock call k could have been granted a hold it then lost before t
 * without returning it, the end of the time it could have been granted
 * in; else 0.  So: its process was killed during the call; or it was
 * stopped or cut from Redis (merged, as for lapses), from some time in
 * the call, for longer than a claim window, so that it could neither
 * claim a grant nor, once the call gave up (EIO, ETIMEDOUT), withdraw it;
 * or its link was slow during the call by as much. */
/* How far the server's clock jumped forward within [a, b] (us): Redis's
 * deadlines (a grant's claim window, a registration's) came that much
 * sooner. */
static int64_t clock_forward_within(const nm_hist_t *hs, int64_t a, int64_t b)
{
    const nm_ctx_t *c = hs->c;
    int64_t sum = 0;
    for (int i = 0; i < c->sch.n; i++) {
        const nm_fault_t *f = &c->sch.f[i];
        if (f->kind == NM_F_SRVCLOCK && f->done && f->t_start && f->dir > 0 && f->t_start >= a &&
            f->t_start <= b)
            sum += f->param * 1000;
    }
    return sum;
}

static int64_t lost_grant_until(const nm_hist_t *hs, const nm_call_t *k, int64_t t)
{
    const nm_ctx_t *c = hs->c;
    int64_t kend = k->t1 ? k->t1 : hs->end;
    int64_t death = c->sh->slot[k->slot].died_us;
    if (k->rc == -1 && death && death < t)
        return death;
    int64_t W = claim_us(hs, k->name) * 99 / 100 - NM_SLACK_US;
    int failed = k->rc == EIO || k->rc == ETIMEDOUT || k->rc == -1;
    dist_t d[NM_MAX_FAULTS];
    size_t nd = disturbances(hs, k->pid, d, NM_MAX_FAULTS);
    for (size_t i = 0; i < nd; i++) {
        if (d[i].b <= k->t0 || d[i].a >= kend || d[i].a >= t)
            continue;
        int64_t a = d[i].a > k->t0 ? d[i].a : k->t0;
        int64_t e = d[i].b;
        if (d[i].slow_ms) {
            e = a + d[i].slow_ms * 1000 * 2;    /* a slow link: its delay, each way */
            if (e > kend)
                e = kend;
        } else if (!failed && e > kend) {
            e = kend;
        }
        if (e > t)
            e = t;
        if (e - a + clock_forward_within(hs, a, e) >= W)
            return e;
    }
    return 0;
}

/* pid was stopped or cut (any network fault) at some time in [a, b]. */
static int disturbed(const nm_hist_t *hs, int pid, int64_t a, int64_t b)
{
    const nm_ctx_t *c = hs->c;
    for (int i = 0; i < c->sch.n; i++) {
        const nm_fault_t *f = &c->sch.f[i];
        if (!f->t_start || !((f->effects & NM_FX_STOP && (f->pid == pid || f->pid == 0)) ||
                             (f->effects & (NM_FX_NET | NM_FX_SIGN) && (f->pid == 0 || f->pid == pid))))
            continue;
        int64_t e = f->ended ? f->t_end : hs->end;
        if (f->kind == NM_F_DELAY || f->kind == NM_F_JITTER || f->kind == NM_F_LATE)
            e += f->param * 1000;
        if (f->t_start <= b && e >= a)
            return 1;
    }
    return 0;
}

/* redlock: could a copy of hold h have lapsed, unreleased, on one server
 * by t?  Its unlock ran while a fault kept a server from answering (a
 * minority: the unlock said 0, and the release was owed to that server,
 * quorum.c), and the copy's lease ran out there before the release could
 * reach it: the server was away long enough, or the process was then
 * stopped, cut or killed from before that fault healed until t, so that it
 * could not pay.  The copy lapsed, leaving a death trace that the next
 * holder to count that server hears of, unless the owed release clears
 * it first: a real lapse of that copy.  (Killed within the down window
 * and the retry after the fault healed is as good as killed during it.) */
static int copy_lapsed(const nm_hist_t *hs, const nm_hold_t *h, int64_t t)
{
    const nm_ctx_t *c = hs->c;
    if (c->cfg->topo != NM_TOPO_REDLOCK || h->unlock_rc != 0 || !h->t_unlock_ret || h->t_unlock_ret >= t)
        return 0;
    int64_t death = c->sh->slot[h->slot].died_us;
    dist_t d[NM_MAX_FAULTS];
    size_t nd = disturbances(hs, h->pid, d, NM_MAX_FAULTS);
    for (int i = 0; i < c->sch.n; i++) {
        const nm_fault_t *f = &c->sch.f[i];
        if (!f->t_start || !(f->kind == NM_F_SRVSTOP || f->kind == NM_F_BLACKHOLE ||
                             f->kind == NM_F_PAUSE || f->kind == NM_F_JITTER))
            continue;
        /* The owed release goes every 250 ms, failing at once while the
         * server is in its link's 1 s down window (PROTOCOL.md, redlock://):
         * a process may need that long after the fault healed to pay. */
        int64_t healed = (f->ended ? f->t_end : hs->end) + (1000 + 250) * 1000 + NM_SLACK_US;
        if (f->t_start > h->t_unlock_ret || healed < h->t_end)
            continue;             /* not on while it was released */
        /* The copy lapsed there before the owed release could reach it
         * (from its grant, or its last renewal before the fault), and the
         * EOWNERDEAD came before it could: the server was away that long */
        int64_t L = lease_us(hs, h->name);
        int64_t last = fixed_name(h->name) ? h->g_lb : f->t_start - L / 3 - NM_SLACK_US;
        if (last < h->g_lb)
            last = h->g_lb;
        if (last + L * 99 / 100 - NM_SLACK_US <= t && t <= healed)
            return 1;
        /* ... or its process could not pay it after the fault, killed or
         * stopped or cut until the EOWNERDEAD */
        if (death && death <= healed && death < t)
            return 1;
        for (size_t k = 0; k < nd; k++)
            if (!d[k].slow_ms && d[k].a <= healed && d[k].b >= t - NM_SLACK_US)
                return 1;
    }
    return 0;
}

/* redlock: could lock call k, which failed, have left a grant on a server
 * that did not answer it, whose withdrawal (owed to that server: quorum.c)
 * its process could not send before EOWNERDEAD call r [r0, t] counted that
 * server?  SPEC: EIO (or ETIMEDOUT, EBUSY) means nothing was acquired, and
 * "EOWNERDEAD: acquired, but the previous holder's lease expired without
 * unlock (it crashed or stalled)".  A process that owes the undo of a grant
 * and is stopped (a stop, a stopgrantee, or a freeze of its connections)
 * or killed before it can send it is the stalled or crashed holder of that
 * grant, as copy_lapsed says of an owed release.  So: a server fault was on
 * during k (a server that did not answer: the withdrawal owed to it) and
 * over before r ended (r could count that server); k's process was
 * stopped, frozen or killed after k returned and before it could pay (the
 * fault healed, then the link's 1 s down window and a 250 ms retry), and
 * still stopped or frozen when r began (or dead before r ended); and a
 * grant made during k could have lapsed by r.  (Stopped during k, and
 * long enough, lost_grant_until says so already.)  A server stopped while the
 * process ran on is no excuse: the process pays what it owes when the
 * server is back, and a withdrawal that runs after the grant's lapse takes
 * its trace away (withdraw.lua, trace_lapsed_unclaimed).  r1 when so, else
 * 0 (as lost_grant_until). */
static int64_t withdrawal_unpaid(const nm_hist_t *hs, const nm_call_t *k, int64_t r0, int64_t r1)
{
    const nm_ctx_t *c = hs->c;
    if (c->cfg->topo != NM_TOPO_REDLOCK || !k->t1 ||
        !(k->rc == EIO || k->rc == ETIMEDOUT || k->rc == EBUSY))
        return 0;
    if (r1 < k->t0 + lease_us(hs, k->name) * 99 / 100 - NM_SLACK_US)
        return 0;                 /* no grant made during k could have lapsed */
    int64_t death = c->sh->slot[k->slot].died_us;
    for (int i = 0; i < c->sch.n; i++) {
        const nm_fault_t *f = &c->sch.f[i];
        if (!f->t_start || !(f->kind == NM_F_SRVSTOP || f->kind == NM_F_BLACKHOLE ||
                             f->kind == NM_F_PAUSE || f->kind == NM_F_JITTER))
            continue;
        int64_t fend = f->ended ? f->t_end : hs->end;
        if (f->t_start > k->t1 || fend < k->t0 || fend > r1)
            continue;
        int64_t healed = fend + (1000 + 250) * 1000 + NM_SLACK_US;
        if (death && death >= k->t1 - NM_SLACK_US && death <= healed && death < r1)
            return r1;
        for (int j = 0; j < c->sch.n; j++) {
            const nm_fault_t *g = &c->sch.f[j];
            if (!g->t_start || g->pid != k->pid ||
                !(g->kind == NM_F_STOP || g->kind == NM_F_STOP_GRANTEE || g->kind == NM_F_FREEZE))
                continue;
            int64_t gend = g->ended ? g->t_end : hs->end;
            if (g->t_start >= k->t1 - NM_SLACK_US && g->t_start <= healed &&
                gend >= r0 - NM_SLACK_US)
                return r1;
        }
    }
    return 0;
}

/* Whether EOWNERDEAD from lock call r is explained (a real lapse before
 * it, as check_ownerdead says). */
static int ownerdead_explained(nm_hist_t *hs, byname_t *bn, const nm_call_t *r)
{
    const nm_ctx_t *c = hs->c;
    int ok = 0;
    {
        byname_t *b = &bn[r->name];
        /* A relock that found its thread's own hold lapsed: it reports that
         * lapse to the thread, whoever was told of it since (PROTOCOL.md
         * "Trust"); the lapse check judges the lapse itself (mark_told). */
        for (size_t j = 0; j < b->n && r->depth > 0 && !ok; j++) {
            const nm_hold_t *h = &hs->h[b->ix[j]];
            if (h->pid == r->pid && h->tid == r->tid && h->fence < r->fence && h->t_ret <= r->t0 &&
                h->t_end >= r->t0)
                ok = 1;
        }
        /* a hold with a lower fence that ended without a clean release */
        for (size_t j = 0; j < b->n && !ok; j++) {
            nm_hold_t *h = &hs->h[b->ix[j]];
            if (h->t_ret >= r->t1)
                break;
            if (h->fence >= r->fence)
                continue;
            int lapsed = h->died || h->unlock_rc == ENOLCK || h->unlock_rc == EIO || h->lapse_ev ||
                         h->t_end > r->t1 || h->open;
            if (h->died && h->t_end >= r->t1)
                lapsed = h->lapse_ev != 0;
            if (lapsed && !clean_between(hs, b, h->fence, r->fence, r->t0))
                ok = 1;
            /* (the server decides on EOWNERDEAD when it runs the call:
             * with a server that was away, as late as the call's return) */
            else if (copy_lapsed(hs, h, r->t0) || copy_lapsed(hs, h, r->t1))
                ok = 1;
        }
        /* a relock that took the lock anew inside a hold (a fence greater
         * than the hold's): that new hold is the thread's until the hold's
         * last unlock, so it lapsed as that hold did (an ENOLCK at the end,
         * a death, a hold still on when EOWNERDEAD was said) */
        for (size_t j = 0; j < hs->ncalls && !ok; j++) {
            const nm_call_t *k = &hs->calls[j];
            if (k->name != r->name || k->depth == 0 || !k->t1 || k->t1 >= r->t1 ||
                (k->rc != 0 && k->rc != EOWNERDEAD) || !k->fence || k->fence >= r->fence)
                continue;
            for (size_t m = 0; m < b->n && !ok; m++) {
                const nm_hold_t *h = &hs->h[b->ix[m]];
                if (h->pid != k->pid || h->tid != k->tid || h->fence >= k->fence ||
                    h->t_ret > k->t0 || h->t_end < k->t1)
                    continue;
                int lapsed = h->died || h->unlock_rc == ENOLCK || h->unlock_rc == EIO ||
                             h->t_end > r->t1 || h->open;
                if (lapsed && !clean_between(hs, b, k->fence, r->fence, r->t0))
                    ok = 1;
            }
        }
        /* a grant to a waiter that could not claim it: a lock call in flight
         * when its process was killed, or while it was stopped or cut off
         * long enough for a grant's claim window to run out; if that grant
         * could have been made (no vouched hold kept the lock meanwhile).
         * A relock in flight when its process was killed counts too: in a
         * hold that had lapsed (a fixed lease outlived) it asks Redis and
         * may take the lock anew, and die with it. */
        for (size_t j = 0; j < hs->ncalls && !ok; j++) {
            nm_call_t *k = &hs->calls[j];
            if (k->name != r->name || (k->depth != 0 && k->rc != -1) || k->t0 >= r->t1)
                continue;
            int64_t until = lost_grant_until(hs, k, r->t1);
            if (!until)
                until = withdrawal_unpaid(hs, k, r->t0, r->t1);
            if (!until || covered(hs, b, k->pid, k->mode, k->t0, until))
                continue;
            ok = 1;
            for (size_t m = 0; m < b->n && ok; m++) {
                nm_hold_t *v = &hs->h[b->ix[m]];
                if (v->t_ret > until && v->unlock_rc == 0 && v->t_unlock_ret && v->t_unlock_ret < r->t0 &&
                    v->lock_rc == EOWNERDEAD)
                    ok = 0;     /* that one was told of this lapse already */
            }
        }
        for (int j = 0; j < c->sch.n && !ok; j++) {
            const nm_fault_t *f = &c->sch.f[j];
            if ((f->kind == NM_F_BREAK || (f->kind == NM_F_DELKEY && f->effects)) && f->done &&
                f->name == r->name && f->t_start < r->t1 &&
                f->t_start > c->start)
                ok = 1;
        }
    }
    return ok;
}

static void check_ownerdead(nm_hist_t *hs, byname_t *bn)
{
    const nm_ctx_t *c = hs->c;
    for (size_t i = 0; i < hs->ncalls; i++) {
        nm_call_t *r = &hs->calls[i];
        if (r->rc != EOWNERDEAD || !r->t1)
            continue;
        int ok;
        if (r->all) {
            /* A lock-all says EOWNERDEAD when any lock of its set was taken
             * after a lapse: judged once, for the set. */
            if ((size_t)r->grp != i)
                continue;
            ok = 0;
            for (size_t j = i; j < hs->ncalls && hs->calls[j].grp == r->grp && !ok; j++)
                ok = ownerdead_explained(hs, bn, &hs->calls[j]);
        } else {
            ok = ownerdead_explained(hs, bn, r);
        }
        if (ok)
            continue;
        /* What might have: a lock call that failed (EIO, ETIMEDOUT, EBUSY)
         * after a grant or an acquisition had been made for it, whose undo
         * did not happen.  The SPEC says such a call acquired nothing. */
        const nm_call_t *orphan = NULL;
        for (size_t j = 0; j < hs->ncalls; j++) {
            nm_call_t *k = &hs->calls[j];
            if (k->name == r->name && k->depth == 0 && k->t1 && k->t1 < r->t1 &&
                (k->rc == EIO || k->rc == ETIMEDOUT || k->rc == EBUSY) &&
                k->t1 > r->t1 - lease_us(hs, r->name) - claim_us(hs, r->name) - 1000000 &&
                (k->rc == EIO || disturbed(hs, k->pid, k->t0, k->t1)))
                orphan = k;
        }
        if (orphan) {
            nm_viol_add(hs, NM_C_ORPHAN, r->name, r->t1,
                        "%s of %s by %d/%d returned EOWNERDEAD (fence %llu) at %.1f ms: no earlier hold "
                        "lapsed or died since the last clean release; only a %s call of %d/%d (%.1f..%.1f "
                        "ms) that said %s under a fault could have left a hold (its undo was lost: the "
                        "SPEC says such a call acquired nothing)",
                        r->op == NM_OP_LOCK ? "lock" : r->op == NM_OP_TRY ? "trylock" : "timedlock",
                        c->sh->names[r->name], r->pid, r->tid, (unsigned long long)r->fence,
                        nm_rel(c, r->t1), orphan->op == NM_OP_LOCK ? "lock" : orphan->op == NM_OP_TRY
                        ? "trylock" : "timedlock", orphan->pid, orphan->tid, nm_rel(c, orphan->t0),
                        nm_rel(c, orphan->t1), th_errname(orphan->rc));
            continue;
        }
        nm_viol_add(hs, NM_C_OWNERDEAD, r->name, r->t1,
                    "%s of %s by %d/%d returned EOWNERDEAD (fence %llu) at %.1f ms, but no earlier hold "
                    "lapsed or died since the last clean release, and no break",
                    r->op == NM_OP_LOCK ? "lock" : r->op == NM_OP_TRY ? "trylock" : "timedlock",
                    c->sh->names[r->name], r->pid, r->tid, (unsigned long long)r->fence, nm_rel(c, r->t1));
    }
}

/* ------------------------------------------------------------ liveness */

typedef struct ivl { int64_t a, b; } ivl_t;

static int cmp_ivl(const void *x, const void *y)
{
    const ivl_t *p = x, *q = y;
    return p->a < q->a ? -1 : p->a > q->a;
}

static int64_t heal_us(const nm_hist_t *hs, const nm_fault_t *f)
{
    const nm_cfg_t *cfg = hs->c->cfg;
    int64_t L = cfg->lease_ms * 1000, W = (cfg->lease_ms < 2000 ? cfg->lease_ms : 2000) * 1000;
    int64_t io = cfg->io_timeout_ms * 1000, s = 1000000;
    switch (f->kind) {
    case NM_F_KILL: return L + W + s;
    case NM_F_STOP: case NM_F_STOP_GRANTEE: case NM_F_SRVSTOP: return L + s;
    case NM_F_RESTART: case NM_F_PAUSE: return io + 2 * s;
    case NM_F_FLUSH: case NM_F_BREAK: case NM_F_CKILL: case NM_F_MUTE: return W / 3 + s;
    case NM_F_DELAY: case NM_F_JITTER: case NM_F_LATE: return f->param * 1000 + L + io + s;
    case NM_F_FREEZE: case NM_F_BLACKHOLE: return io + L + s;
    case NM_F_STALL: return L + s;
    /* forward: keys and registrations gone, waiters ask again; back: keys
     * (a dead holder's) live that much longer */
    case NM_F_SRVCLOCK: return f->dir > 0 ? L / 3 + W + s : f->param * 1000 + L + W + s;
    /* a key gone with no push: as a server clock's jump forward, for one lock */
    case NM_F_DELKEY: return L / 3 + W + s;
    case NM_F_CLOCK: return s;
    default: return io + L + 2 * s;
    }
}

static void check_liveness(nm_hist_t *hs, byname_t *bn)
{
    const nm_ctx_t *c = hs->c;
    const nm_cfg_t *cfg = c->cfg;
    int64_t bound = cfg->lease_ms * 1000 / 3 + 1000000;
    const char *v = getenv("NEMESIS_LIVENESS_MS");     /* to check the check */
    if (v && *v)
        bound = strtoll(v, NULL, 10) * 1000;
    for (int k = 0; k < nm_nlocks; k++) {
        int64_t L = lease_us(hs, k);
        size_t cap = bn[k].n + (size_t)c->sch.n + hs->ncalls + NM_MAX_SLOTS * NM_MAX_STALLS + 4, n = 0;
        ivl_t *v = malloc(cap * sizeof *v);
        if (!v)
            return;
        for (size_t j = 0; j < bn[k].n; j++) {
            nm_hold_t *h = &hs->h[bn[k].ix[j]];
            int64_t e = h->t_end;
            if (h->died || h->unlock_rc == EIO || h->unlock_rc < 0)
                e += L + 1000000;       /* Redis may keep it a lease */
            v[n++] = (ivl_t){ h->t_ret - 1000, e };
        }
        for (int j = 0; j < c->sch.n; j++) {
            const nm_fault_t *f = &c->sch.f[j];
            if (f->done && f->t_start)
                v[n++] = (ivl_t){ f->t_start, (f->ended ? f->t_end : hs->end) + heal_us(hs, f) };
        }
        /* a client held up by the machine may have held the lock, or been
         * the one it was granted to */
        for (int j = 0; j < c->sh->nslots; j++) {
            const nm_slot_t *sl = &c->sh->slot[j];
            uint32_t ns = sl->nstalls < NM_MAX_STALLS ? sl->nstalls : NM_MAX_STALLS;
            for (uint32_t i = 0; i < ns && n < cap; i++)
                v[n++] = (ivl_t){ sl->stall[i][0], sl->stall[i][1] + L + 1000000 };
        }
        for (size_t j = 0; j < hs->ncalls; j++) {
            nm_call_t *q = &hs->calls[j];
            int64_t death = c->sh->slot[q->slot].died_us;
            if (q->name == k && q->rc == -1 && death)
                v[n++] = (ivl_t){ death, death + L + 1000000 };
            if (q->name == k && q->rc == EIO)     /* possible orphan; see ownerdead */
                v[n++] = (ivl_t){ q->t1, q->t1 + L + 1000000 };
        }
        qsort(v, n, sizeof *v, cmp_ivl);
        int64_t cur = c->start + 500000;
        for (size_t j = 0; j <= n; j++) {
            int64_t na = j < n ? v[j].a : hs->end;
            if (na > hs->end)
                na = hs->end;
            if (na - cur > bound) {
                /* free from cur to na: did anyone wait through it? */
                for (size_t q = 0; q < hs->ncalls; q++) {
                    nm_call_t *w = &hs->calls[q];
                    /* (a lock-all waits for its whole set: a hang if it never
                     * returns, not a wait for this lock) */
                    if (w->name != k || w->depth != 0 || w->op == NM_OP_TRY || w->t0 >= cur || w->all)
                        continue;
                    int64_t wend = w->t1 ? w->t1 : hs->end;
                    if (wend < cur + bound)
                        continue;
                    nm_viol_add(hs, NM_C_LIVENESS, k, cur,
                                "%s was free from %.1f to %.1f ms (no hold, no fault healing) while "
                                "%d/%d waited in a %s call made at %.1f ms (returned %s at %.1f ms)",
                                c->sh->names[k], nm_rel(c, cur), nm_rel(c, na), w->pid, w->tid,
                                w->op == NM_OP_LOCK ? "lock" : "timed lock", nm_rel(c, w->t0),
                                w->t1 ? th_errname(w->rc) : "nothing", w->t1 ? nm_rel(c, w->t1) : 0.0);
                    break;
                }
            }
            if (j < n && v[j].b > cur)
                cur = v[j].b;
        }
        free(v);
    }
}

/* ---------------------------------------------------- the small checks */

static void check_fence_order(nm_hist_t *hs, byname_t *bn)
{
    char sa[256], sb[256];
    if (hs->c->cfg->topo == NM_TOPO_SENTINEL)
        return;                 /* PROTOCOL.md "Fences": weaker across a failover */
    for (int k = 0; k < nm_nlocks; k++) {
        byname_t *b = &bn[k];
        for (size_t i = 0; i < b->n; i++) {
            nm_hold_t *x = &hs->h[b->ix[i]];
            for (size_t j = 0; j < i; j++) {
                nm_hold_t *a = &hs->h[b->ix[j]];
                int64_t ended = a->t_unlock_ret ? a->t_unlock_ret : a->died ? a->t_end : 0;
                if (!ended || ended >= x->t_call || a->pid == x->pid || !conflict(a->mode, x->mode))
                    continue;
                if (a->fence >= x->fence) {
                    nm_viol_add(hs, NM_C_FENCE, k, x->t_ret, "%s began after %s had ended, without "
                                "a greater fence", nm_hold_str(hs, x, sb, sizeof sb),
                                nm_hold_str(hs, a, sa, sizeof sa));
                    break;
                }
            }
        }
    }
}

/* Whether a timed call of slot, made at t0 (its clock then said rt0) and
 * returned at t1, may have read its clock set back after the call decided
 * it timed out: a jump back from the time its deadline came (as the
 * monotonic clock counts it from the call) until its thread read the
 * clock after the return.  (A condition's wait retakes its mutex after
 * the time-out, which may take long; a jump back before the deadline must
 * have made the call wait longer.) */
static int read_across_jump(const nm_hist_t *hs, int slot, int64_t t0, int64_t rt0, int64_t abs_rt,
                            int64_t t1)
{
    int64_t due = t0 + (abs_rt - rt0);
    return nm_clock_back_at(hs->c, slot, due - NM_TOL_US, t1);
}

int nm_timed_early(const nm_hist_t *hs, int slot, int64_t t0, int64_t rt0_us, int64_t abs_rt_us,
                   int64_t rt1_us, int64_t t1)
{
    return rt1_us < abs_rt_us && !read_across_jump(hs, slot, t0, rt0_us, abs_rt_us, t1);
}

static void check_small(nm_hist_t *hs)
{
    const nm_ctx_t *c = hs->c;
    for (size_t i = 0; i < hs->ncalls; i++) {
        nm_call_t *r = &hs->calls[i];
        if (r->op == NM_OP_TIMED && r->rc == ETIMEDOUT && nm_timed_early(hs, r->slot, r->t0, r->rt0_us, r->abs_rt_us, r->rt1_us, r->t1))
            nm_viol_add(hs, NM_C_TIMED, r->name, r->t1, "timed lock of %s by %d/%d returned ETIMEDOUT "
                        "%.3f ms before its deadline", c->sh->names[r->name], r->pid, r->tid,
                        (double)(r->abs_rt_us - r->rt1_us) / 1000.0);
    }
    for (int s = 0; s < c->sh->nslots; s++) {
        const nm_slot_t *sl = &c->sh->slot[s];
        if (sl->pid <= 0 || sl->killed)
            continue;
        int full = 0;
        for (int t = 0; t < NM_MAX_THREADS; t++)
            full |= sl->th[t].full;
        if (sl->died_us && !(full && sl->exit_status == 0))
            nm_viol_add(hs, NM_C_CRASH, -1, sl->died_us, "client %d (slot %d) ended on its own at %.1f ms "
                        "(wait status %d)", sl->pid, s, nm_rel(c, sl->died_us), sl->exit_status);
    }
}

/* A relock (depth > 0) that said EOWNERDEAD with a greater fence than the
 * hold its thread had: the library found that hold lapsed, took the lock
 * anew and told its caller so (PROTOCOL.md "Trust").  The hold lapsed by
 * then: evidence for the lapse check, and a lapse the ownerdead check
 * need not find another telling of.  The overlap and store checks still
 * want the hold's last unlock to say ENOLCK (SPEC, ENOLCK). */
static void mark_told(nm_hist_t *hs)
{
    char why[96];
    for (size_t i = 0; i < hs->ncalls; i++) {
        const nm_call_t *r = &hs->calls[i];
        if (r->depth == 0 || r->rc != EOWNERDEAD || !r->t1)
            continue;
        for (size_t j = 0; j < hs->nh; j++) {
            nm_hold_t *h = &hs->h[j];
            if (h->pid != r->pid || h->tid != r->tid || h->name != r->name || h->fence >= r->fence ||
                h->t_ret > r->t0 || h->t_end < r->t0)
                continue;
            if (!h->told || r->t1 < h->told)
                h->told = r->t1;
            snprintf(why, sizeof why, "a relock by its thread said EOWNERDEAD at %.1f ms",
                     nm_rel(hs->c, r->t1));
            note_lapse(h, r->t1, why);
        }
    }
}

/* ------------------------------------------------- the condition */

typedef struct cwait {
    int64_t t0, t1;             /* t1 INT64_MAX: never returned */
    int64_t dl;                 /* its deadline (CLOCK_MONOTONIC us) */
    int rc, pid, tid, used;     /* rc -1: no return */
} cwait_t;

typedef struct csig {
    int64_t locked, t0, t1;
    int pid, tid;
} csig_t;

static int csig_cmp(const void *a, const void *b)
{
    const csig_t *x = a, *y = b;
    return x->t1 < y->t1 ? -1 : x->t1 > y->t1;
}

/* No fault, death or stall of any process within [a, b]. */
static int quiet(const nm_hist_t *hs, int64_t a, int64_t b)
{
    const nm_ctx_t *c = hs->c;
    for (int i = 0; i < c->sch.n; i++) {
        const nm_fault_t *f = &c->sch.f[i];
        if (!f->done)
            continue;
        int64_t e = !f->ended ? hs->end : f->t_end > f->t_start ? f->t_end : f->t_start;
        if (f->t_start <= b && e >= a)
            return 0;
    }
    for (int s = 0; s < c->sh->nslots; s++) {
        const nm_slot_t *sl = &c->sh->slot[s];
        if (sl->pid <= 0)
            continue;
        if (sl->died_us && sl->died_us >= a && sl->died_us <= b)
            return 0;
        uint32_t ns = sl->nstalls < NM_MAX_STALLS ? sl->nstalls : NM_MAX_STALLS;
        for (uint32_t k = 0; k < ns; k++)
            if (sl->stall[k][0] <= b && sl->stall[k][1] >= a)
                return 0;
    }
    return 1;
}

/* No lost wake-up.  A signal s is judged when a waiter w witnesses it:
 * w held the mutex before s's signaller took it (so w had registered),
 * its deadline came after s returned, and it timed out: no signal took
 * it.  Then s took another waiter, which was woken (0, EOWNERDEAD; an EIO
 * or no return are given the benefit of the doubt): one that began before
 * s returned and returned after s's mutex was taken, not claimed by an
 * earlier judged signal (each signal takes its own waiter).  Judged only
 * where nothing disturbed the run from a claim window (+ 0.5 s) before the
 * signaller took the mutex to 0.5 s after the signal: a registration of a
 * process that died, stalled or was cut may take a signal within that
 * window, as PROTOCOL.md says. */
void nm_cond_check(nm_hist_t *hs)
{
    const nm_ctx_t *c = hs->c;
    size_t nw = 0, ns = 0, capw = 256, caps = 256;
    cwait_t *w = malloc(capw * sizeof *w);
    csig_t *sg = malloc(caps * sizeof *sg);
    for (int s = 0; w && sg && s < c->sh->nslots; s++) {
        const nm_slot_t *sl = &c->sh->slot[s];
        if (sl->pid <= 0)
            continue;
        for (int t = 0; t < NM_MAX_THREADS; t++) {
            const nm_thread_log_t *tl = &sl->th[t];
            uint32_t n = __atomic_load_n(&tl->n, __ATOMIC_ACQUIRE);
            for (uint32_t i = 0; i < n; i++) {
                const nm_ev_t *e = &tl->ev[i];
                int done = __atomic_load_n(&e->state, __ATOMIC_ACQUIRE) == 2;
                if (e->kind == NM_CWAIT && done && e->rc == ETIMEDOUT &&
                    nm_timed_early(hs, s, e->t0, e->rt0_us, e->abs_rt_us, e->rt1_us, e->t1))
                    nm_viol_add(hs, NM_C_TIMED, NM_CV_NAME, e->t1, "condition wait by %d/%d "
                                "returned ETIMEDOUT %.3f ms before its deadline", sl->pid,
                                (int)tl->tid, (double)(e->abs_rt_us - e->rt1_us) / 1000.0);
                if (e->kind == NM_CWAIT) {
                    if (nw == capw) {
                        cwait_t *m = realloc(w, 2 * capw * sizeof *w);
                        if (!m)
                            goto out;
                        w = m;
                        capw *= 2;
                    }
                    w[nw++] = (cwait_t){ e->t0, done ? e->t1 : INT64_MAX, done ? (int64_t)e->fence : 0,
                                         done ? e->rc : -1, sl->pid, (int)tl->tid, 0 };
                } else if (e->kind == NM_SIGNAL && done && e->rc == 0) {
                    if (ns == caps) {
                        csig_t *m = realloc(sg, 2 * caps * sizeof *sg);
                        if (!m)
                            goto out;
                        sg = m;
                        caps *= 2;
                    }
                    sg[ns++] = (csig_t){ (int64_t)e->fence, e->t0, e->t1, sl->pid, (int)tl->tid };
                }
            }
        }
    }
    if (!w || !sg)
        goto out;
    qsort(sg, ns, sizeof *sg, csig_cmp);
    int64_t claim = (c->cfg->lease_ms < 2000 ? c->cfg->lease_ms : 2000) * 1000LL, margin = 500000;
    long judged = 0;
    for (size_t i = 0; i < ns; i++) {
        const csig_t *s = &sg[i];
        const cwait_t *wit = NULL;
        for (size_t j = 0; j < nw && !wit; j++)
            if (w[j].rc == ETIMEDOUT && w[j].t0 < s->locked && w[j].dl > s->t1 + 5000)
                wit = &w[j];
        if (!wit || !quiet(hs, s->locked - claim - margin, s->t1 + margin))
            continue;
        judged++;
        cwait_t *best = NULL;
        for (size_t j = 0; j < nw; j++) {
            cwait_t *x = &w[j];
            if (x->used || x->rc == ETIMEDOUT || x->t0 >= s->t1 || x->t1 <= s->locked)
                continue;
            if (!best || x->t1 < best->t1)
                best = x;
        }
        if (best) {
            best->used = 1;
            continue;
        }
        nm_viol_add(hs, NM_C_WAKEUP, NM_CV_NAME, s->t1, "the signal of %d/%d (its mutex taken at %.1f "
                    "ms, signalled %.1f..%.1f ms) woke no waiter, yet %d/%d waited through it (from "
                    "%.1f ms, deadline %.1f ms) and timed out at %.1f ms", s->pid, s->tid,
                    nm_rel(c, s->locked), nm_rel(c, s->t0), nm_rel(c, s->t1), wit->pid, wit->tid,
                    nm_rel(c, wit->t0), nm_rel(c, wit->dl), nm_rel(c, wit->t1));
    }
    if (c->cfg->verbose)
        fprintf(stderr, "nemesis: condition: %zu waits, %zu signals, %ld judged\n", nw, ns, judged);
out:
    free(w);
    free(sg);
}

/* ------------------------------------------------- the barrier and once */

/* One recorded event of the barrier and once thread, with its process. */
typedef struct bo_ev {
    const nm_ev_t *e;
    int pid, tid, done;
    int slot;
} bo_ev_t;

/* The events of kind (NM_BWAIT, NM_ONCE, NM_ORUN) of every client; *n of
 * them (malloc'ed; NULL and 0 when none or out of memory). */
static bo_ev_t *collect(const nm_hist_t *hs, int kind, size_t *n)
{
    const nm_ctx_t *c = hs->c;
    size_t cap = 0;
    bo_ev_t *v = NULL;
    *n = 0;
    for (int s = 0; s < c->sh->nslots; s++) {
        const nm_slot_t *sl = &c->sh->slot[s];
        if (sl->pid <= 0)
            continue;
        for (int t = 0; t < NM_MAX_THREADS; t++) {
            const nm_thread_log_t *tl = &sl->th[t];
            uint32_t ne = __atomic_load_n(&tl->n, __ATOMIC_ACQUIRE);
            for (uint32_t i = 0; i < ne; i++) {
                const nm_ev_t *e = &tl->ev[i];
                if (e->kind != kind)
                    continue;
                if (*n == cap) {
                    bo_ev_t *m = realloc(v, (cap ? 2 * cap : 64) * sizeof *v);
                    if (!m) {
                        free(v);
                        *n = 0;
                        return NULL;
                    }
                    v = m;
                    cap = cap ? 2 * cap : 64;
                }
                v[(*n)++] = (bo_ev_t){ e, sl->pid, (int)tl->tid,
                                       __atomic_load_n(&e->state, __ATOMIC_ACQUIRE) == 2, s };
            }
        }
    }
    return v;
}

/* Exactly one serial per generation, no more releases than the count, and
 * nobody released before the generation's last arrival was made: every
 * release of a generation returns after every recorded member of it began
 * its wait.  (A generation's members whose process died, or whose wait
 * failed, are not recorded as released in it: maybe_member below counts
 * them; the judgements that need them all wait for count releases.)  And
 * no ETIMEDOUT before its deadline. */
static int bo_by_gen(const void *a, const void *b)
{
    const nm_ev_t *x = ((const bo_ev_t *)a)->e, *y = ((const bo_ev_t *)b)->e;
    return x->fence < y->fence ? -1 : x->fence > y->fence;
}

static int released(const bo_ev_t *v)
{
    return v->done && (v->e->rc == 0 || v->e->rc == NM_RC_SERIAL) && v->e->fence;
}

/* A wait whose arrival may have counted in a generation without its caller
 * being told so (SPEC: an arrival counts once made, also when its process
 * dies): one that failed with EIO (its request may have run, or may still;
 * the process withdraws it at its next call on the barrier, unless its
 * generation tripped first: then that next wait of its thread returns 0 at
 * once, with no generation), ENOLCK (Redis lost the barrier, perhaps after
 * a trip whose push did not come), or that never returned (its process
 * died in it).  Its arrival was made after t0, and a trip counts it up to
 * `until`: the end of its process's next wait that settled it (one that
 * did not fail with EIO), the wait's own end for ENOLCK, else the end of
 * the run.  Each one is a member of one generation at most. */
typedef struct bo_maybe {
    int64_t t0, until;
    int used;
} bo_maybe_t;

/* The waits of v (n of them) that may be missing members (above), and a
 * wait made unrecorded by each barrier thread whose log filled (the call
 * after its last record); *nm of them (malloc'ed; NULL when out of memory). */
static bo_maybe_t *maybe_members(const nm_hist_t *hs, const bo_ev_t *v, size_t n, size_t *nm)
{
    const nm_ctx_t *c = hs->c;
    size_t cap = n + (size_t)c->sh->nslots + 1;
    bo_maybe_t *m = malloc(cap * sizeof *m);
    *nm = 0;
    if (!m)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        const nm_ev_t *e = v[i].e;
        int64_t until;
        if (!v[i].done) {
            until = INT64_MAX;
        } else if (e->rc == ENOLCK) {
            until = e->t1;
        } else if (e->rc == EIO) {
            until = INT64_MAX;
            /* the process's next wait that did not fail as this one did
             * settled the arrival by its end */
            for (size_t j = 0; j < n; j++) {
                const nm_ev_t *f = v[j].e;
                if (j == i || v[j].pid != v[i].pid || f->t0 <= e->t0 || !v[j].done ||
                    f->rc == EIO)
                    continue;
                if (f->t1 < until)
                    until = f->t1;
            }
        } else {
            continue;
        }
        m[(*nm)++] = (bo_maybe_t){ e->t0, until, 0 };
    }
    for (int s = 0; s < c->sh->nslots; s++) {
        const nm_slot_t *sl = &c->sh->slot[s];
        int64_t after = -1;
        if (sl->pid <= 0)
            continue;
        for (size_t i = 0; i < n; i++)
            if (v[i].slot == s && v[i].done && v[i].e->t1 > after)
                after = v[i].e->t1;
        int full = 0;
        for (int t = 0; t < NM_MAX_THREADS; t++)
            full |= sl->th[t].full;
        if (full && after >= 0 && *nm < cap)
            m[(*nm)++] = (bo_maybe_t){ after, INT64_MAX, 0 };
    }
    return m;
}

/* How many of the unused maybe-members (up to want) may have been members
 * of the generation whose releases began their waits by last_in and
 * returned from first_out on: its trip came between those, so a member's
 * arrival was made before first_out and still counted at last_in.  Those
 * that stop counting soonest are taken, and used up. */
static unsigned take_members(bo_maybe_t *m, size_t nm, int64_t last_in, int64_t first_out,
                             unsigned want)
{
    unsigned got = 0;
    while (got < want) {
        bo_maybe_t *best = NULL;
        for (size_t k = 0; k < nm; k++)
            if (!m[k].used && m[k].t0 <= first_out && m[k].until >= last_in &&
                (!best || m[k].until < best->until))
                best = &m[k];
        if (!best)
            break;
        best->used = 1;
        got++;
    }
    return got;
}

static void check_barrier(nm_hist_t *hs)
{
    const nm_ctx_t *c = hs->c;
    size_t n;
    bo_ev_t *v = collect(hs, NM_BWAIT, &n);
    unsigned count = (unsigned)c->cfg->procs;
    long gens = 0, shorts = 0;
    for (size_t i = 0; i < n; i++) {
        const nm_ev_t *e = v[i].e;
        /* (its clock set back after the deadline came, before the thread
         * read it after the return, is no early time-out: nm_timed_early) */
        if (v[i].done && e->rc == ETIMEDOUT &&
            nm_timed_early(hs, v[i].slot, e->t0, e->rt0_us, e->abs_rt_us, e->rt1_us, e->t1))
            nm_viol_add(hs, NM_C_TIMED, NM_BAR_NAME, e->t1, "barrier wait by %d/%d returned "
                        "ETIMEDOUT %.3f ms before its deadline", v[i].pid, v[i].tid,
                        (double)(e->abs_rt_us - e->rt1_us) / 1000.0);
    }
    size_t nm = 0;
    bo_maybe_t *maybe = maybe_members(hs, v, n, &nm);
    if (v)
        qsort(v, n, sizeof *v, bo_by_gen);
    for (size_t i = 0; i < n;) {
        if (!released(&v[i])) {
            i++;
            continue;
        }
        uint64_t gen = v[i].e->fence;
        unsigned rel = 0, ser = 0;
        int64_t last_in = 0, first_out = INT64_MAX;
        const bo_ev_t *early = NULL, *late = NULL;
        for (; i < n && v[i].e->fence == gen; i++) {
            const nm_ev_t *e = v[i].e;
            if (!released(&v[i]))
                continue;
            rel++;
            ser += e->rc == NM_RC_SERIAL;
            if (e->t0 > last_in)
                last_in = e->t0, late = &v[i];
            if (e->t1 < first_out)
                first_out = e->t1, early = &v[i];
        }
        gens++;
        /* Fewer releases than the count: only members whose wait failed
         * or never returned explain it, each one generation at most (a
         * fault nearby is no excuse by itself: issue 28). */
        if (rel < count) {
            shorts++;
            unsigned missing = maybe ? take_members(maybe, nm, last_in, first_out, count - rel)
                                     : count;    /* (out of memory: no judgement) */
            if (rel + missing < count)
                nm_viol_add(hs, NM_C_BARRIER, NM_BAR_NAME, first_out, "barrier generation %llu "
                            "released %u callers, fewer than its count %u, and no failed or "
                            "unreturned wait can be the others", (unsigned long long)gen, rel,
                            count);
        }
        if (rel > count || ser > 1 || (rel == count && ser != 1))
            nm_viol_add(hs, NM_C_BARRIER, NM_BAR_NAME, first_out, "barrier generation %llu "
                        "released %u callers with %u serials (count %u)",
                        (unsigned long long)gen, rel, ser, count);
        if (early && late && first_out < last_in)
            nm_viol_add(hs, NM_C_BARRIER, NM_BAR_NAME, first_out, "barrier generation %llu: "
                        "%d/%d was released at %.1f ms, before %d/%d of the same generation began "
                        "its wait at %.1f ms", (unsigned long long)gen, early->pid, early->tid,
                        nm_rel(c, first_out), late->pid, late->tid, nm_rel(c, last_in));
    }
    if (c->cfg->verbose)
        fprintf(stderr, "nemesis: barrier: %zu waits, %ld generations judged, %ld short "
                "(%zu waits failed or never returned)\n", n, gens, shorts, nm);
    free(maybe);
    free(v);
}

/* Each epoch's once: no caller returned 0 before a run of it completed;
 * and it completed once, unless something between its first run's start
 * and a later run's start explains another (a runner that died or was
 * held up past its lease, a server that lost the completion: any fault,
 * death or stall then, as for the condition). */
static void check_once(nm_hist_t *hs)
{
    const nm_ctx_t *c = hs->c;
    size_t nc, nr;
    bo_ev_t *calls = collect(hs, NM_ONCE, &nc), *runs = collect(hs, NM_ORUN, &nr);
    long epochs = 0, extra = 0;
    for (uint32_t k = 0; k < NM_EPOCHS; k++) {
        const bo_ev_t *first = NULL;
        int64_t done_at = INT64_MAX;
        int completed = 0;
        for (size_t i = 0; i < nr; i++) {
            const nm_ev_t *e = runs[i].e;
            if (e->hold != k)
                continue;
            if (!first || e->t0 < first->e->t0)
                first = &runs[i];
            if (runs[i].done) {
                completed++;
                if (e->t1 < done_at)
                    done_at = e->t1;
            }
        }
        for (size_t i = 0; i < nc; i++) {
            const nm_ev_t *e = calls[i].e;
            if (e->hold != k || !calls[i].done || e->rc != 0)
                continue;
            if (e->t1 < done_at)
                nm_viol_add(hs, NM_C_ONCE, NM_ONCE_NAME, e->t1, "once of epoch %u: %d/%d's "
                            "dist_once returned 0 at %.1f ms, before any run of its routine "
                            "completed (%s)", k, calls[i].pid, calls[i].tid, nm_rel(c, e->t1),
                            done_at == INT64_MAX ? "none did" : "the first at a later time");
        }
        if (!first)
            continue;
        epochs++;
        for (size_t i = 0; i < nr && completed > 1; i++) {
            const nm_ev_t *e = runs[i].e;
            if (e->hold != k || !runs[i].done || &runs[i] == first)
                continue;
            if (!quiet(hs, first->e->t0, e->t0)) {
                extra++;
                continue;
            }
            nm_viol_add(hs, NM_C_ONCE, NM_ONCE_NAME, e->t0, "once of epoch %u: its routine ran "
                        "again by %d/%d from %.1f ms (the first run by %d/%d from %.1f ms), with "
                        "no fault, death or stall in between", k, runs[i].pid, runs[i].tid,
                        nm_rel(c, e->t0), first->pid, first->tid, nm_rel(c, first->e->t0));
        }
    }
    if (c->cfg->verbose)
        fprintf(stderr, "nemesis: once: %zu calls, %zu runs, %ld epochs, %ld runs again after a "
                "fault\n", nc, nr, epochs, extra);
    free(calls);
    free(runs);
}

/* The barrier role's checks (nemesis_roles.c). */
void nm_barrier_check(nm_hist_t *hs)
{
    check_barrier(hs);
    check_once(hs);
}

void nm_check_all(nm_hist_t *hs)
{
    byname_t bn[NM_MAX_NAMES];
    memset(bn, 0, sizeof bn);
    index_names(hs, bn);
    grant_bounds(hs, bn);
    mark_told(hs);
    check_overlap(hs, bn);
    check_store(hs);
    check_stale(hs, bn);
    check_lapses(hs);
    check_ownerdead(hs, bn);
    check_liveness(hs, bn);
    check_fence_order(hs, bn);
    check_small(hs);
    for (int r = 0; r < nm_nroles; r++)
        if ((hs->c->cfg->roles & (1u << r)) && nm_roles[r].check)
            nm_roles[r].check(hs);
    for (int k = 0; k < nm_nlocks; k++)
        free(bn[k].ix);
}

int nm_disturbed_any(const nm_hist_t *hs, int64_t a, int64_t b)
{
    return !quiet(hs, a, b);
}
