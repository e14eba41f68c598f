/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * nemesis_barrier.c - the barrier and once role: a thread of each client
 * uses the nemesis's barrier (count: the clients alive at once) and its
 * onces: it waits on the barrier (timed, 0.3-1.5 s), and at each new epoch
 * of NM_EPOCH_MS calls dist_once on that epoch's once, whose routine
 * records its run and takes 50-600 ms (a client killed in it leaves the run
 * unfinished).  nemesis_check.c judges one serial per generation, nobody
 * released early, and each once run to completion once (unless something
 * explains more), nobody returning before a run completed.
 */
#include "nemesis_int.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "barrier_api.h"
#include "distlock.h"

const char *const nm_barrier_names[] = { "bar", "once", NULL };

static dist_barrier_t nm_bar;
static dist_once_t nm_once[NM_EPOCHS];
static char nm_once_names[NM_EPOCHS][80];
static __thread nm_thr_t *nm_once_thr;   /* the thread in a once's routine, */
static __thread uint32_t nm_once_epoch;  /* and its epoch */

/* The onces (the barrier is initialized by its thread: redlock:// refuses
 * barriers, and the onces still run there). */
int nm_barrier_open(const nm_client_cfg_t *cc, int base)
{
    for (int k = 0; k < NM_EPOCHS; k++) {
        snprintf(nm_once_names[k], sizeof nm_once_names[k], "%s.%d", cc->sh->names[base + 1], k);
        dist_once_t o = DIST_ONCE_INITIALIZER(nm_once_names[k]);
        nm_once[k] = o;
    }
    return 0;
}

/* A once's routine: its run recorded, 50-600 ms long. */
static void once_routine(void)
{
    nm_thr_t *t = nm_once_thr;
    nm_ev_t *e = nm_ev_begin(t->tl, NM_ORUN, 0, NM_ONCE_NAME, 'w', 1, nm_once_epoch);
    nm_sleep_us(nm_rnd_in(&t->rng, 50000, 600000));
    nm_ev_end(e, 0, 0);
}

/* The role's thread (above).  bar: the barrier could be
 * initialized (redlock:// refuses barriers). */
void *nm_barrier_main(void *arg)
{
    nm_thr_t *t = arg;
    t->tid = (int)gettid();
    t->tl->tid = (uint32_t)t->tid;
    int bar = dist_barrier_init(&nm_bar, t->cc->sh->names[NM_BAR_NAME], NULL,
                                (unsigned)t->cc->cfg->procs) == 0;
    if (!bar && t->cc->cfg->topo != NM_TOPO_REDLOCK)
        fprintf(stderr, "nemesis client %d/%d: barrier init: %s\n", t->pid, t->tid,
                dist_lasterror());
    nm_once_thr = t;
    int64_t last = -1;
    while (!nm_stopping(t) && !t->tl->full) {
        if (bar) {
            long ms = nm_rnd_in(&t->rng, 300, 1500);
            nm_ev_t *e = nm_ev_begin(t->tl, NM_BWAIT, NM_OP_TIMED, NM_BAR_NAME, 'w', 0, 0);
            int64_t rt0 = nm_realtime_us(), abs_us = rt0 + ms * 1000;
            if (e) {
                e->rt0_us = rt0;
                e->abs_rt_us = abs_us;
            }
            struct timespec ts = { abs_us / 1000000, (abs_us % 1000000) * 1000 };
            uint64_t gen = 0;
            int rc = dl_barrier_wait_gen(&nm_bar, &ts, &gen);
            if (e)
                e->rt1_us = nm_realtime_us();
            nm_ev_end(e, rc == DIST_BARRIER_SERIAL_THREAD ? NM_RC_SERIAL : rc, gen);
            if (rc != 0 && rc != DIST_BARRIER_SERIAL_THREAD && rc != ETIMEDOUT)
                fprintf(stderr, "nemesis client %d/%d: barrier wait: %s (%s)\n", t->pid, t->tid,
                        strerror(rc), dist_lasterror());
            /* (paced: a few dozen generations a second) */
            nm_sleep_us(nm_rnd_in(&t->rng, 5000, 60000));
        } else {
            nm_sleep_us(nm_rnd_in(&t->rng, 100000, 300000));
        }
        int64_t start = __atomic_load_n(&t->cc->sh->start_us, __ATOMIC_ACQUIRE);
        int64_t epoch = start ? (nm_now_us() - start) / (NM_EPOCH_MS * 1000) : -1;
        if (epoch < 0 || epoch == last || epoch >= NM_EPOCHS)
            continue;
        last = epoch;
        nm_once_epoch = (uint32_t)epoch;
        nm_ev_t *e = nm_ev_begin(t->tl, NM_ONCE, 0, NM_ONCE_NAME, 'w', 0, (uint32_t)epoch);
        int rc = dist_once(&nm_once[epoch], once_routine);
        nm_ev_end(e, rc, 0);
        if (rc != 0)
            fprintf(stderr, "nemesis client %d/%d: once of epoch %lld: %s (%s)\n", t->pid, t->tid,
                    (long long)epoch, strerror(rc), dist_lasterror());
    }
    return NULL;
}
