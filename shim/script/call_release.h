/* SPDX-License-Identifier: BSD-3-Clause */
/* call_release.h - lua/release.lua: end the caller's hold, hand the lock
 * on (call_release.c). */
#ifndef DL_CALL_RELEASE_H
#define DL_CALL_RELEASE_H

#include "caller.h"

typedef struct dl_release_args {
    char mode;
    uint64_t fence;               /* names the hold */
    uint64_t rid;                 /* registration id it was taken with; 0: none */
    unsigned servers;             /* redlock: where it may be held (the acquisition's
                                     servers); 0 any */
    unsigned long lease_ms;       /* redlock: its lease, how long a server that failed
                                     may keep it (0: the default) */
    int redlock;                  /* where nothing is held, a death trace older than
                                     the hold goes too (ARGV[6] 'o'): set on each
                                     server's copy (redlock) */
    int told;                     /* redlock: the hold was taken with EOWNERDEAD, so
                                     its release must reach every server, to clear
                                     the lapse's trace where the quorum did not
                                     reach (quorum.c) */
    uint64_t unrecoverable;       /* robust, inconsistent (ARGV[7]): the lock is left
                                     unrecoverable, marked with this (the hold's
                                     fence as its holder knows it); 0: a release */
} dl_release_args_t;

typedef struct dl_release_reply {
    int result;                   /* 1 released, 0 held nothing, 2 released
                                     already (a resend, a late copy), -1 unexpected,
                                     DL_RELEASE_UNDECIDED (redlock) */
} dl_release_reply_t;

/* redlock: released where the answering servers had the hold, but those
 * were too few for a majority and the servers that did not answer (owed
 * the release) could make one up: the hold was the caller's as far as its
 * validity says (quorum.c). */
#define DL_RELEASE_UNDECIDED 3

/* Its types as DL_ARGS and DL_REPLY name them (caller.h). */
typedef dl_release_args_t dl_call_args_release;
typedef dl_release_reply_t dl_call_reply_release;

void dl_call_release(dl_call_t *c, const dl_caller_t *who, const dl_release_args_t *a);

#endif
