/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * nemesis_lockall.c - the lock-all role: a thread of each client locks
 * overlapping sets of the pool's mutexes (nm_locks with .all: two or three
 * of them, in a random order) with dist_mutex_lockall, trylockall or
 * timedlockall, writes to the fenced store with each lock's fence inside,
 * and unlocks each; the lock threads take the same mutexes one at a time.
 *
 * Each call is recorded as one lock call per lock of its set (nm_ev_t.all:
 * the set's size; the records follow each other), so every lock check
 * judges each lock of the set as it judges any hold (nemesis_check.c; a
 * lock-all's EOWNERDEAD is judged for the set: it names any of them).
 * Then the thread records which locks of the set it holds (NM_ALLCHECK:
 * getfence says 0), and this role checks
 *
 *  all-or-none  a call that returned 0 or EOWNERDEAD holds every lock of
 *               its set, one that failed (EBUSY, ETIMEDOUT, EIO) none;
 *
 * and the end of the run, that every lock-all returns (overlapping sets
 * never deadlock: SPEC; a deadlock never ends).  What a failed call left
 * in Redis shows as an orphan or a liveness violation of that lock.
 */
#include "nemesis_int.h"

#include <errno.h>
#include <string.h>
#include <time.h>

#include "distlock.h"

#define NM_ALL_MAX 8

int nm_lockall_open(const nm_client_cfg_t *cc, int base)
{
    (void)cc;
    (void)base;
    return 0;               /* the pool's mutexes are the client's locks */
}

void *nm_lockall_main(void *arg)
{
    nm_thr_t *t = arg;
    t->tid = (int)gettid();
    t->tl->tid = (uint32_t)t->tid;
    int pool[NM_ALL_MAX], np = 0;
    for (int i = 0; i < nm_nlocks && np < NM_ALL_MAX; i++)
        if (nm_locks[i].all)
            pool[np++] = i;
    if (np < 2)
        return NULL;
    while (!nm_stopping(t) && !t->tl->full) {
        /* a set of 2..np locks, in a random order (the library's own
         * order is the canonical one, whatever the caller's) */
        int set[NM_ALL_MAX], n = (int)nm_rnd_in(&t->rng, 2, np);
        memcpy(set, pool, sizeof pool);
        for (int i = np - 1; i > 0; i--) {
            int j = (int)nm_rnd_in(&t->rng, 0, i), x = set[i];
            set[i] = set[j];
            set[j] = x;
        }
        dist_mutex_t *ms[NM_ALL_MAX];
        for (int i = 0; i < n; i++)
            ms[i] = (dist_mutex_t *)nm_client_mutex(set[i]);
        long r = nm_rnd_in(&t->rng, 0, 99);
        int op = r < 30 ? NM_OP_LOCK : r < 65 ? NM_OP_TIMED : NM_OP_TRY;
        t->hold++;
        nm_ev_t *e[NM_ALL_MAX];
        int64_t rt0 = nm_realtime_us(), abs_us = rt0 + nm_rnd_in(&t->rng, 20, 2500) * 1000;
        for (int i = 0; i < n; i++) {
            e[i] = nm_ev_begin(t->tl, NM_LOCK, op, set[i], 'w', 0, t->hold);
            if (e[i]) {
                e[i]->all = (uint8_t)n;
                if (op == NM_OP_TIMED) {
                    e[i]->rt0_us = rt0;
                    e[i]->abs_rt_us = abs_us;
                }
            }
        }
        struct timespec ts = { abs_us / 1000000, (abs_us % 1000000) * 1000 };
        int rc = op == NM_OP_LOCK ? dist_mutex_lockall(ms, (size_t)n)
                 : op == NM_OP_TRY ? dist_mutex_trylockall(ms, (size_t)n)
                 : dist_mutex_timedlockall(ms, (size_t)n, &ts);
        int64_t rt1 = nm_realtime_us();
        uint64_t fence[NM_ALL_MAX] = { 0 }, mask = 0;
        for (int i = 0; i < n; i++)
            if (dist_mutex_getfence(ms[i], &fence[i]) == 0)
                mask |= 1ull << i;
            else
                fence[i] = 0;
        for (int i = 0; i < n; i++)
            if (e[i]) {
                e[i]->rt1_us = rt1;
                nm_ev_end(e[i], rc, (rc == 0 || rc == EOWNERDEAD) ? fence[i] : 0);
            }
        nm_ev_t *chk = nm_ev_begin(t->tl, NM_ALLCHECK, op, set[0], 'w', 0, t->hold);
        if (chk)
            chk->all = (uint8_t)n;
        nm_ev_end(chk, rc, mask);
        if (rc != 0 && rc != EOWNERDEAD && rc != EBUSY && rc != ETIMEDOUT)
            fprintf(stderr, "nemesis client %d/%d: lock-all of %d: %s (%s)\n", t->pid, t->tid, n,
                    strerror(rc), dist_lasterror());
        if (rc == 0 || rc == EOWNERDEAD) {
            for (int i = 0; i < n; i++)
                nm_do_store(t, set[i], 'w', fence[i]);
            long in = nm_rnd_in(&t->rng, 0, 99) < 80 ? nm_rnd_in(&t->rng, 0, 20000)
                                                     : nm_rnd_in(&t->rng, 20000, 300000);
            nm_sleep_us(in);
            for (int i = 0; i < n; i++)
                nm_do_store(t, set[i], 'w', fence[i]);
            /* each on its own, in another random order */
            for (int i = n - 1; i >= 0; i--)
                nm_do_unlock(t, set[i], 'w', 0, fence[i]);
        } else {
            /* a failed call left some held (all-or-none says so): let
             * them go, so the run goes on */
            for (int i = 0; i < n; i++)
                if (mask & (1ull << i))
                    dist_mutex_unlock(ms[i]);
            nm_sleep_us(rc == EBUSY ? nm_rnd_in(&t->rng, 1000, 10000) : nm_rnd_in(&t->rng, 5000, 30000));
        }
        nm_sleep_us(nm_rnd_in(&t->rng, 500, 8000));
    }
    return NULL;
}

void nm_lockall_check(nm_hist_t *hs)
{
    const nm_ctx_t *c = hs->c;
    for (int s = 0; s < c->sh->nslots; s++) {
        const nm_slot_t *sl = &c->sh->slot[s];
        if (sl->pid <= 0)
            continue;
        for (int t = 0; t < NM_MAX_THREADS; t++) {
            const nm_thread_log_t *tl = &sl->th[t];
            uint32_t n = __atomic_load_n(&tl->n, __ATOMIC_ACQUIRE);
            for (uint32_t i = 0; i < n; i++) {
                const nm_ev_t *e = &tl->ev[i];
                if (e->kind != NM_ALLCHECK || __atomic_load_n(&e->state, __ATOMIC_ACQUIRE) != 2)
                    continue;
                uint64_t all = e->all >= 64 ? ~0ull : (1ull << e->all) - 1;
                int ok = e->rc == 0 || e->rc == EOWNERDEAD;
                if ((ok && e->fence == all) || (!ok && e->fence == 0))
                    continue;
                char names[256] = "";
                size_t o = 0;
                for (uint32_t j = i >= e->all ? i - e->all : 0; j < i; j++)
                    o += (size_t)snprintf(names + o, o < sizeof names ? sizeof names - o : 0, "%s%s",
                                          o ? " " : "", nm_name_tag(tl->ev[j].name));
                nm_viol_add(hs, NM_C_ALL, e->name, e->t1,
                            "a %s of %d/%d (%s) returned %s at %.1f ms, yet afterwards its thread held "
                            "%s of them (mask %llx of %llx)",
                            e->op == NM_OP_LOCK ? "lock-all" : e->op == NM_OP_TRY ? "trylock-all"
                            : "timedlock-all", sl->pid, (int)tl->tid, names, th_errname(e->rc),
                            nm_rel(c, e->t1), ok ? "not all" : "some", (unsigned long long)e->fence,
                            (unsigned long long)all);
            }
        }
    }
}
