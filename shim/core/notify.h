/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * notify.h - the process's one subscriber connection (notify.c) and its
 * thread, which hears grants and waiting processes pushed by Redis and
 * tells the objects (dl_take_granted, dl_take_recheck: take.h;
 * dl_hold_waited_on: hold.h).  It writes no object's state itself; its
 * own state is the dl_proc_t's n* fields.
 */
#ifndef DL_NOTIFY_H
#define DL_NOTIFY_H

#include "process.h"

/* Starts the subscriber if needed and waits until this process's grant
 * channel is subscribed (a waiter should be listening before it
 * registers), at most until `until` (monotonic ms) or the I/O timeout.  0
 * when subscribed; EIO when the subscriber failed to reach Redis; EAGAIN
 * when it is still connecting (a waiter may then go on and find its grant
 * by asking again: slower, never wrong).  Sets dist_lasterror on EIO. */
int dl_notify_ensure(dl_proc_t *p, uint64_t until);

#endif
