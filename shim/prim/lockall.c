/* SPDX-License-Identifier: BSD-3-Clause */
/* lockall.c - several locks at once, all or none (lockall.h).
 *
 * First the cheap way: when no thread of the process holds, waits for or
 * has in Redis any of the locks (each is reserved at once, without
 * waiting, in the canonical order), and one script may reach all their
 * keys (one server, or one cluster slot), one call takes every lock if
 * every one is free in Redis with nobody queued (take_all.c,
 * lua/acquire_all.lua): one round trip for the whole set, and nothing
 * taken, nobody disturbed, if one is busy.  Otherwise (a lock busy, a
 * local holder, keys in different slots, the caller holding one already)
 * the locks are taken one by one in the canonical order with the lock's
 * own calls, each waiting as its lock call would, and those taken are
 * undone when one cannot be had.
 *
 * Why no caller deadlocks another: every caller takes its locks in one
 * order, the same in every process (the locks' names, as bytes), and
 * waits only for a lock that comes after every lock it holds, so no cycle
 * of waits can form; the one call for the whole set never waits while
 * holding anything.  A thread that already holds one of the locks (a
 * recursive mutex it locked before) is outside this argument, as a
 * pthreads program that locks out of order is.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "distlock.h"
#include "dl.h"
#include "lockall.h"
#include "take_all.h"
#include "trust.h"

/* The canonical order: by name bytes (a prefix first).  Every lock here
 * is of one kind, so its name says which lock it is. */
static int by_name(const void *a, const void *b)
{
    const dl_core_t *x = &((const dl_all_req_t *)a)->l->core;
    const dl_core_t *y = &((const dl_all_req_t *)b)->l->core;
    size_t n = x->namelen < y->namelen ? x->namelen : y->namelen;
    int c = memcmp(dl_core_name(x), dl_core_name(y), n);
    if (c)
        return c;
    return x->namelen < y->namelen ? -1 : x->namelen > y->namelen;
}

/* The EOWNERDEAD of a lock-all, naming the first lock taken after a
 * lapse. */
static int ownerdead(const dl_lock_t *first, size_t count, size_t n)
{
    char q[96];
    dl_seterr("lock-all of %zu locks: acquired all, but the previous holder's lease of lock %s%s "
              "ran out before it unlocked; the protected state may be half-updated", n,
              dl_core_qname(&first->core, q, sizeof q), count > 1 ? " (and others)" : "");
    return EOWNERDEAD;
}

/* The locks v[0..taken) the caller took, undone in reverse (dead[i]: taken
 * after a lapse), keeping the caller's error. */
static void undo(dl_proc_t *p, dl_all_req_t *v, size_t taken, const char *dead)
{
    char kept[DL_ERRMAX];
    snprintf(kept, sizeof kept, "%s", dist_lasterror());
    while (taken-- > 0)
        dl_lock_undo(p, v[taken].l, dead[taken], v[taken].od_was);
    dl_seterr("%s", kept);
}

/* One call for the whole set (see the top).  0, EOWNERDEAD: all taken;
 * EBUSY: one is busy in Redis (none taken); EAGAIN: not tried, or not
 * here (take them one by one); else the call's error (none taken). */
