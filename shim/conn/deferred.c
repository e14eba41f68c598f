/* SPDX-License-Identifier: BSD-3-Clause */
/* deferred.c - commands sent in the background until they reach their
 * server (see deferred.h). */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "conn.h"
#include "deferred.h"
#include "dl.h"

/* How many commands may wait at once: each names one hold on one server
 * that failed, so this many means a server flapping under a heavy load of
 * locks; past it, new ones are dropped (logged), and those holds lapse by
 * their lease there as before. */
#define DL_DEFER_MAX 8192
/* After a failure (a server in its down window fails at once, so trying
 * often costs little), and before the first try. */
#define DL_DEFER_RETRY_MS 250
#define DL_DEFER_FIRST_MS 20

typedef struct item {
    struct item *next;
    int node, looks;
    uint64_t due, give_up;
    dl_cmd_t cmd;             /* argv, argvlen point into the item */
} item_t;

struct dl_deferred {
    pthread_mutex_t mu;
    pthread_cond_t cv;        /* new work, or the thread's end */
    dl_link_t *links[DL_MAX_ENDPOINTS];
    int nlinks;
    item_t *head;
    size_t count;
    int started, stop, running;
};

dl_deferred_t *dl_deferred_new(dl_link_t *const *links, int n)
{
    dl_deferred_t *d = calloc(1, sizeof *d);
    if (!d)
        return NULL;
    pthread_mutex_init(&d->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&d->cv, &ca);
    pthread_condattr_destroy(&ca);
    for (int i = 0; i < n && i < DL_MAX_ENDPOINTS; i++)
        d->links[d->nlinks++] = links[i];
    return d;
}

static void item_free(item_t *it)
{
    free(it);
}

/* One pass: every due command of node `node` in one batch on its link.
 * The items are off the list (the thread's own); returns those to keep. */
static item_t *send_node(dl_deferred_t *d, int node, item_t *due)
{
    size_t m = 0;
    for (item_t *it = due; it; it = it->next)
        m++;
    dl_cmd_t *cmds = malloc(m * sizeof *cmds);
    if (!cmds)
        return due;           /* tried again next pass */
    size_t i = 0;
    for (item_t *it = due; it; it = it->next)
        cmds[i++] = it->cmd;
    for (i = 0; i < m; i++)
        cmds[i].retried = cmds[i].sent = 0;
    dl_link_exec(d->links[node], cmds, (int)m);
    uint64_t now = dl_now_ms();
    item_t *keep = NULL, *next;
    i = 0;
    for (item_t *it = due; it; it = next, i++) {
        next = it->next;
        const redisReply *r = cmds[i].reply;
        int reached = !cmds[i].err && r && r->type != REDIS_REPLY_ERROR;
        if (cmds[i].reply)
            freeReplyObject(cmds[i].reply);
        if (reached && --it->looks <= 0) {
            item_free(it);
            continue;
        }
        if (now >= it->give_up) {
            dl_log(DL_LOG_INFO, "redlock: a release or withdrawal owed to server %d never "
                   "reached it (%s); what it holds there lapses by its lease", node + 1,
                   reached ? "answered once" : cmds[i].errmsg[0] ? cmds[i].errmsg : "no reply");
            item_free(it);
            continue;
        }
        it->due = now + (reached ? DL_DEFER_GAP_MS : DL_DEFER_RETRY_MS);
        it->next = keep;
        keep = it;
    }
    free(cmds);
    return keep;
}

