/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * redlock.h - the backend of redlock://: a link per independent server.
 * The script layer asks them all at once (dl_conn_start_node, quorum.c),
 * and a quorum of them decides.  Each link fails fast, within a tenth of
 * the lease, and a server that failed is skipped for a while, so a dead
 * or slow minority never eats the hold's validity.  No common queue and
 * no posts (dl_caps_t).  What a quorum call still owes a server that
 * failed (a release, a withdrawal) the backend sends in the background
 * (dl_conn_defer, deferred.h).
 *
 * Owner: the backend's state is its links, one per configured server, in
 * the URL's order (node i is server i), and its set of owed commands.
 */
#ifndef DL_REDLOCK_H
#define DL_REDLOCK_H

#include "conn.h"

extern const dl_backend_t dl_backend_redlock;

#endif