static int all_at_once(dl_proc_t *p, dl_all_req_t *v, size_t n, char *dead)
{
    dl_core_t *o0 = &v[0].l->core;
    if (!o0->kind->calls->acquire_all)
        return EAGAIN;
    const char **keys = malloc(n * sizeof *keys);
    size_t *lens = malloc(n * sizeof *lens);
    dl_take_one_t *t = malloc(n * sizeof *t);
    int rc = keys && lens && t ? 0 : dl_fail(ENOMEM, "out of memory");
    for (size_t i = 0; !rc && i < n; i++) {
        keys[i] = dl_core_key(&v[i].l->core);
        lens[i] = v[i].l->core.keylen;
    }
    if (!rc && !dl_conn_together(p->conn, keys, lens, (int)n))
        rc = EAGAIN;              /* different cluster slots */
    pid_t tid = dl_tid();
    size_t reserved = 0;
    int r = 1;
    while (!rc && reserved < n && (r = dl_lock_reserve(v[reserved].l, tid)) == 1)
        reserved++;
    if (!rc && r < 0)
        rc = ENOMEM;              /* (worded), nothing sent */
    else if (!rc && reserved < n)
        rc = EAGAIN;              /* a thread of ours holds, waits for or has one */
    int busy = -1;
    if (!rc) {
        for (size_t i = 0; i < n; i++)
            t[i] = (dl_take_one_t){ .o = &v[i].l->core, .rq = &v[i].rq };
        /* (a try waits for a stalled server as a trylock does: the I/O
         * time-out) */
        rc = dl_take_all(p, t, (int)n, v[0].rq.try_only ? DL_FOREVER : v[0].rq.deadline, &busy);
    }
    /* Each reservation ends: the hold recorded, or the lock free again. */
    dl_grant_t none = { 0 };
    int failed = 0;
    size_t first = n, count = 0;
    char kept[DL_ERRMAX];
    snprintf(kept, sizeof kept, "%s", dist_lasterror());
    for (size_t i = 0; i < reserved; i++) {
        int taken = rc == 0 || rc == EOWNERDEAD;
        const dl_grant_t *g = taken ? &t[i].g : rc == EAGAIN ? &none : &t[i].g;
        int frc = dl_lock_finish(p, v[i].l, &v[i].rq, tid,
                                 taken ? (g->dead ? EOWNERDEAD : 0) : rc, g);
        dead[i] = frc == EOWNERDEAD;
        if (taken && frc != 0 && frc != EOWNERDEAD && !failed) {
            failed = frc;         /* recording one failed: it was given back */
            snprintf(kept, sizeof kept, "%s", dist_lasterror());
        }
        if (dead[i] && !count++)
            first = i;
    }
    if (failed) {
        /* All or none: the others go too. */
        for (size_t i = reserved; i-- > 0;)
            if (dl_lock_undo(p, v[i].l, dead[i], v[i].od_was) == EPERM)
                continue;         /* (the one that failed) */
        rc = failed;
    }
    dl_seterr("%s", kept);
    if (rc == ETIMEDOUT) {
        dl_fail(ETIMEDOUT, "lock-all of %zu locks: timed out", n);
    } else if (rc == ENOTRECOVERABLE && busy >= 0) {
        char q[96];
        dl_fail(ENOTRECOVERABLE, "lock-all of %zu locks: lock %s is unrecoverable (a robust "
                "holder unlocked it after EOWNERDEAD without dist_mutex_consistent)", n,
                dl_core_qname(&v[busy].l->core, q, sizeof q));
    } else if (rc == EBUSY && busy >= 0) {
        char q[96];
        dl_fail(EBUSY, "lock-all of %zu locks: lock %s is held or queued for", n,
                dl_core_qname(&v[busy].l->core, q, sizeof q));
    } else if (rc == EBUSY) {
        dl_fail(EBUSY, "lock-all of %zu locks: the holds taken had lapsed before Redis's answer", n);
    }
    free(keys);
    free(lens);
    free(t);
    if (rc == EOWNERDEAD || (rc == 0 && count))
        return count ? ownerdead(v[first].l, count, n) : 0;
    return rc;
}

/* confirm_all's (and so one_by_one's): a hold taken was lost, or could not
 * be confirmed in time, before the call returned; all were given back,
 * and the call may take them again (dl_lock_all decides). */
#define DL_ALL_AGAIN (-1)

/* A blocking call gives up with EDEADLK after this many attempts in a
 * row, each undone by the loss of a lock with a fixed lease after it had
 * lasted at least that lease, and none of which waited for a holder (a
 * lock held by another thread or process).  Such a set cannot be held all
 * at once by its own pace: taking it one by one takes longer than the
 * lease (many locks, a slow link), and every attempt would end as the one
 * before, for ever; a hang tells nothing, and EDEADLK is what SPEC gives a
 * blocking call that would wait for ever.  An attempt that waited for a
 * holder starts the count again: it outlasted the lease because others
 * held what it wanted, which is contention, not deadlock, and pthreads'
 * blocking call waits through it.  A timed call never says EDEADLK: it
 * attempts until its deadline (ETIMEDOUT), as SPEC has it block; a try
 * gives up after its one attempt (EBUSY). */