static void *deferred_main(void *arg)
{
    dl_deferred_t *d = arg;
    pthread_mutex_lock(&d->mu);
    while (!d->stop) {
        uint64_t now = dl_now_ms(), next = DL_FOREVER;
        item_t *due[DL_MAX_ENDPOINTS] = { 0 };
        int any = 0;
        for (item_t **pp = &d->head; *pp;) {
            item_t *it = *pp;
            if (it->due > now) {
                next = it->due < next ? it->due : next;
                pp = &it->next;
                continue;
            }
            *pp = it->next;
            d->count--;
            it->next = due[it->node];
            due[it->node] = it;
            any = 1;
        }
        if (!any) {
            if (next == DL_FOREVER) {
                pthread_cond_wait(&d->cv, &d->mu);
            } else {
                struct timespec ts;
                dl_timespec_at(next, &ts);
                pthread_cond_timedwait(&d->cv, &d->mu, &ts);
            }
            continue;
        }
        pthread_mutex_unlock(&d->mu);
        item_t *keep[DL_MAX_ENDPOINTS];
        for (int node = 0; node < d->nlinks; node++)
            keep[node] = due[node] ? send_node(d, node, due[node]) : NULL;
        pthread_mutex_lock(&d->mu);
        for (int node = 0; node < d->nlinks; node++) {
            item_t *next_it;
            for (item_t *it = keep[node]; it; it = next_it) {
                next_it = it->next;
                it->next = d->head;
                d->head = it;
                d->count++;
            }
        }
    }
    d->running = 0;
    pthread_cond_broadcast(&d->cv);
    pthread_mutex_unlock(&d->mu);
    return NULL;
}

int dl_deferred_add(dl_deferred_t *d, int node, const dl_cmd_t *cmd, int looks, uint64_t give_up)
{
    if (node < 0 || node >= d->nlinks || cmd->argc < 2)
        return EINVAL;
    /* argv[0..1] are static (the command and a script's text); the rest
     * is copied after the item. */
    size_t n = (size_t)cmd->argc, bytes = sizeof(item_t) + n * (sizeof(char *) + sizeof(size_t));
    for (size_t i = 2; i < n; i++)
        bytes += cmd->argvlen[i] + 1;
    item_t *it = calloc(1, bytes);
    if (!it)
        return ENOMEM;
    const char **argv = (const char **)(it + 1);
    size_t *argvlen = (size_t *)(argv + n);
    char *p = (char *)(argvlen + n);
    for (size_t i = 0; i < n; i++) {
        argvlen[i] = cmd->argvlen[i];
        if (i < 2) {
            argv[i] = cmd->argv[i];
            continue;
        }
        memcpy(p, cmd->argv[i], cmd->argvlen[i]);
        p[cmd->argvlen[i]] = 0;
        argv[i] = p;
        p += cmd->argvlen[i] + 1;
    }
    it->cmd.argc = cmd->argc;
    it->cmd.argv = argv;
    it->cmd.argvlen = argvlen;
    it->node = node;
    it->looks = looks > 0 ? looks : 1;
    it->due = dl_now_ms() + DL_DEFER_FIRST_MS;
    it->give_up = give_up;

    pthread_mutex_lock(&d->mu);
    if (d->count >= DL_DEFER_MAX || d->stop) {
        pthread_mutex_unlock(&d->mu);
        free(it);
        static uint64_t last_warn;
        uint64_t now = dl_now_ms(), prev = __atomic_load_n(&last_warn, __ATOMIC_RELAXED);
        if (!prev || now - prev > 5000) {
            __atomic_store_n(&last_warn, now, __ATOMIC_RELAXED);
            dl_log(DL_LOG_WARN, "redlock: %d releases and withdrawals already wait for servers "
                   "that failed; one more is dropped (its hold there lapses by its lease)",
                   DL_DEFER_MAX);
        }
        return ENOMEM;
    }
    if (!d->started && dl_thread_start(deferred_main, d) == 0)
        d->started = d->running = 1;
    it->next = d->head;
    d->head = it;
    d->count++;
    pthread_cond_signal(&d->cv);
    pthread_mutex_unlock(&d->mu);
    return 0;
}

void dl_deferred_free(dl_deferred_t *d)
{
    if (!d)
        return;
    pthread_mutex_lock(&d->mu);
    d->stop = 1;
    pthread_cond_broadcast(&d->cv);
    while (d->running)
        pthread_cond_wait(&d->cv, &d->mu);
    item_t *next;
    for (item_t *it = d->head; it; it = next) {
        next = it->next;
        item_free(it);
    }
    pthread_mutex_unlock(&d->mu);
    pthread_cond_destroy(&d->cv);
    pthread_mutex_destroy(&d->mu);
    free(d);
}
