/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * registry.h - the process's lock states, one per lock name: what Spring's
 * RedisLockRegistry keeps in its locks map.  Every object (dist_mutex_t,
 * dist_rwlock_t) naming the same lock shares one dl_lock_t, so two objects
 * of one name are one lock, and only one thread at a time talks to Redis
 * for it.
 *
 * registry.c owns the table and each lock's reference counts; which file
 * writes each of a lock's other fields is said at the field (dl_lock_t).
 *
 * Lock order: registry mutex before a lock's mu; a lock's mu before the
 * connection's.
 */
#ifndef DL_REGISTRY_H
#define DL_REGISTRY_H

#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>

#include "dl.h"
#include "script.h"

/* A run of holds of one mode in a thread's stack of holds on a lock. */
typedef struct dl_run {
    char mode;                /* 'w' or 'r' */
    unsigned count;
} dl_run_t;

/* One thread's holds on one lock, most recent last. */
typedef struct dl_holder {
    pid_t tid;
    unsigned wcount, rcount;
    dl_run_t *runs;
    int nruns, cap;
} dl_holder_t;

/* One lock of the process.  Its fields are grouped by the one file that
 * writes them; every other file only reads them (under mu, but for the
 * registry's own fields and rtt_us), and changes them by calling a
 * function of the group's file.  The lock module is lock.c (local
 * admission and handoff), take.c (taking the Redis hold), hold.c (the
 * Redis hold once taken), tenure.c (how long it may be used without
 * asking Redis) and holds.c (each thread's stack of holds). */
typedef struct dl_lock {
    /* registry.c: the table and the references (registry mutex), and what
     * is fixed at creation. */
    struct dl_lock *next;     /* hash chain */
    unsigned refs;            /* objects and pins using it (dl_registry_pin;
                                 atomic, changed to 0 under the registry mutex) */
    unsigned objs;            /* of which objects */
    char *name;
    size_t namelen;
    const char *keys[DL_NKEYS];
    size_t keylen[DL_NKEYS];
    pthread_mutex_t mu;       /* everything below */
    pthread_cond_t cv;        /* CLOCK_MONOTONIC; local waiters and grants */

    /* holds.c: each thread's stack of holds. */
    dl_holder_t *holders;
    int nholders, capholders;

    /* lock.c: local admission and handoff. */
    pid_t writer;             /* thread holding write locally, 0 none */
    int rthreads;             /* threads holding only read locally */
    int wwait, rwait;         /* threads waiting locally to write / read */
    pid_t last_writer;        /* the thread that took write last, and how many */
    unsigned streak;          /* times in a row (while others waited locally) */
    uint64_t unlock_us;       /* when the last unlock of a write hold returned, */
    pid_t unlock_tid;         /* and which thread's */
    int quick;                /* the writer locked again within DL_RELOCK_US of
                                 its own unlock (took_local) */
    uint64_t held_us;         /* when the writer's hold began (monotonic us) */

    /* hold.c: the process's Redis hold, and its one talker. */
    int busy;                 /* a thread is talking to Redis for this lock
                                 (dl_hold_reserve, a release, a confirmation) */
    char rmode;               /* 0, 'w' or 'r' */
    uint64_t fence;
    uint64_t hold_rid;        /* the registration id it was taken or claimed with */
    unsigned servers;         /* redlock: the servers that may have it (0: any) */
    unsigned long lease_ms;   /* of the Redis hold */
    int renew;                /* the watchdog renews it (default lease) */
    int fair;                 /* taken by a fair request */
    int lost;                 /* Redis no longer has it (a renewal, or an
                                 unlock's check, said so: dl_lock_gone) */
    unsigned long holdseq;    /* bumped at each Redis acquisition and release */
    int remote_waiting;       /* another process queues for the lock
                                 (dl_lock_waited_on) */
    uint64_t waited_since;    /* when remote_waiting was set (monotonic us) */
    unsigned handoffs;        /* local handoffs since remote_waiting was set */
    int ttl_cut;              /* a linger cut the hold's Redis TTL to a claim
                                 window (mark.c); the next renewal restores it */
    uint64_t linger_until;    /* nonzero: the hold outlives the last local unlock
                                 for a relock; the watchdog ends it then (us) */
    int od_told;              /* the hold was taken after a lapse (Redis keeps
                                 saying so at each claim) and its taker told */
    uint64_t told_fence;      /* such a hold whose release failed (EIO): it may
                                 still be in Redis, and a claim of it is not
                                 told EOWNERDEAD again */
    uint64_t rtt_us;          /* this lock's round trips, smoothed (atomic:
                                 dl_hold_rtt; lock.c: what makes a hold short) */
    uint64_t undo[2];         /* [0] write, [1] read: 0, or the registration id of
                                 the latest request in that mode that failed but
                                 may have run in Redis (EIO after sending): the
                                 watchdog withdraws it and every earlier one
                                 (withdraw.lua), whatever the process holds or
                                 asks for since (only later requests) */
    int undo_checks[2];       /* withdrawals left to try that may find nothing */
    uint64_t undo_at;         /* not before this (monotonic ms): the next look
                                 must come after the request may have run */
    int undoing;              /* the watchdog is withdrawing one now (pinned) */

    /* tenure.c: how long the hold may serve without asking Redis. */
    uint64_t valid_until;     /* the hold surely still exists in Redis before this
                                 (monotonic ms): when the acquire or renewal that
                                 confirmed it was sent + the TTL it set - a drift
                                 margin.  Past it, no local reuse (lock.c) */
    unsigned long cuts;       /* TTL cuts by lingers, bumped by each, and the */
    uint64_t cut_until;       /* validity the last one left (ms): a renewal sent
                                 before a cut confirms no more than that */
    unsigned long cut_ttl;    /* nonzero: a linger cut this hold's TTL to it (ms);
                                 renewals then confirm no more than that from
                                 their sending (dl_hold_ttl) */
    unsigned long trust_epoch; /* the trust epoch (trust.h) in which the call
                                 that last confirmed the hold was sent: a sign of
                                 lost state since ends the trust (dl_hold_trusted) */
    uint64_t confirmed_ms;    /* when that call was sent (monotonic ms): the hold
                                 serves other threads only while this is recent */

    /* watchdog.c: its schedule for this lock (dl_watchdog_due, _undue). */
    uint64_t renew_due;       /* renew before this (monotonic ms), 0: at the tick */

    /* take.c: a thread waiting in Redis's queue for a grant (notify.c tells
     * it: dl_lock_granted, dl_lock_recheck). */
    uint64_t regid;           /* its registration id, 0 none */
    int granted;
    uint64_t grant_fence;
    int grant_dead, grant_more;
    int recheck;              /* wake-ups may have been lost: ask Redis again */
} dl_lock_t;

