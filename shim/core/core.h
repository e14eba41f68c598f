/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * core.h - the hold core: what every object of the process that holds or
 * waits in Redis has, whatever its kind (a lock today; a condition or a
 * semaphore next), and what each kind tells the core of itself.
 *
 * An object of the process is a kind's own state (a primitive: prim/)
 * that begins with a dl_core_t: the registry's entry (its kind, name and
 * keys, its mutex and condition variable), its Redis hold (mode, fence,
 * lease, renewal, linger, the undo of failed requests), what the process
 * knows of that hold's life (validity and trust), the watchdog's schedule
 * for it, and a thread's registration in Redis's queue.  The core's files
 * take and keep the hold, renew it, wait for grants pushed by Redis and
 * release it; each primitive decides, under its own rules (its local
 * admission), which of its threads uses the hold and when the process
 * asks Redis for it, and calls the core for that.
 *
 * One writer per group of fields: each group below names the one file
 * that writes it; every other file only reads it (under mu, but for the
 * registry's own fields and the atomic rtt_us) and changes it by calling a
 * function of that file.  A primitive's own fields follow the dl_core_t
 * in its state, with their writers named there (prim/lock.h).
 *
 * Lock order: the registry mutex before an object's mu; an object's mu
 * before a connection's.  No thread holds mu across a round trip: the one
 * thread talking to Redis for an object holds hold.busy instead, and the
 * others wait on cv.
 */
#ifndef DL_CORE_H
#define DL_CORE_H

#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "dl.h"
#include "keys.h"
#include "script.h"
#include "tally.h"

typedef struct dl_core dl_core_t;

/* The scripts that carry out a kind's hold: each builds the call for one
 * step of the hold's life, with the step's typed arguments and reply
 * (script/call_<name>.h, which the files that build or read such a call
 * include; here only their names).  The lock's are acquire.lua,
 * release.lua ... (prim/lock.c); a kind with other scripts gives its own
 * builders, whose calls take the same arguments and give the same
 * replies. */
struct dl_acquire_args;
struct dl_cancel_args;
struct dl_withdraw_args;
struct dl_renew_args;
struct dl_touch_args;
struct dl_release_args;
struct dl_mark_args;
struct dl_acquire_all_args;
struct dl_withdraw_all_args;
struct dl_renew_many_args;
typedef struct dl_hold_calls {
    void (*acquire)(dl_call_t *c, const dl_caller_t *who, const struct dl_acquire_args *a);
    void (*cancel)(dl_call_t *c, const dl_caller_t *who, const struct dl_cancel_args *a);
    void (*withdraw)(dl_call_t *c, const dl_caller_t *who, const struct dl_withdraw_args *a);
    void (*renew)(dl_call_t *c, const dl_caller_t *who, const struct dl_renew_args *a);
    void (*touch)(dl_call_t *c, const dl_caller_t *who, const struct dl_touch_args *a);
    void (*release)(dl_call_t *c, const dl_caller_t *who, const struct dl_release_args *a);
    void (*mark)(dl_call_t *c, const dl_caller_t *who, const struct dl_mark_args *a);
    /* Several holds at once, all or none (take_all.c), and the undo of
     * such a request, sent behind it on its connection should the link
     * give up on it (what that request took, nothing else); NULL both: a
     * kind whose objects are taken one at a time only. */
    void (*acquire_all)(dl_call_t *c, const dl_caller_t *who, const struct dl_acquire_all_args *a);
    void (*withdraw_all)(dl_call_t *c, const dl_caller_t *who,
                         const struct dl_withdraw_all_args *a);
    /* Many holds renewed in one call, each one's outcome said as renew's
     * would be (the watchdog's batches: renew_many.lua for a lock, whose
     * holds it names by their main keys); NULL: the watchdog renews each
     * hold of the kind alone, with renew. */
    void (*renew_many)(dl_call_t *c, const dl_caller_t *who, const struct dl_renew_many_args *a);
} dl_hold_calls_t;

/* A kind of object: what the registry and the hold core need to know of
 * a primitive.  One constant per kind, defined by its primitive. */
typedef struct dl_kind {
    int id;                   /* DL_KIND_* (keys.h): its keys and its names */
    size_t size;              /* of the primitive's state, which starts with
                                 its dl_core_t */
    int keeps_rare;           /* its objects keep o->hold.rare from creation
                                 (a semaphore: any of its calls may leave an
                                 undo, and it has no reserve to fail in) */
    int queue;                /* its threads waiting to be admitted locally
                                 wait apart, on o->cv[1] (dl_core_queue_wait),
                                 where they may be woken one at a time
                                 (dl_core_queue_wake_one: a lock's unlock) */
    const dl_hold_calls_t *calls;
    /* Frees what the primitive's own fields own (the state itself is the
     * registry's); NULL: nothing. */
    void (*fini)(dl_core_t *o);
    /* mu held; never block.  Does a thread of the process use the hold
     * now (held: a lingering hold is then not ended), wait for it locally
     * (waiting: the watchdog keeps the hold confirmed meanwhile), or hold,
     * wait for or use the object in any way (in_use: its last object may
     * not be destroyed)? */
    int (*held)(const dl_core_t *o);
    int (*waiting)(const dl_core_t *o);
    int (*in_use)(const dl_core_t *o);
    /* For a kind whose waiters Redis wakes by push rather than by a grant
     * (a condition's signal: "k REGID KEY", notify.c); NULL for none.  mu
     * held; never block.  woken: registration regid of the process was
     * taken and woken; recheck: pushes may have been lost (the subscriber
     * reconnected), every waiter asks Redis again. */
    void (*woken)(dl_core_t *o, uint64_t regid);
    void (*recheck)(dl_core_t *o);
} dl_kind_t;

/* hold.c: what a hold keeps only while it needs it (o->hold.rare): the
 * undo of requests that failed, the fence of a release that failed, the
 * cut of its TTL by a linger.  An idle hold needs none of it, and a
 * process may hold a million: made on demand, freed once empty (hold.c).
 * Room is made before anything that may need it is sent (a talker's
 * dl_hold_reserve: a failed request's undo is written on its failure
 * path, which must not fail for want of memory), and kept while a talker
 * may still write in it (pins).  tenure.c writes the cut; hold.c the
 * rest. */
typedef struct dl_hold_rare {
    uint64_t undo[2];         /* [0] write, [1] read: 0, or the registration id of
                                 the latest request in that mode that failed but
                                 may have run in Redis (EIO after sending): the
                                 watchdog withdraws it and every earlier one
                                 (withdraw.lua), whatever the process holds or
                                 asks for since (only later requests) */
    uint64_t undo_inc[2];     /* the incarnation of the object in Redis each was
                                 sent to (a semaphore's; 0 none known, locks) */
    uint64_t undo_at;         /* not before this (monotonic ms): the next look
                                 must come after the request may have run */
    uint64_t told_fence;      /* a hold told EOWNERDEAD whose release failed
                                 (EIO): it may still be in Redis, and a claim
                                 of it is not told EOWNERDEAD again */
    uint64_t told_older;      /* redlock: the fence (its quorum's largest) of the
                                 last hold of the object whose EOWNERDEAD the
                                 process was told, released since: a death trace
                                 older than it was told (its release may still
                                 be owed to a server that keeps one), and the
                                 process's next acquisitions say so (acquire.lua
                                 ARGV[12], acquire_all.lua ARGV[7]); 0 none.
                                 Kept with the record (a death told is rare) */
    uint64_t cut_until;       /* tenure.c: the validity the last TTL cut left
                                 (ms): a renewal sent before a cut confirms no
                                 more than that */
    unsigned cut_ttl;         /* tenure.c: nonzero: a linger cut this hold's TTL
                                 to it (ms); renewals then confirm no more than
                                 that from their sending (dl_tenure_ttl) */
    unsigned pins;            /* talkers that may write an undo here now
                                 (dl_hold_reserve), + 1 for good for a kind that
                                 always keeps it (dl_kind_t.keeps_rare) */
    uint64_t unrec;           /* a lock's (prim/lock.c, through dl_hold_set_unrec):
                                 the mark of the last ENOTRECOVERABLE a lock call
                                 of the process was told (0: none, or recovered
                                 since), what dl_lock_recover clears
                                 (lua/recover.lua) */
    unsigned char ttl_cut;    /* a linger cut the hold's Redis TTL to a claim
                                 window (mark.c); the next renewal restores it */
    unsigned char undoing;    /* the watchdog is withdrawing one now (pinned) */
    signed char undo_checks[2]; /* withdrawals left to try that may find nothing */
} dl_hold_rare_t;

/* hold.c: the process's Redis hold, and its one talker.  (Its flags are
 * bytes and its words come first: a process may hold a million holds.) */
typedef struct dl_hold {
    uint64_t fence;
    uint64_t rid;             /* the registration id it was taken or claimed with */
    unsigned long seq;        /* bumped at each Redis acquisition and release */
    uint64_t waited_since;    /* when remote_waiting was set (monotonic us) */
    uint64_t linger_until;    /* nonzero: the hold outlives the last local unlock
                                 for a relock; the lingerer ends it then (us) */
    dl_hold_rare_t *rare;     /* NULL, or what it keeps while it needs it */
    uint32_t lease_ms;        /* of the Redis hold (at most DL_LEASE_MAX, 30 days:
                                 32 bits, 4 bytes less a lock) */
    uint32_t rtt_us;          /* this object's round trips, smoothed (atomic:
                                 dl_hold_rtt; what makes a hold short); at most
                                 UINT32_MAX (71 minutes) */
    unsigned servers;         /* redlock: the servers that may have it (0: any) */
    unsigned handoffs;        /* local handoffs since remote_waiting was set */
    char rmode;               /* 0, or the mode held ('w', 'r') */
    unsigned char busy;       /* a thread is talking to Redis for this object
                                 (dl_hold_reserve, a release, a confirmation) */
    unsigned char renew;      /* the watchdog renews it (default lease) */
    unsigned char fair;       /* taken by a fair request */
    unsigned char lost;       /* Redis no longer has it (a renewal, or an
                                 unlock's check, said so: dl_hold_lapsed) */
    unsigned char lost_told;  /* that loss was counted and told to the program
                                 (loss.c): once per hold */
    unsigned char remote_waiting; /* another process queues for it
                                 (dl_hold_waited_on) */
    unsigned char od_told;    /* the hold was taken after a lapse (Redis keeps
                                 saying so at each claim) and its taker told */
} dl_hold_t;

/* tenure.c: how long the hold may serve without asking Redis.  (The TTL
 * cut by a linger is in o->hold.rare, its count in dl_core_t.cuts.) */
typedef struct dl_tenure {
    uint64_t valid_until;     /* the hold surely still exists in Redis before this
                                 (monotonic ms): when the acquire or renewal that
                                 confirmed it was sent + the TTL it set - a drift
                                 margin.  Past it, no local reuse */
    unsigned long trust_epoch; /* the trust epoch (trust.h) in which the call
                                 that last confirmed the hold was sent: a sign of
                                 lost state since ends the trust (dl_tenure_trusted) */
    uint64_t confirmed_ms;    /* when that call was sent (monotonic ms): the hold
                                 serves other threads only while this is recent */
} dl_tenure_t;

/* take.c: a thread waiting in Redis's queue for a grant (the subscriber
 * tells it: dl_take_granted, dl_take_recheck).  On the waiting thread's
 * stack, o->wait pointing at it while it waits: a held lock has none. */
typedef struct dl_waiter {
    uint64_t regid;           /* its registration id, 0 none */
    uint64_t grant_fence;
    unsigned char granted;
    unsigned char grant_dead, grant_more;
    unsigned char recheck;    /* wake-ups may have been lost: ask Redis again */
} dl_waiter_t;

struct dl_core {
    /* registry.c: the table and the references (registry mutex), and what
     * is fixed at creation. */
    struct dl_core *next;     /* hash chain */
    unsigned refs;            /* objects and pins using it (dl_registry_pin;
                                 atomic, changed to 0 under the registry mutex) */
    unsigned objs;            /* of which objects */
    const dl_kind_t *kind;
    /* Its main key (keys.h: keys[0] of its kind) is stored right after
     * the state (dl_core_key: not a pointer of its own, 8 bytes a lock
     * in a process that may hold a million); the name is in it
     * (dl_core_name: not NUL-ended).  By the key pushes name it; a call
     * derives the others from it (caller.h).  Names are at most
     * DIST_NAME_MAX bytes and prefixes 255: both lengths fit 16 bits. */
    uint16_t namelen;
    uint16_t keylen;
    uint16_t allkeys_at;      /* 0; or, for a name too long for a call to derive
                                 its keys (DL_CALL_KEYBUF), where every key is,
                                 and their lengths after them, in the same
                                 allocation (its offset from o: dl_core_allkeys,
                                 dl_core_allkeylens) */
    uint16_t tally_at;        /* 0; or where its counters are, in the same
                                 allocation (dl_core_tally), made with the
                                 object only while the process writes a
                                 metrics file.  Counted by anyone through
                                 tally.h (atomics); reported by metrics.c */
    pthread_mutex_t mu;       /* everything below, and the primitive's fields */
    pthread_cond_t *cv;       /* CLOCK_MONOTONIC; cv[0]: local waiters and
                                 grants; cv[1], for a kind with a queue
                                 (kind->queue): its waiters for local
                                 admission.  Made by the first wait
                                 (dl_core_wait), under mu: most objects are
                                 never waited on, and a process may hold a
                                 million (48 bytes each) */

    dl_hold_t hold;           /* hold.c */
    dl_tenure_t tenure;       /* tenure.c */
    uint64_t renew_due;       /* watchdog.c: renew before this (monotonic ms),
                                 0: at the tick (dl_watchdog_due, _undue) */
    unsigned wlook;           /* watchdog.c, under the process's wmu: where
                                 the watchdog's schedule of early looks has
                                 this object (its index + 1), 0: nowhere */
    unsigned cuts;            /* tenure.c: TTL cuts by lingers, bumped by each
                                 (here, beside wlook: no hole) */
    dl_waiter_t *wait;        /* take.c: the thread waiting in Redis's queue
                                 for it (its registration), NULL: none */
};

/* o's main key (keylen bytes, NUL-ended): right after its kind's state
 * (registry.c). */
static inline const char *dl_core_key(const dl_core_t *o)
{
    return (const char *)o + o->kind->size;
}

/* o's name (namelen bytes, not NUL-ended): the bytes before the last one
 * ('}') of its main key, PREFIX{HEAD NAME} (keys.h; registry.c). */
static inline const char *dl_core_name(const dl_core_t *o)
{
    return dl_core_key(o) + o->keylen - 1 - o->namelen;
}

/* What o->hold.rare holds, read (0 without it). */
static inline uint64_t dl_hold_told_fence(const dl_core_t *o)
{
    return o->hold.rare ? o->hold.rare->told_fence : 0;
}
static inline uint64_t dl_hold_told_older(const dl_core_t *o)
{
    return o->hold.rare ? o->hold.rare->told_older : 0;
}
static inline uint64_t dl_hold_unrec(const dl_core_t *o)
{
    return o->hold.rare ? o->hold.rare->unrec : 0;
}
static inline int dl_hold_ttl_cut(const dl_core_t *o)
{
    return o->hold.rare && o->hold.rare->ttl_cut;
}
static inline unsigned dl_tenure_cut_ttl(const dl_core_t *o)
{
    return o->hold.rare ? o->hold.rare->cut_ttl : 0;
}

/* Every key of o, for a name too long for a call to derive them; else
 * NULL. */
static inline const char *const *dl_core_allkeys(const dl_core_t *o)
{
    return o->allkeys_at ? (const char *const *)((const char *)o + o->allkeys_at) : NULL;
}

/* o's counters (tally.h), NULL when the process writes no metrics file. */
static inline dl_tally_t *dl_core_tally(const dl_core_t *o)
{
    return o->tally_at ? (dl_tally_t *)((char *)o + o->tally_at) : NULL;
}

/* Their lengths (NULL with them). */
static inline size_t *dl_core_allkeylens(const dl_core_t *o)
{
    return o->allkeys_at ? (size_t *)((char *)o + o->allkeys_at +
                                      (size_t)dl_kind_keys(o->kind->id)->n * sizeof(char *))
                         : NULL;
}

/* The word for o's kind in messages ("lock"). */
static inline const char *dl_core_what(const dl_core_t *o)
{
    return dl_kind_keys(o->kind->id)->what;
}

/* o's name, quoted for messages (dl_quote). */
static inline const char *dl_core_qname(const dl_core_t *o, char *buf, size_t size)
{
    return dl_quote(dl_core_name(o), o->namelen, buf, size);
}

/* o's condition variables, on CLOCK_MONOTONIC (registry.c): one, or two
 * for a kind with a queue; NULL: no memory. */
pthread_cond_t *dl_core_cv_new(const dl_kind_t *kind);

/* Waits on o->cv[q] (o->mu held) until woken or deadline (monotonic ms).
 * Its callers wait in loops on what they wait for: without memory for the
 * cv it returns after a millisecond, as a spurious wake-up. */
static inline void dl_core_wait_on(dl_core_t *o, int q, uint64_t deadline)
{
    if (!o->cv && !(o->cv = dl_core_cv_new(o->kind))) {
        pthread_mutex_unlock(&o->mu);
        struct timespec ms = { 0, 1000000 };
        nanosleep(&ms, NULL);
        pthread_mutex_lock(&o->mu);
        return;
    }
    struct timespec ts;
    dl_timespec_at(deadline, &ts);
    pthread_cond_timedwait(&o->cv[q], &o->mu, &ts);
}

/* Waits on o (o->mu held) until woken or deadline: for anything but local
 * admission. */
static inline void dl_core_wait(dl_core_t *o, uint64_t deadline)
{
    dl_core_wait_on(o, 0, deadline);
}

/* A thread of a kind with a queue waits to be admitted locally (o->mu
 * held): woken by dl_core_wake as every waiter is, or alone by
 * dl_core_queue_wake_one. */
static inline void dl_core_queue_wait(dl_core_t *o, uint64_t deadline)
{
    dl_core_wait_on(o, 1, deadline);
}

/* Wakes every thread waiting on o (o->mu held), its queue's too: none
 * while o has no cv. */
static inline void dl_core_wake(dl_core_t *o)
{
    if (o->cv) {
        pthread_cond_broadcast(&o->cv[0]);
        if (o->kind->queue)
            pthread_cond_broadcast(&o->cv[1]);
    }
}

/* Wakes one thread waiting in o's queue (o->mu held), if one waits there. */
static inline void dl_core_queue_wake_one(dl_core_t *o)
{
    if (o->cv)
        pthread_cond_signal(&o->cv[1]);
}

/* Whether a thread of the process holds o, waits for it or talks to Redis
 * for it (o->mu held): then its last object may not be destroyed.  (A
 * withdrawal by the watchdog holds a reference of its own: it is no use
 * by the process's threads.) */
static inline int dl_core_in_use(const dl_core_t *o)
{
    return o->hold.busy || (o->wait && o->wait->regid) || o->kind->in_use(o);
}

#endif
