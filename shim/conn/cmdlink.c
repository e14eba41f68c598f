/* SPDX-License-Identifier: BSD-3-Clause */
/* cmdlink.c - a link's queue and its leader (see cmdlink.h). */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmdlink.h"
#include "dl.h"

struct dl_link {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    dl_link_io_t io;          /* touched only by the leader (a post: under mu,
                                 with no leader) */
    int leader;               /* a thread is doing I/O */
    dl_cmd_t **queue;         /* commands waiting for the next leader */
    size_t qlen, qcap;
    dl_cmd_t **batch;         /* the leader's batch (kept to reuse its memory) */
    size_t bcap;
    dl_cmd_t **inflight;      /* the batch being sent: reachable from here, so a
                                 child forked meanwhile does not leak it */
};

dl_link_t *dl_link_new(const dl_link_conf_t *conf)
{
    dl_link_t *k = calloc(1, sizeof *k);
    if (!k)
        return NULL;
    pthread_mutex_init(&k->mu, NULL);
    /* A follower's wait ends at its call's deadline, which dl_timespec_at
     * gives on the monotonic clock (the default, CLOCK_REALTIME, would
     * take it for a time decades past and end the wait at once). */
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&k->cv, &ca);
    pthread_condattr_destroy(&ca);
    dl_link_io_init(&k->io, conf);
    return k;
}

const dl_endpoint_t *dl_link_ep(const dl_link_t *k)
{
    return &k->io.conf.ep;
}

void dl_link_abandon(dl_link_t *k)
{
    if (k)
        dl_link_io_abandon(&k->io);
}

void dl_link_free(dl_link_t *k)
{
    if (!k)
        return;
    dl_link_io_drop(&k->io);
    free(k->queue);
    free(k->batch);
    pthread_cond_destroy(&k->cv);
    pthread_mutex_destroy(&k->mu);
    free(k);
}

/* Takes cmds[0..n) back out of the queue if no leader has taken them yet
 * (k->mu held): 1 if so. */
static int dequeue(dl_link_t *k, dl_cmd_t *cmds, int n)
{
    for (size_t i = 0; i + (size_t)n <= k->qlen; i++)
        if (k->queue[i] == &cmds[0]) {
            memmove(k->queue + i, k->queue + i + n, (k->qlen - i - (size_t)n) * sizeof *k->queue);
            k->qlen -= (size_t)n;
            return 1;
        }
    return 0;
}

/* Queues cmds; with `send`, leads now if nobody does and writes the batch. */
static void start(dl_link_t *k, dl_cmd_t *cmds, int n, dl_link_op_t *op, int send)
{
    memset(op, 0, sizeof *op);
    pthread_mutex_lock(&k->mu);
    if (k->qlen + (size_t)n > k->qcap) {
        size_t cap = (k->qlen + (size_t)n) * 2;
        dl_cmd_t **q = realloc(k->queue, cap * sizeof *q);
        if (!q) {
            pthread_mutex_unlock(&k->mu);
            for (int i = 0; i < n; i++) {
                cmds[i].err = EIO;
                cmds[i].done = 1;
                snprintf(cmds[i].errmsg, sizeof cmds[i].errmsg, "out of memory");
            }
            op->failed = 1;
            return;
        }
        k->queue = q;
        k->qcap = cap;
    }
    unsigned long *trips = dl_stats_thread_trips();
    for (int i = 0; i < n; i++) {
        cmds[i].reply = NULL;
        cmds[i].err = cmds[i].done = 0;
        cmds[i].errmsg[0] = 0;
        cmds[i].trips = trips;    /* (this thread waits for them: it outlives the batch) */
        k->queue[k->qlen++] = &cmds[i];
    }
    if (!send || k->leader) {
        pthread_mutex_unlock(&k->mu);
        return;               /* a leader busy with its batch: ours goes next */
    }
    /* Lead now, and write the whole queue as one batch: the caller collects
     * the replies in dl_link_finish, after starting its calls elsewhere.
     * Swap buffers so followers can queue while we do I/O. */
    k->leader = 1;
    op->leading = 1;
    op->batch = k->queue;
    op->bn = k->qlen;
    op->bcap = k->qcap;
    k->queue = k->batch;
    k->qcap = k->bcap;
    k->qlen = 0;
    k->batch = NULL;
    k->bcap = 0;
    k->inflight = op->batch;
    pthread_mutex_unlock(&k->mu);
    op->written = dl_link_io_presend(&k->io, op->batch, op->bn);
}

