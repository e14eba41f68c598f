/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * loss.h - telling the program of its lost holds (loss.c): the process's
 * one dist_onlost function, called from a thread of the library, the
 * teller, once for each hold the core found lapsed while the process held
 * it (hold.c: dl_hold_lapsed).
 *
 * The finder (the watchdog, a thread confirming, releasing or relocking
 * the hold) only queues the loss, under o->mu and without blocking; the
 * teller calls the function with no lock of the library held, so that a
 * slow function delays other reports of losses, never a renewal, a lock
 * call or an unlock.  Process-wide (like a signal disposition): a forked
 * child keeps the function, not the losses its parent had queued.
 */
#ifndef DL_LOSS_H
#define DL_LOSS_H

#include <stddef.h>
#include <stdint.h>

#include "distlock.h"

/* dist_onlost: registers fn (NULL: none); when it returns, no call of the
 * previous function is under way, unless the caller is that call.  0. */
int dl_loss_set(dist_lost_fn fn, void *arg);
/* The hold named `name` (namelen bytes) with this fence was found lapsed
 * while held: queued for the function, if one is registered (else
 * dropped).  Never blocks (the caller may hold an object's mu). */
void dl_loss_tell(const char *name, size_t namelen, uint64_t fence);
/* Whether the calling thread is the teller inside the function (a lock
 * call from there would block every later report: it is refused). */
int dl_loss_in_callback(void);
/* In a forked child: the parent's queue and teller are gone. */
void dl_loss_after_fork(void);

#endif
