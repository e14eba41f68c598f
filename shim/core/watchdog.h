/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * watchdog.h - the process's renewing thread (watchdog.c): renews held
 * holds, withdraws failed acquisitions.  Of an object's state it writes
 * only its schedule (o->renew_due); what its round trips find it tells the
 * hold (hold.h: dl_hold_renewed, dl_hold_gone, dl_hold_undo_*).  Its own
 * state is the dl_proc_t's w* fields.
 */
#ifndef DL_WATCHDOG_H
#define DL_WATCHDOG_H

#include "process.h"

/* At the process's creation, before any object: the registry tells the
 * watchdog of each object it frees. */
void dl_watchdog_init(dl_proc_t *p);
/* Starts the renewing thread if needed.  Never blocks. */
void dl_watchdog_ensure(dl_proc_t *p);
/* Asks for o's hold to be renewed by `due` (monotonic ms), before the next
 * regular tick.  o->mu held.  Never blocks. */
void dl_watchdog_due(dl_proc_t *p, dl_core_t *o, uint64_t due);
/* o's hold ended: no early renewal is due for it.  o->mu held. */
void dl_watchdog_undue(dl_core_t *o);

/* A sign of lost state (trust.h): renews every renewable hold now, so that
 * those Redis lost are found at once (and their threads told), and those it
 * kept are trusted again without a round trip of their threads' own.  Never
 * blocks; nothing if the watchdog has not started (no hold was renewable). */
void dl_watchdog_confirm_all(dl_proc_t *p);

#endif