#define DL_ALL_OUTLASTED 8

/* Member i could not be kept (rc: dl_lock_reconfirm's ENOLCK or EIO, or
 * ENOLCK for a hold past its validity): every hold is given back, with
 * dist_lasterror saying why.  DL_ALL_AGAIN or EIO; *failed = i. */
static int give_all_back(dl_proc_t *p, dl_all_req_t *v, size_t n, char *dead, size_t i, int rc,
                         const char *why, size_t *failed)
{
    char q[96];
    if (rc == ENOLCK)             /* (worded to follow attempts' "...: ") */
        dl_seterr("lock %s %s", dl_core_qname(&v[i].l->core, q, sizeof q), why);
    else
        dl_fail(EIO, "lock-all of %zu locks: lock %s cannot be confirmed: %s", n,
                dl_core_qname(&v[i].l->core, q, sizeof q), dist_lasterror());
    undo(p, v, n, dead);
    *failed = i;
    return rc == ENOLCK ? DL_ALL_AGAIN : EIO;
}

/* Last, before the call returns, every hold it took (PROTOCOL.md
 * "Validity": the check comes last).  A lock taken before the call waited
 * for a later one may have been lost in Redis meanwhile (a restart, a
 * deleted key) and taken by another process: returned, it would be a hold
 * its caller gets long after the loss.  And each round trip here takes
 * time, during which the holds looked at before it age, and the one taken
 * last may run out (its lease, while a slow confirmation of an earlier
 * one was under way) or be lost.  So: a hold taken before a wait (the
 * first `waited`) or looked at after a round trip of this pass must be
 * trusted; the one taken last with no round trip since stands within its
 * validity and trust epoch, as a lock call's does; any other is confirmed
 * now, and a confirmation answered after the validity it set is no
 * confirmation.  After round trips, every hold must still be within its
 * validity.  A sign that Redis may have lost state (the trust epoch moved
 * on) during a round trip for one hold voids the trust of those looked at
 * before it: each is looked at again, once (SPEC, "Local trust": a sign
 * ends the trust in every hold until a round trip confirms each again);
 * should another sign come meanwhile, the call starts again.  One that is
 * gone, or not confirmed in time, makes the call give all back and take
 * them again, in the same order (taking it back alone, while holding the
 * later ones, could wait against the canonical order).  0, DL_ALL_AGAIN,
 * EIO (all given back; *failed: the lock that could not be kept). */
static int confirm_all(dl_proc_t *p, dl_all_req_t *v, size_t n, char *dead, size_t waited,
                       size_t *failed)
{
    static const char lost[] = "was lost in Redis, or not confirmed within its validity, "
                               "before the call could return";
    int asked = 0;
    for (size_t i = 0; i < n; i++) {
        int how = i < waited || asked ? DL_RECONFIRM_TRUSTED : DL_RECONFIRM_CURRENT;
        v[i].epoch = dl_trust_epoch();    /* (before its check: a sign during it counts) */
        int rc = dl_lock_reconfirm(p, v[i].l, how, &asked);
        if (rc)
            return give_all_back(p, v, n, dead, i, rc, lost, failed);
    }
    unsigned long epoch = dl_trust_epoch();
    int again = 0;
    for (size_t i = 0; i < n; i++) {
        if (v[i].epoch == epoch)
            continue;
        again = 1;                /* trusted before a sign: confirmed since, or now */
        int rc = dl_lock_reconfirm(p, v[i].l, DL_RECONFIRM_TRUSTED, &asked);
        if (rc)
            return give_all_back(p, v, n, dead, i, rc, lost, failed);
    }
    if (again && dl_trust_epoch() != epoch) {
        dl_seterr("the locks could not be confirmed: Redis may have lost state twice (signs: a "
                  "dropped connection, a failover...) while the call confirmed them");
        undo(p, v, n, dead);
        *failed = n;              /* (no one lock) */
        return DL_ALL_AGAIN;
    }
    for (size_t i = 0; asked && i < n; i++) {
        if (dl_lock_valid(v[i].l))
            continue;
        return give_all_back(p, v, n, dead, i, ENOLCK,
                             "ran out of its validity while the call confirmed the others",
                             failed);
    }
    return 0;
}

