/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * process.h - the library's state in this process: configuration, the
 * process's random owner token, its connections, its registry of objects,
 * the subscriber, watchdog and lingerer threads.  Created on first use; a
 * forked child drops its parent's (without sending on its sockets) and
 * starts afresh.
 *
 * process.c creates the state and resets it in a forked child; the
 * subscriber's fields below belong to notify.c, the watchdog's to
 * watchdog.c, the lingerer's to lingerer.c.  (The lock objects' calls are
 * in object.h, which resets its own state in a child: dl_proc_on_fork.)
 */
#ifndef DL_PROCESS_H
#define DL_PROCESS_H

#include <pthread.h>
#include <hiredis/hiredis.h>

#include "channel.h"
#include "config.h"
#include "conn.h"
#include "objtab.h"
#include "registry.h"

/* The metrics file's state (metrics.c). */
typedef struct dl_metrics dl_metrics_t;

/* A lingering hold the lingerer watches, and when its linger ends (us). */
typedef struct dl_linger {
    dl_core_t *o;
    uint64_t until;
} dl_linger_t;

typedef struct dl_proc {
    dl_config_t cfg;
    char token[40];           /* uuid: this process's owner id in Redis */
    char channel[300];        /* <prefix>n:<token>: where grants are pushed */
    size_t channel_len;
    char chanprefix[270];     /* <prefix>n: */
    size_t chanprefix_len;
    dl_chans_t *chans;        /* the channels of pushes: classic, or on a
                                 cluster one per slot (channel.h) */
    char host[128];
    pid_t pid;
    dl_conn_t *conn;
    dl_registry_t reg;
    dl_objtab_t objs;         /* the objects resolved here (object.c) */
    unsigned long regseq;     /* registration ids (atomic) */

    /* notify.c */
    pthread_mutex_t nmu;
    pthread_cond_t ncv;
    int nstarted, nsubscribed;
    uint64_t nfail_since;
    char nerr[200];
    redisContext *sub;
    struct dl_shardsub *shards;   /* a cluster's: a connection per node */
    unsigned *nslot_objs;     /* a cluster's: objects per slot (registry
                                 mutex; the registry's made/gone hooks) */

    /* watchdog.c */
    pthread_mutex_t wmu;
    pthread_cond_t wcv;
    int wstarted;
    uint64_t wnext;           /* when the watchdog must look next (monotonic us:
                                 a renew_due or a lingering hold), or DL_FOREVER */
    void *wbuf[2];            /* the watchdog's buffers, owned by its thread */
    int wall;                 /* a sign of lost state (trust.h): renew every
                                 hold at once, not at the next tick */
    uint64_t wall_at;         /* when such a pass was last asked for (ms) */

    /* lingerer.c: the lingering holds it ends on time (pinned) */
    pthread_mutex_t lmu;
    pthread_cond_t lcv;
    int lstarted;
    dl_linger_t *lv;
    size_t ln, lcap;
    uint64_t lnext;           /* when it wakes next (us; DL_FOREVER: not until
                                 told), 0 while it ends holds */

    /* metrics.c: NULL unless DISTLOCK_METRICS_FILE is set */
    dl_metrics_t *metrics;
} dl_proc_t;

/* The state, created on first use; NULL with EINVAL (bad configuration,
 * dist_lasterror names the variable) or ENOMEM in *err.  Never blocks on
 * the network. */
dl_proc_t *dl_proc_get(int *err);
/* The same, for a caller that only needs the state to exist now (the
 * interposer, before main: the configuration checked, the log level set,
 * the fork handlers registered ahead of the program's).  0, or EINVAL /
 * ENOMEM with dist_lasterror set. */
int dl_proc_start(void);

/* A function run in a forked child as the library's state is reset there
 * (by the library's handler, before any the program registered), for a
 * file above the core whose state a thread of the parent may have held
 * (api/object.c's mutex): the core calls up only through such hooks.
 * The hook is the caller's (static); registered from a constructor, at
 * load time, on one thread; run in the order registered. */
typedef struct dl_fork_hook {
    void (*fn)(void);
    struct dl_fork_hook *next;    /* process.c's */
} dl_fork_hook_t;
void dl_proc_on_fork(dl_fork_hook_t *h);

/* The process p calling a script on its object o: o's keys, p's channel
 * prefix and token (calls.h). */
dl_caller_t dl_caller(const dl_proc_t *p, const dl_core_t *o);

/* Holder info "host\tpid\ttid" for this thread; returns its length. */
size_t dl_proc_info(const dl_proc_t *p, char *buf, size_t size);

/* (The library's threads start with dl_thread_start: clock.h.) */

#endif
