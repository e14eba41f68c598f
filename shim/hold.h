/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * hold.h - the process's Redis hold on a lock once taken (hold.c):
 * recording it, vouching for it at an unlock, releasing it, lingering
 * after the last unlock for a relock, and what the watchdog and the
 * subscriber learn of it.
 *
 * hold.c writes a lock's hold fields (busy, rmode ... undo: see dl_lock_t).
 * The watchdog and the subscriber change them only through the dl_lock_*
 * functions below; lock.c and take.c through the dl_hold_* ones.  All with
 * l->mu held unless said otherwise.
 */
#ifndef DL_HOLD_H
#define DL_HOLD_H

#include "lock.h"
#include "take.h"

/* How long a lingering hold waits for its relock (see lock.c, DL_RELOCK_US,
 * for when a hold lingers at all). */
#define DL_LINGER_US 100

/* --- lock.c and take.c's --- */

/* This thread talks to Redis for l: the other threads of the process wait
 * (l->busy) until dl_hold_unreserve. */
void dl_hold_reserve(dl_lock_t *l);
/* ... done (the caller broadcasts l->cv). */
void dl_hold_unreserve(dl_lock_t *l);
/* Records the hold rq took, as g says. */
void dl_hold_record(dl_proc_t *p, dl_lock_t *l, const dl_req_t *rq, const dl_grant_t *g);
/* A renewable hold was just recorded: the watchdog renews it; a claimed
 * one (a pushed grant) at once. */
void dl_hold_watch(dl_proc_t *p, dl_lock_t *l, int claimed);
/* An acquisition in mode failed, but may have run in Redis: the watchdog
 * withdraws it soon. */
void dl_hold_undo_later(dl_proc_t *p, dl_lock_t *l, char mode);
/* The hold passed from one local holder to the next (a local handoff):
 * counted while another process waits. */
void dl_hold_handoff(dl_lock_t *l);
/* A round trip of this lock's calls took us: smoothed into l->rtt_us (the
 * measure of a short hold).  Atomic: l->mu need not be held. */
void dl_hold_rtt(dl_lock_t *l, uint64_t us);
/* Ends the process's Redis hold, waiting for Redis until deadline (monotonic
 * ms; 0: the I/O time-out); l->mu is released around the round trip while
 * l->busy keeps the other threads away.  0, ENOLCK (the hold had lapsed),
 * EIO. */
int dl_hold_release(dl_proc_t *p, dl_lock_t *l, uint64_t deadline);
/* A thread ends its part of a hold that other threads of the process keep:
 * 0 if the hold was Redis's all along (asking Redis past its validity),
 * ENOLCK (it is gone), EIO. */
int dl_hold_vouch(dl_proc_t *p, dl_lock_t *l);
/* The last unlock keeps the write hold for a relock (lock.c says when):
 * marks it lingering in Redis (mark.c) and has the watchdog end it after
 * DL_LINGER_US.  0 lingering; -1 the mark could not be posted (release it). */
int dl_hold_linger(dl_proc_t *p, dl_lock_t *l);
/* Before a lingering hold serves a holder again: Redis must know it is held
 * once more, for EOWNERDEAD.  0 (also when it does not linger); -1 if that
 * cannot be posted now: the caller then ends the hold and asks Redis like
 * everyone else. */
int dl_hold_claim_linger(dl_proc_t *p, dl_lock_t *l);

/* Ends l's lingering hold if it is due, or at once if now, waiting for
 * Redis until deadline (ms, 0: the I/O time-out).  Takes l->mu.  0, ENOLCK,
 * EIO (logged: no caller waits for it).  The watchdog's, and destroy's. */
int dl_lock_linger_end(dl_proc_t *p, dl_lock_t *l, int now, uint64_t deadline);
/* Ends every lingering hold of the process at once (at exit). */
void dl_lock_flush_lingers(dl_proc_t *p);

/* --- the subscriber's (notify.c) --- */

/* Another process queued for l: if this process holds it or is taking it,
 * local handoffs are bounded from now on.  Never blocks. */
void dl_lock_waited_on(dl_lock_t *l);

/* --- the watchdog's (watchdog.c) --- */

/* Inside its walk (registry mutex and l->mu held).  A renewal of l's hold
 * to its lease is about to be sent: the TTL is no longer cut. */
void dl_lock_renewing(dl_lock_t *l);
/* An acquisition to withdraw (l->undo): DL_UNDO_NONE nothing left to
 * withdraw (the lock is ours again), DL_UNDO_LATER a thread talks to Redis
 * for l now, DL_UNDO_NOW ready (then dl_lock_undo_begin). */
enum { DL_UNDO_NONE, DL_UNDO_LATER, DL_UNDO_NOW };
int dl_lock_undo_due(dl_lock_t *l);
/* The watchdog withdraws it now, as l's one talker to Redis: the mode and
 * registration id of the request to withdraw. */
void dl_lock_undo_begin(dl_lock_t *l, char *mode, uint64_t *rid);

/* After its round trips (they take l->mu).  The renewal of the hold
 * numbered holdseq, sent at `sent` (ms) when l->cuts was `cuts`, was
 * confirmed, and Redis says `queued` others wait. */
void dl_lock_renewed(dl_lock_t *l, unsigned long holdseq, unsigned long cuts, uint64_t sent,
                     long long queued);
/* The renewal found the hold numbered holdseq gone: its unlock will say
 * ENOLCK (unless a release of it got there first). */
void dl_lock_gone(dl_lock_t *l, unsigned long holdseq);
/* The withdrawal ended: reached, Redis ran it; had, it found something.
 * 1: look again later (Redis unreachable, or the request may not have run
 * yet). */
int dl_lock_undo_end(dl_lock_t *l, int reached, int had);

#endif