/* One by one in the canonical order, each as its lock call would; those
 * taken are undone when one cannot be had.  *waited is set when a lock
 * call waited for a holder (dl_req_t.waited). */
static int one_by_one(dl_proc_t *p, dl_all_req_t *v, size_t n, char *dead, size_t *failed,
                      int *waited)
{
    size_t first = n, count = 0;
    for (size_t i = 0; i < n; i++) {
        /* What the undo puts back should a later lock fail: a relock told
         * EOWNERDEAD here (a held hold taken anew) was told to nobody. */
        v[i].od_was = dl_lock_owner_dead_pending(v[i].l);
        v[i].rq.waited = waited;
        int rc = dl_lock_acquire(p, v[i].l, &v[i].rq);
        v[i].rq.waited = NULL;
        if (rc != 0 && rc != EOWNERDEAD) {
            undo(p, v, i, dead);
            /* As a trylock: never EDEADLK (dist_lasterror says why). */
            return v[i].rq.try_only && rc == EDEADLK ? EBUSY : rc;
        }
        dead[i] = rc == EOWNERDEAD;
    }
    int rc = confirm_all(p, v, n, dead, n - 1, failed);
    if (rc)
        return rc;
    for (size_t i = 0; i < n; i++) {
        /* A relock that took its lock anew in an attempt undone since: the
         * undo kept the new hold (the caller's), and this attempt's relock
         * found it good, but the lapse is told now, as the relock told it
         * then (a robust lock's section made consistent before its end). */
        if (v[i].lapse_untold && !dead[i]) {
            dl_lock_lapse_told(v[i].l, &v[i].rq);
            dead[i] = 1;
        }
        v[i].lapse_untold = 0;
        if (dead[i] && !count++)
            first = i;
    }
    return count ? ownerdead(v[first].l, count, n) : 0;
}

/* The call ends with error rc (not 0, EOWNERDEAD): a relock that took its
 * lock anew after a lapse in one of its attempts (dead[i] in the last,
 * which the undo kept: the caller's hold) leaves the lapse to the thread's
 * next lock call on that lock (dl_lock_lapse_untold), or nobody would tell
 * it: the caller's next relock finds the new hold good.  rc. */
static int failed_untold(dl_all_req_t *v, size_t n, const char *dead, int rc)
{
    for (size_t i = 0; i < n; i++) {
        if (v[i].relock && (v[i].lapse_untold || dead[i]))
            dl_lock_lapse_untold(v[i].l);
        v[i].lapse_untold = 0;
    }
    return rc;
}

/* one_by_one until it holds the set, or gives up (see DL_ALL_OUTLASTED):
 * a try after its one attempt (EBUSY), a timed call at its deadline
 * (ETIMEDOUT), a blocking one once attempts in a row outlast a fixed lease
 * without waiting for a holder (EDEADLK); dist_lasterror keeps why the
 * last was undone. */
