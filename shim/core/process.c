/* SPDX-License-Identifier: BSD-3-Clause */
/* process.c - the per-process state, its creation and its reset in a
 * forked child. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uuid/uuid.h>

#include "dl.h"
#include "hold.h"
#include "loss.h"
#include "metrics.h"
#include "notify.h"
#include "process.h"
#include "trust.h"
#include "watchdog.h"
#include "self.h"

static dl_proc_t *dl_proc;
static pthread_mutex_t dl_proc_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t dl_atfork_once = PTHREAD_ONCE_INIT;

/* Parents' states that a child inherited: kept reachable, never used.
 * volatile: the array is only ever written, and an optimizing compiler
 * drops a write-only static with its stores (then valgrind and LSan report
 * the parent's whole state as "definitely lost" in every forked child). */
static dl_proc_t *volatile dl_orphans[64];
static int dl_norphans;

/* What the layers above reset in a child (dl_proc_on_fork), in order. */
static dl_fork_hook_t *fork_hooks, **fork_hooks_end = &fork_hooks;

void dl_proc_on_fork(dl_fork_hook_t *h)
{
    h->next = NULL;
    *fork_hooks_end = h;
    fork_hooks_end = &h->next;
}

static void child_after_fork(void)
{
    /* Only this thread exists now.  The parent's state may be mid-update
     * by threads that are gone, and its sockets are the parent's: leave it
     * all alone except for closing our copies of the sockets.  Its table
     * of resolved objects goes with it: the child resolves each object
     * anew, into a state of its own. */
    dl_self_after_fork();
    dl_proc_t *p = dl_proc;
    if (p) {
        dl_conn_abandon(p->conn);
        dl_notify_abandon(p);
        if (dl_norphans < 64)
            dl_orphans[dl_norphans++] = p;
    }
    dl_proc = NULL;
    pthread_mutex_init(&dl_proc_mu, NULL);
    dl_trust_hook(NULL, NULL);                   /* the parent's watchdog is gone */
    for (dl_fork_hook_t *h = fork_hooks; h; h = h->next)
        h->fn();
    dl_loss_after_fork();
    memset(&dl_stats_g, 0, sizeof dl_stats_g);   /* counters are this process's */
    dl_tid_forget();
}

static void atfork_register(void)
{
    pthread_atfork(dl_self_before_fork, NULL, child_after_fork);
}

/* Registered at load time, before any handler the program registers later:
 * child handlers run in registration order, and a program's own handler
 * that calls dist_* must find the library already reset for the child. */
__attribute__((constructor)) static void dl_register_atfork(void)
{
    pthread_once(&dl_atfork_once, atfork_register);
}

/* A hold lingering after an unlock (hold.c) would otherwise outlive the
 * process by a lease, and its next holder would be told EOWNERDEAD.  The
 * metrics file (metrics.c) gets the process's last counts. */
__attribute__((destructor)) static void dl_flush_at_exit(void)
{
    dl_proc_t *p = __atomic_load_n(&dl_proc, __ATOMIC_ACQUIRE);
    if (p && p->pid == getpid()) {
        dl_hold_flush_lingers(p);
        dl_metrics_flush(p);      /* a short-lived process's last counts */
    }
}

static dl_proc_t *create(int *err)
{
    dl_proc_t *p = calloc(1, sizeof *p);
    if (!p) {
        *err = dl_fail(ENOMEM, "out of memory");
        return NULL;
    }
    if (dl_config_load(&p->cfg)) {
        free(p);
        *err = EINVAL;
        return NULL;
    }
    dl_log_level = p->cfg.log_level;
    uuid_t u;
    uuid_generate_random(u);
    uuid_unparse_lower(u, p->token);
    p->chanprefix_len = (size_t)snprintf(p->chanprefix, sizeof p->chanprefix, "%sn:", p->cfg.prefix);
    p->channel_len = (size_t)snprintf(p->channel, sizeof p->channel, "%s%s", p->chanprefix, p->token);
    if (gethostname(p->host, sizeof p->host - 1))
        strcpy(p->host, "unknown");
    for (char *c = p->host; *c; c++)        /* keep the info fields parseable */
        if (*c == '\t' || *c == '\n')
            *c = '_';
    p->pid = getpid();
    p->conn = dl_conn_new(&p->cfg);
    if (p->conn)
        p->chans = dl_chans_new(p->cfg.prefix, p->token, dl_conn_caps(p->conn).slots);
    if (!p->conn || !p->chans) {
        dl_conn_free(p->conn);
        free(p);
        *err = dl_fail(ENOMEM, "out of memory");
        return NULL;
    }
    dl_registry_init(&p->reg);
    dl_watchdog_init(p);
    dl_objtab_init(&p->objs);
    pthread_mutex_init(&p->nmu, NULL);
    pthread_mutex_init(&p->wmu, NULL);
    pthread_mutex_init(&p->lmu, NULL);
    p->wnext = DL_FOREVER;
    p->lnext = DL_FOREVER;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&p->ncv, &ca);
    pthread_cond_init(&p->wcv, &ca);
    pthread_cond_init(&p->lcv, &ca);
    pthread_condattr_destroy(&ca);
    if (dl_notify_init(p)) {
        *err = dl_fail(ENOMEM, "out of memory");
        return NULL;              /* (what was made leaks, as a child's parent state does) */
    }
    if (p->cfg.metrics_file[0])
        dl_metrics_start(p);
    return p;
}

/* A sign of lost state (trust.h): the watchdog confirms every hold now. */
static void confirm_all(void *arg)
{
    dl_watchdog_confirm_all(arg);
}

dl_proc_t *dl_proc_get(int *err)
{
    dl_proc_t *p = __atomic_load_n(&dl_proc, __ATOMIC_ACQUIRE);
    if (p)
        return p;
    pthread_once(&dl_atfork_once, atfork_register);
    pthread_mutex_lock(&dl_proc_mu);
    p = dl_proc;
    /* A bad configuration is not cached: each call reports it (to its own
     * thread's dist_lasterror) until the environment is fixed. */
    if (!p && (p = create(err))) {
        __atomic_store_n(&dl_proc, p, __ATOMIC_RELEASE);
        dl_trust_hook(confirm_all, p);
    }
    pthread_mutex_unlock(&dl_proc_mu);
    return p;
}

int dl_proc_start(void)
{
    int err = 0;
    return dl_proc_get(&err) ? 0 : err ? err : EINVAL;
}

dl_caller_t dl_caller(const dl_proc_t *p, const dl_core_t *o)
{
    dl_caller_t who = { dl_core_allkeys(o), dl_core_allkeylens(o), p->chanprefix,
                        p->chanprefix_len, p->token, dl_core_key(o), o->keylen, o->kind->id };
    /* On a cluster: the channel of o's slot, so that its pushes stay in
     * the slot's shard (channel.h); the classic prefix only for want of
     * memory (the push then reaches nobody: waiters ask again). */
    if (dl_chans_by_slot(p->chans)) {
        size_t len;
        const char *pre = dl_chans_prefix(p->chans, dl_core_key(o), o->keylen, &len);
        if (pre) {
            who.chanprefix = pre;
            who.chanprefix_len = len;
        }
    }
    return who;
}

size_t dl_proc_info(const dl_proc_t *p, char *buf, size_t size)
{
    return (size_t)snprintf(buf, size, "%s\t%d\t%d", p->host, (int)p->pid, (int)dl_tid());
}
