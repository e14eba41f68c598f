/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * quorum.h - redlock://: the calls of calls.h on N independent masters,
 * a majority deciding.  quorum.c owns nothing between calls: each run
 * copies the calls per server, and merges the servers' typed replies into
 * the caller's calls.
 */
#ifndef DL_QUORUM_H
#define DL_QUORUM_H

#include "calls.h"
#include "conn.h"

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

#endif