static int attempts(dl_proc_t *p, dl_all_req_t *v, size_t n, char *dead)
{
    char q[96], why[DL_ERRMAX];
    unsigned outlasted = 0;
    for (;;) {
        uint64_t t0 = dl_now_ms();
        size_t failed = 0;
        int waited = 0;
        int rc = one_by_one(p, v, n, dead, &failed, &waited);
        if (rc == 0 || rc == EOWNERDEAD)
            return rc;
        if (rc != DL_ALL_AGAIN)
            return failed_untold(v, n, dead, rc);
        /* A relock told EOWNERDEAD in the attempt undone: its new hold
         * stays the caller's (the undo gives back the call's count only),
         * so the next attempt's relock would find it good and say 0. */
        for (size_t i = 0; i < n; i++)
            if (v[i].relock && dead[i])
                v[i].lapse_untold = 1;
        snprintf(why, sizeof why, "%s", dist_lasterror());
        const dl_all_req_t *f = failed < n ? &v[failed] : NULL;
        int outlast = f && f->rq.lease_ms && dl_now_ms() - t0 >= f->rq.lease_ms;
        const char *hint = outlast ? "; the set could not be held together within the lease"
                                   : "";
        if (v[0].rq.try_only)
            return failed_untold(v, n, dead,
                                 dl_fail(EBUSY, "lock-all of %zu locks: could not hold them all "
                                         "at once: %s%s", n, why, hint));
        if (dl_req_over(&v[0].rq))
            return failed_untold(v, n, dead,
                                 dl_fail(ETIMEDOUT, "lock-all of %zu locks: timed out; its last "
                                         "attempt could not hold them all at once: %s%s", n, why,
                                         hint));
        outlasted = outlast && !waited ? outlasted + 1 : 0;
        if (f && outlasted >= DL_ALL_OUTLASTED && v[0].rq.deadline == DL_FOREVER)
            return failed_untold(v, n, dead,
                                 dl_fail(EDEADLK, "lock-all of %zu locks: %u attempts in a row "
                                         "each lasted longer than the fixed lease of lock %s "
                                         "(%lu ms), which ran out before the call had the "
                                         "others, without waiting for another holder: the set "
                                         "cannot be held together within the lease (a longer "
                                         "lease, a renewed one, or fewer locks)", n, outlasted,
                                         dl_core_qname(&f->l->core, q, sizeof q),
                                         f->rq.lease_ms));
    }
}

int dl_lock_all(dl_proc_t *p, dl_all_req_t *v, size_t n)
{
    char q[96];
    qsort(v, n, sizeof *v, by_name);
    for (size_t i = 1; i < n; i++)
        if (v[i].l == v[i - 1].l)
            return dl_fail(EINVAL, "lock-all: lock %s is in the set twice (ms[%zu] and ms[%zu])",
                           dl_core_qname(&v[i].l->core, q, sizeof q),
                           v[i - 1].at < v[i].at ? v[i - 1].at : v[i].at,
                           v[i - 1].at < v[i].at ? v[i].at : v[i - 1].at);
    /* What a lock call would refuse before waiting, refused before any
     * lock is taken. */
    for (size_t i = 0; i < n; i++) {
        int rc = dl_lock_deadlocks(v[i].l, &v[i].rq);
        if (rc)
            return v[i].rq.try_only ? EBUSY : rc;
    }
    char *dead = calloc(n, 1);
    if (!dead)
        return dl_fail(ENOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        v[i].od_was = 0;          /* (all at once: none is held before) */
        v[i].relock = dl_lock_held_count(v[i].l) > 0;
        v[i].lapse_untold = 0;
    }
    int rc = n > 1 ? all_at_once(p, v, n, dead) : EAGAIN;
    if (rc == 0 || rc == EOWNERDEAD) {
        /* Taken by one call, and checked by it (take_all.c); checked again
         * now that they are recorded, the last thing before returning. */
        char kept[DL_ERRMAX];
        snprintf(kept, sizeof kept, "%s", dist_lasterror());
        size_t failed;
        int crc = confirm_all(p, v, n, dead, 0, &failed);
        if (crc == DL_ALL_AGAIN)
            rc = EAGAIN;          /* given back: one by one now */
        else if (crc)
            rc = crc;
        else
            dl_seterr("%s", kept);
    }
    if (rc == EAGAIN || (rc == EBUSY && !v[0].rq.try_only))
        rc = attempts(p, v, n, dead);
    free(dead);
    return rc;
}
