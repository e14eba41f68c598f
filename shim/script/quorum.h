/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * quorum.h - redlock://: the calls of calls.h on N independent masters,
 * a majority deciding.  quorum.c owns nothing between calls: each run
 * copies the calls per server, counts what the servers said (dl_tally_t)
 * and has each script's entry (its dl_quorum_op_t, call_<name>.c) merge
 * the servers' typed replies into the caller's call, and say what a
 * server that failed is still owed.
 */
#ifndef DL_QUORUM_H
#define DL_QUORUM_H

#include "calls.h"
#include "conn.h"

/* What the servers said to one call. */
typedef struct dl_tally {
    dl_conn_t *conn;
    uint64_t elapsed;                        /* ms the run took, all servers */
    const dl_call_t *at[DL_MAX_ENDPOINTS];   /* each server's copy of the call */
    char granted[DL_MAX_ENDPOINTS];          /* said yes */
    char unanswered[DL_MAX_ENDPOINTS];       /* no reply, but it was sent: it may
                                                have run, or may yet */
    char failed[DL_MAX_ENDPOINTS];           /* no reply (sent or not) */
    int nodes, need, answered, yes, firstyes, firstno;
    const char *why;                         /* an error, when one failed */
} dl_tally_t;

/* How one script's replies on several servers make the reply one server
 * would give (a script's entry, calls.h).  All but said_yes and merge may
 * be NULL. */
typedef struct dl_quorum_op {
    /* Each server's copy of the call, before it runs. */
    void (*prepare)(dl_call_t *c);
    /* A call run alone: what undoes c should a server's link give up on it
     * after sending it (dl_cmd_t's undo), one per server. */
    void (*undo_for)(dl_call_t *undo, const dl_call_t *c);
    /* Did one server's reply say yes (the call did there what it asked)? */
    int (*said_yes)(const dl_call_t *c);
    /* Any one server's answer will do, not a majority's (break). */
    int any_one;
    /* After the count, whatever the outcome: what the servers that failed
     * are still owed (dl_quorum_owe). */
    void (*owe)(const dl_call_t *c, const dl_tally_t *t);
    /* Enough servers answered: c's reply from theirs (t->need said yes
     * or not).  What a server's reply owns (dl_call_free_reply) is freed
     * after the merge: a merge copies what it keeps. */
    void (*merge)(dl_call_t *c, const dl_tally_t *t);
    /* Too few answered (c fails): what it may have left is undone. */
    void (*undo)(const dl_call_t *c, const dl_tally_t *t);
    /* Enough answered, too few said yes, and the servers that did not
     * answer could make up the majority (dl_quorum_undecided): c's outcome
     * instead of merge's, as dl_script_run's (0, or EIO with c failed).
     * NULL: merge decides (no for it). */
    int (*undecided)(dl_call_t *c, const dl_tally_t *t);
    /* The call must reach every server, even one skipped for a recent
     * failure (a release that clears a lapse's trace).  NULL: a majority's
     * answer will do. */
    int (*needs_all)(const dl_call_t *c);
} dl_quorum_op_t;

/* Runs each call on every server and merges the typed replies into the one
 * a single server would give: an acquisition counts when a majority
 * granted it within the lease's validity (else it is undone and reported
 * busy, or EIO when no majority answered), and is undone on every server
 * that did not count towards it; a release or renewal reports the hold
 * held when a majority still had it.  What a release or withdrawal could
 * not do on a server that failed is sent there in the background
 * (dl_conn_defer) until it lands; the call does not wait for it.  As
 * dl_script_run. */
int dl_quorum_run(dl_conn_t *conn, dl_call_t *calls, int n);

/* --- for the entries --- */

/* Whether a majority has what the call asked is unknown, not "no": too few
 * said yes, but the servers that did not answer could make it up (a
 * server stalled, cut, or skipped for a failure a moment ago may well keep
 * a hold granted by a bare majority). */
int dl_quorum_undecided(const dl_tally_t *t);
/* c fails with EIO and a message from the tally (fmt: %d got, %d nodes,
 * %d need, %s why). */
int dl_quorum_fail(dl_call_t *c, const char *fmt, int got, const dl_tally_t *t);

/* The reply of the first server that said yes when a majority did, else
 * of the first that said no. */
void dl_quorum_pick(dl_call_t *c, const dl_tally_t *t);
/* Runs calls[i] (one call per server) on every server i with want[i], all
 * at once; each ends as dl_script_run's do. */
void dl_quorum_on(dl_conn_t *conn, dl_call_t *calls, int nodes, const char *want);
/* How long a server that failed may still keep what it was sent: `leases`
 * leases of lease_ms (0: the configured lease) from now, plus the I/O
 * time-out for a command still on its way (monotonic ms). */
uint64_t dl_quorum_owed_until(dl_conn_t *conn, unsigned long lease_ms, int leases);
/* Sends call to server `node` in the background until it answers `looks`
 * times or until `until` (dl_conn_defer), with the script's text: a
 * server that failed may come back without its script cache. */
void dl_quorum_owe(dl_conn_t *conn, int node, const dl_call_t *call, int looks, uint64_t until);
/* Owes each server that failed (t->failed), among those in `may` (bit i:
 * server i; 0: any), its own copy of the call: `looks` answers, for as
 * long as `looks` leases of lease_ms may keep what it was sent. */
void dl_quorum_owe_failed(const dl_tally_t *t, unsigned may, unsigned long lease_ms, int looks);

#endif
