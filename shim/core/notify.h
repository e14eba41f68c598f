/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * notify.h - the process's one subscriber connection (notify.c) and its
 * thread, which hears grants and waiting processes pushed by Redis and
 * tells the objects (dl_take_granted, dl_take_recheck: take.h;
 * dl_hold_waited_on: hold.h).  It writes no object's state itself; its
 * own state is the dl_proc_t's n* fields (and on a cluster, the
 * connections per node of conn/shardsub.c).
 */
#ifndef DL_NOTIFY_H
#define DL_NOTIFY_H

#include "process.h"

/* Starts the subscriber if needed and waits until the channel of this
 * process that o's pushes come on is subscribed (a waiter should be
 * listening before it registers; on a cluster, o's slot's channel), at
 * most until `until` (monotonic ms) or the I/O timeout.  0 when
 * subscribed; EIO when the subscriber failed to reach Redis; EAGAIN when
 * it is still connecting (a waiter may then go on and find its grant by
 * asking again: slower, never wrong; on a cluster, also when the node of
 * o's slot cannot be reached yet: the command path says whether the
 * cluster can).  Sets dist_lasterror on EIO. */
int dl_notify_ensure(dl_proc_t *p, const dl_core_t *o, uint64_t until);
/* At the process's creation: on a cluster (channels by slot), the
 * subscriber's connections per node and the registry's count of objects
 * per slot.  0 or ENOMEM. */
int dl_notify_init(dl_proc_t *p);
/* After fork, in the child: the subscriber's sockets closed, nothing
 * sent. */
void dl_notify_abandon(dl_proc_t *p);

#endif
