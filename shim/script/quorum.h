/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * quorum.h - redlock://: the calls of calls.h on N independent masters,
 * a majority deciding.  quorum.c owns nothing between calls: each run
 * copies the calls per server, counts what the servers said (dl_tally_t)
 * and has each script's entry (its dl_quorum_op_t, call_<name>.c) merge
 * the servers' typed replies into the caller's call.
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
    char granted[DL_MAX_ENDPOINTS];          /* may have run there: it said yes,
                                                or failed (a call with an undo) */
    int nodes, need, answered, yes, firstyes, firstno;
    const char *why;                         /* an error, when one failed */
} dl_tally_t;

/* How one script's replies on several servers make the reply one server
 * would give (a script's entry, calls.h). */
typedef struct dl_quorum_op {
    /* Each server's copy of the call, before it runs; NULL: as it is. */
    void (*prepare)(dl_call_t *c);
    /* Did one server's reply say yes (the call did there what it asked)? */
    int (*said_yes)(const dl_call_t *c);
    /* Any one server's answer will do, not a majority's (break). */
    int any_one;
    /* Enough servers answered: c's reply from theirs (t->need said yes
     * or not). */
    void (*merge)(dl_call_t *c, const dl_tally_t *t);
    /* What a call that may have run where it failed leaves behind is
     * undone on those servers (t->granted); NULL: nothing to undo.  Called
     * when too few answered (the call fails), and by merge as it sees fit. */
    void (*undo)(const dl_call_t *c, const dl_tally_t *t);
} dl_quorum_op_t;

/* Runs each call on every server and merges the typed replies into the one
 * a single server would give: an acquisition counts when a majority
 * granted it within the lease's validity (else it is undone everywhere and
 * reported busy, or EIO when no majority answered); a release or renewal
 * reports the hold held when a majority still had it.  As dl_script_run. */
int dl_quorum_run(dl_conn_t *conn, dl_call_t *calls, int n);

/* --- for the entries' merges --- */

/* The reply of the first server that said yes when a majority did, else
 * of the first that said no. */
void dl_quorum_pick(dl_call_t *c, const dl_tally_t *t);
/* Runs calls[i] (one call per server) on every server i with want[i], all
 * at once; each ends as dl_script_run's do. */
void dl_quorum_on(dl_conn_t *conn, dl_call_t *calls, int nodes, const char *want);

#endif