void dl_link_start(dl_link_t *k, dl_cmd_t *cmds, int n, dl_link_op_t *op)
{
    start(k, cmds, n, op, 1);
}

/* The leader's end of a batch (k->mu held): every command of it is done. */
static void lead_end(dl_link_t *k, dl_cmd_t **batch, size_t bn, size_t bcap)
{
    k->inflight = NULL;
    for (size_t i = 0; i < bn; i++)
        __atomic_store_n(&batch[i]->done, 1, __ATOMIC_RELEASE);
    if (!k->batch) {
        k->batch = batch;
        k->bcap = bcap;
    } else {
        free(batch);
    }
    k->leader = 0;
    pthread_cond_broadcast(&k->cv);
}

int dl_link_finish(dl_link_t *k, dl_cmd_t *cmds, int n, dl_link_op_t *op)
{
    if (op->failed)
        return EIO;
    if (op->leading) {
        dl_link_io_run(&k->io, op->batch, op->bn, op->written);
        pthread_mutex_lock(&k->mu);
        lead_end(k, op->batch, op->bn, op->bcap);
    } else {
        pthread_mutex_lock(&k->mu);
    }
    uint64_t deadline = 0;
    for (int i = 0; i < n; i++)
        if (cmds[i].deadline && (!deadline || cmds[i].deadline < deadline))
            deadline = cmds[i].deadline;
    /* Our commands are done when the last one is: replies come in order. */
    while (!__atomic_load_n(&cmds[n - 1].done, __ATOMIC_ACQUIRE)) {
        if (k->leader) {
            if (!deadline) {
                pthread_cond_wait(&k->cv, &k->mu);
                continue;
            }
            struct timespec ts;
            dl_timespec_at(deadline, &ts);
            if (pthread_cond_timedwait(&k->cv, &k->mu, &ts) != ETIMEDOUT)
                continue;
            if (dequeue(k, cmds, n)) {
                /* Never sent: the leader is stuck on a stalled server. */
                for (int i = 0; i < n; i++) {
                    cmds[i].err = EIO;
                    snprintf(cmds[i].errmsg, sizeof cmds[i].errmsg,
                             "timed out waiting for redis (a round trip before it is stuck)");
                }
                pthread_mutex_unlock(&k->mu);
                return EIO;
            }
            /* In the leader's batch already: it gives them up at this same
             * deadline (batch_deadline) and wakes us when its batch ends.
             * Wait for that without a time-out: with one already past,
             * the wait would return at once, again and again (a spin). */
            deadline = 0;
            continue;
        }
        k->leader = 1;
        /* Take the whole queue as one batch; swap buffers so followers can
         * queue while we do I/O. */
        dl_cmd_t **batch = k->queue;
        size_t bn = k->qlen, bcap = k->qcap;
        k->queue = k->batch;
        k->qcap = k->bcap;
        k->qlen = 0;
        k->batch = NULL;
        k->bcap = 0;
        k->inflight = batch;
        pthread_mutex_unlock(&k->mu);
        dl_link_io_run(&k->io, batch, bn, 0);
        pthread_mutex_lock(&k->mu);
        lead_end(k, batch, bn, bcap);
    }
    pthread_mutex_unlock(&k->mu);
    for (int i = 0; i < n; i++)
        if (cmds[i].err)
            return EIO;
    return 0;
}

int dl_link_exec(dl_link_t *k, dl_cmd_t *cmds, int n)
{
    /* Alone, it leads (or follows) in dl_link_finish, as it always did. */
    dl_link_op_t op;
    start(k, cmds, n, &op, 0);
    return dl_link_finish(k, cmds, n, &op);
}

redisReply *dl_link_ask(dl_link_t *k, int argc, const char **argv, const size_t *argvlen,
                        char *err, size_t errlen)
{
    dl_cmd_t cmd;
    memset(&cmd, 0, sizeof cmd);
    cmd.argc = argc;
    cmd.argv = argv;
    cmd.argvlen = argvlen;
    if (dl_link_exec(k, &cmd, 1)) {
        snprintf(err, errlen, "%s", cmd.errmsg);
        return NULL;
    }
    return cmd.reply;
}

int dl_link_post(dl_link_t *k, int argc, const char **argv, const size_t *argvlen)
{
    pthread_mutex_lock(&k->mu);
    /* Only on a live connection that no leader is using: a post never
     * connects and never waits for another thread's round trip. */
    int rc = k->leader ? EAGAIN : dl_link_io_post(&k->io, argc, argv, argvlen);
    pthread_mutex_unlock(&k->mu);
    return rc;
}