/* l's name, quoted for messages (dl_quote). */
static inline const char *dl_lock_qname(const dl_lock_t *l, char *buf, size_t size)
{
    return dl_quote(l->name, l->namelen, buf, size);
}

/* Waits on l->cv (l->mu held) until signalled or deadline (monotonic ms). */
static inline void dl_lock_wait(dl_lock_t *l, uint64_t deadline)
{
    struct timespec ts;
    dl_timespec_at(deadline, &ts);
    pthread_cond_timedwait(&l->cv, &l->mu, &ts);
}

typedef struct dl_registry {
    pthread_mutex_t mu;
    dl_lock_t **buckets;
    size_t nbuckets, count;
} dl_registry_t;

void dl_registry_init(dl_registry_t *r);
/* The lock state of name (created if needed) with a reference taken; NULL
 * on ENOMEM.  Keys are built from prefix. */
dl_lock_t *dl_registry_get(dl_registry_t *r, const char *prefix, const char *name, size_t len);
/* Drops a reference (dl_registry_get's or dl_registry_pin's); the state is
 * freed with the last one. */
void dl_registry_put(dl_registry_t *r, dl_lock_t *l);
/* Takes a reference on l from within dl_registry_each's fn (the registry
 * mutex held), or for a caller that has a reference of its own (an object
 * in use; no registry mutex needed), so that l outlives it: a pin, dropped
 * with dl_registry_put once its holder is done with l. */
void dl_registry_pin(dl_lock_t *l);
/* An object of l was resolved (counted so destroy knows the last one). */
void dl_registry_add_obj(dl_registry_t *r, dl_lock_t *l);
/* An object of l is destroyed: EBUSY if it is the last object of a lock
 * that is held or waited on in this process; else drops its reference. */
int dl_registry_drop_obj(dl_registry_t *r, dl_lock_t *l);
/* Calls fn(l, arg) for each lock with its mu held and the registry mutex
 * held (so fn must not block; it may pin l). */
void dl_registry_each(dl_registry_t *r, void (*fn)(dl_lock_t *l, void *arg), void *arg);
/* Finds the lock whose main key is key, and returns it with mu held; NULL if
 * this process has no such lock. */
dl_lock_t *dl_registry_find_key(dl_registry_t *r, const char *prefix, const char *key, size_t len);

#endif
