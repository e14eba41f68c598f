/* SPDX-License-Identifier: BSD-3-Clause */
/* call_acquire_all.h - lua/acquire_all.lua: take several locks in write
 * mode at once, all or none, when all are free with nobody queued
 * (call_acquire_all.c; shim/prim/lockall.c uses it). */
#ifndef DL_CALL_ACQUIRE_ALL_H
#define DL_CALL_ACQUIRE_ALL_H

#include "caller.h"

struct redisReply;

/* One lock of a lock-all, as the caller gives it. */
typedef struct dl_all_lock {
    const char *const *keys;      /* its six keys (keys.h); keys[0] its main key; */
    const size_t *keylen;
    unsigned long lease_ms;
    const char *main;             /* or NULL and its main key alone, the others */
    size_t mainlen;               /* derived (caller.h) */
} dl_all_lock_t;

/* What the script says of one lock it took. */
typedef struct dl_all_item {
    uint64_t fence;
    int dead;                     /* the last holder's lease ran out */
    int claimed;                  /* it was the caller's already (acquire.lua's "mine") */
    uint64_t was;                 /* claimed: its fence when found; 0 unknown */
} dl_all_item_t;

typedef struct dl_acquire_all_args {
    int n;                        /* locks, 1 or more (all in one cluster slot) */
    const dl_all_lock_t *locks;   /* the caller's, in order; the call's caller
                                     (dl_caller_t) is locks[0]'s */
    const char *list;             /* the locks as the script reads them: written by
                                     dl_acquire_all_list, the caller's */
    size_t listlen;
    const char *info;             /* holder info, "host\tpid\ttid" */
    size_t infolen;
    uint64_t regid;               /* the registration id of every lock's request */
    int redlock;                  /* clear the caller's writer marks: set on each
                                     server's copy (redlock) */
    const char *olders;           /* redlock: each lock's dl_hold_rare_t.told_older, in
                                     order, "F1,F2,..." (0 none; the caller's), or
                                     NULL when every one is 0 */
    size_t olderslen;
    dl_all_item_t *out;           /* the caller's n items, filled when every lock was
                                     taken; NULL on a redlock server's copy, which
                                     keeps its reply for the merge instead */
} dl_acquire_all_args_t;

typedef struct dl_acquire_all_reply {
    int got;                      /* 1 every lock taken (out[] says how), 0 busy
                                     (nothing taken), 2 not here (redis-cluster://
                                     under ASK: take them one by one), -1 unexpected */
    int busy;                     /* busy: the index of a lock found busy */
    long long pttl_ms;            /* busy: until that lock's holders' leases run out */
    uint64_t mark;                /* 3 (busy names the lock): it is unrecoverable,
                                     with this mark (recover.lua) */
    unsigned servers;             /* taken, redlock: the servers (bit i: server i)
                                     that may have the holds; 0 elsewhere */
    struct redisReply *kept;      /* a redlock server's copy: its reply (the merge
                                     reads it; dl_call_free_reply frees it) */
} dl_acquire_all_reply_t;

/* Its types as DL_ARGS and DL_REPLY name them (caller.h). */
typedef dl_acquire_all_args_t dl_call_args_acquire_all;
typedef dl_acquire_all_reply_t dl_call_reply_acquire_all;

void dl_call_acquire_all(dl_call_t *c, const dl_caller_t *who, const dl_acquire_all_args_t *a);

/* The bytes the list of locks[0..n) (ARGV[6] of the script) needs at
 * most; the list written into buf (that many bytes), and its length. */
size_t dl_acquire_all_list_size(const dl_all_lock_t *locks, int n);
size_t dl_acquire_all_list(const dl_all_lock_t *locks, int n, char *buf);

#endif
