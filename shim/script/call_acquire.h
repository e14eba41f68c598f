/* SPDX-License-Identifier: BSD-3-Clause */
/* call_acquire.h - lua/acquire.lua: take the lock, or queue for it
 * (call_acquire.c). */
#ifndef DL_CALL_ACQUIRE_H
#define DL_CALL_ACQUIRE_H

#include "caller.h"

typedef struct dl_acquire_args {
    char mode;                    /* 'w' | 'r' */
    unsigned long lease_ms;
    const char *info;             /* holder info, "host\tpid\ttid" */
    size_t infolen;
    int enqueue;                  /* queue for it if busy */
    int redlock;                  /* sends writer_mark_ms (redlock:// only) */
    uint64_t regid;               /* registration id of this request */
    unsigned long waiter_ttl_ms;  /* how long the registration lives unrefreshed */
    unsigned long claim_ms;       /* first TTL of a hold pushed to this waiter */
    unsigned long writer_mark_ms; /* a waiting write's mark's TTL; 0: will not wait */
    uint64_t told;                /* the fence of a hold of the caller's whose
                                     EOWNERDEAD it was told and whose release
                                     failed (dl_hold_t.told_fence): claiming it,
                                     the request takes that death as told; 0 none */
    uint64_t older;               /* redlock: dl_hold_rare_t.told_older (a death trace
                                     older than it was told); 0 none */
} dl_acquire_args_t;

typedef struct dl_acquire_reply {
    int got;                      /* 1 acquired, 0 busy, 3 unrecoverable (refused),
                                     -1 an unexpected reply */
    uint64_t fence;               /* acquired: the hold's fence */
    int dead;                     /* acquired: the last holder's lease ran out */
    long long waiters;            /* acquired: > 0 others still queued */
    int claimed;                  /* acquired: granted earlier (a claim TTL) */
    uint64_t was;                 /* claimed: the hold's fence when found; 0 unknown */
    long long pttl_ms;            /* busy: until the holders' leases run out */
    uint64_t mark;                /* unrecoverable: its mark (recover.lua) */
    unsigned servers;             /* acquired, redlock: the servers (bit i: server i)
                                     that may have the hold (granted, or no reply);
                                     0 elsewhere */
} dl_acquire_reply_t;

/* Its types as DL_ARGS and DL_REPLY name them (caller.h). */
typedef dl_acquire_args_t dl_call_args_acquire;
typedef dl_acquire_reply_t dl_call_reply_acquire;

void dl_call_acquire(dl_call_t *c, const dl_caller_t *who, const dl_acquire_args_t *a);

#endif
