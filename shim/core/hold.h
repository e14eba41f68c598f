/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * hold.h - the process's Redis hold on an object once taken (hold.c):
 * recording it, vouching for it at an unlock, releasing it, lingering
 * after the last unlock for a relock, and what the watchdog and the
 * subscriber learn of it.
 *
 * hold.c writes an object's hold fields (o->hold: core.h).  The watchdog,
 * the lingerer and the subscriber change them only through the functions
 * of their sections below; a primitive (prim/lock.c) and take.c through
 * the others.  All with o->mu held unless said otherwise.
 */
#ifndef DL_HOLD_H
#define DL_HOLD_H

#include "take.h"

/* How long a lingering hold waits for its relock (see prim/lock.c,
 * DL_RELOCK_US, for when a hold lingers at all). */
#define DL_LINGER_US 100

/* --- a primitive's and take.c's --- */

/* This thread talks to Redis for o: the other threads of the process wait
 * (o->hold.busy) until dl_hold_unreserve.  Room for the undo of what it
 * sends (o->hold.rare) is made first, and kept until dl_hold_done: 0, or
 * ENOMEM (worded) with nothing reserved, before anything is sent. */
int dl_hold_reserve(dl_core_t *o);
/* ... done talking (the caller wakes o's waiters: dl_core_wake). */
void dl_hold_unreserve(dl_core_t *o);
/* ... and done with what its requests left: the hold recorded, or the
 * undo of a failed one written (dl_hold_undo_later).  The room made by
 * dl_hold_reserve is given back (freed when nothing in it is needed). */
void dl_hold_done(dl_core_t *o);
/* A lock call was told ENOTRECOVERABLE with this mark (prim/lock.c: what
 * the process's destroy may clear; dl_hold_unrec reads it), or 0: it was
 * cleared.  Set by a talker, in the room its dl_hold_reserve made. */
void dl_hold_set_unrec(dl_core_t *o, uint64_t mark);
/* Records the hold rq took, as g says. */
void dl_hold_record(dl_proc_t *p, dl_core_t *o, const dl_req_t *rq, const dl_grant_t *g);
/* A hold was just recorded: the watchdog renews a renewable one; one whose
 * renewal to the lease was posted (a claimed grant: take.c) is confirmed
 * at half its claim window.  A fixed lease is never renewed: the watchdog
 * asks Redis about it if it is still held when its TTL ends, so that its
 * loss is told while it is held (dl_hold_lapsed). */
void dl_hold_watch(dl_proc_t *p, dl_core_t *o, int posted);
/* The hold is known to have lapsed: a round trip found it gone (a renewal,
 * a confirmation, a release), or a relock found its fixed lease past its
 * end.  Its unlock says ENOLCK; the loss is counted and told to the
 * program's dist_onlost function once per hold (loss.c), whichever thread
 * finds it first. */
void dl_hold_lapsed(dl_core_t *o);
/* An acquisition in mode, registration id rid, failed but may have run in
 * Redis: the watchdog withdraws it soon, whatever the process holds or asks
 * for meanwhile (withdraw.lua touches no later request). */
void dl_hold_undo_later(dl_proc_t *p, dl_core_t *o, char mode, uint64_t rid);
/* The same for a request sent to one incarnation of the object in Redis (a
 * semaphore's, prim/sem.c; 0 none known): its withdrawal carries it
 * (dl_withdraw_args_t.incarn), so that it never acts on another. */
void dl_hold_undo_later_in(dl_proc_t *p, dl_core_t *o, char mode, uint64_t rid,
                           uint64_t incarn);
/* The hold passed from one local holder to the next (a local handoff):
 * counted while another process waits. */
void dl_hold_handoff(dl_core_t *o);
/* A round trip of this object's calls took us: smoothed into
 * o->hold.rtt_us (the measure of a short hold).  Atomic: o->mu need not be
 * held. */
void dl_hold_rtt(dl_core_t *o, uint64_t us);
/* Ends the process's Redis hold, waiting for Redis until deadline
 * (monotonic ms; 0: the I/O time-out); o->mu is released around the round
 * trip while o->hold.busy keeps the other threads away.  0, ENOLCK (the
 * hold had lapsed), EIO. */
int dl_hold_release(dl_proc_t *p, dl_core_t *o, uint64_t deadline);
/* The same for a robust lock's write hold whose holder was told
 * EOWNERDEAD and did not make it consistent (dist_mutex_consistent): held
 * still, the lock is left unrecoverable in Redis (every later acquisition
 * refused, lua/release.lua), its queued waiters told to ask again; lapsed
 * already, its death trace stays for the next holder (the state is as
 * inconsistent as after its holder's death).  0, ENOLCK, EIO. */
int dl_hold_release_unrecoverable(dl_proc_t *p, dl_core_t *o);
/* Ends the process's Redis hold as if it had never been taken: withdrawn
 * by the registration id it was taken with (withdraw.lua), which puts back
 * a death trace its taking consumed, so the next holder is told of that
 * lapse (a lock-all that took it but not the others: its caller was never
 * told).  o->mu is released around the round trip as for a release; a
 * withdrawal that fails is left to the watchdog (dl_hold_undo_later).
 * Returns 0. */
int dl_hold_give_back(dl_proc_t *p, dl_core_t *o);
/* The primitive ended the hold with a call of its own (a semaphore's last
 * leased permit posted back, or found lapsed): the process no longer
 * holds it, and late renewals concern nothing.  No round trip. */
void dl_hold_dropped(dl_core_t *o);
/* The hold is not trusted (tenure.c: dl_tenure_trusted) but a thread of the
 * process would take, join or relock it, or hand it to another: asks Redis
 * whether it is still there (renew.lua: a renewable hold is renewed to its
 * lease, a fixed lease only checked), as o's one talker (o->mu released
 * around the round trip).  0: there, and trusted again; ENOLCK: gone
 * (o->hold.lost set; unworded); EIO: no answer (worded). */
int dl_hold_confirm(dl_proc_t *p, dl_core_t *o);
/* A thread ends its part of a hold that other threads of the process keep:
 * 0 if the hold was Redis's all along (asking Redis unless it is trusted:
 * confirmed lately, no sign of lost state since, within its validity),
 * ENOLCK (it is gone), EIO. */
int dl_hold_vouch(dl_proc_t *p, dl_core_t *o);
/* The last unlock keeps the write hold for a relock (the primitive says
 * when): marks it lingering in Redis (mark.c) and has the lingerer end it
 * after DL_LINGER_US.  0 lingering; -1 the mark could not be posted
 * (release it). */
int dl_hold_linger(dl_proc_t *p, dl_core_t *o);
/* Before a lingering hold serves a holder again: Redis must know it is held
 * once more, for EOWNERDEAD.  0 (also when it does not linger); -1 if that
 * cannot be posted now: the caller then ends the hold and asks Redis like
 * everyone else. */
int dl_hold_claim_linger(dl_proc_t *p, dl_core_t *o);

/* --- the lingerer's (lingerer.c), and destroy's and exit's --- */

/* Ends o's lingering hold if it is due, or at once if now, waiting for
 * Redis until deadline (ms, 0: the I/O time-out).  Takes o->mu.  0,
 * ENOLCK, EIO (logged: no caller waits for it). */
int dl_hold_linger_end(dl_proc_t *p, dl_core_t *o, int now, uint64_t deadline);
/* Ends every lingering hold of the process at once (at exit). */
void dl_hold_flush_lingers(dl_proc_t *p);

/* --- the subscriber's (notify.c) --- */

/* Another process queued for o: if this process holds it or is taking it,
 * local handoffs are bounded from now on.  Never blocks. */
void dl_hold_waited_on(dl_core_t *o);

/* --- the watchdog's (watchdog.c) --- */

/* Inside its walk (registry mutex and o->mu held).  A renewal of o's hold
 * to its lease is about to be sent: the TTL is no longer cut. */
void dl_hold_renewing(dl_core_t *o);
/* When an acquisition to withdraw (o->hold.undo) is due (monotonic ms; 0:
 * none, or a withdrawal is under way): from then, dl_hold_undo_begin gives
 * the mode and registration id of the one to withdraw.  Withdrawals run
 * beside the process's other calls on the object: they touch only what
 * earlier requests made.  A look that found nothing is tried again
 * DL_UNDO_AGAIN_MS later (the request may not have run yet). */
#define DL_UNDO_AGAIN_MS 200
uint64_t dl_hold_undo_due(const dl_core_t *o);
/* An acquisition to withdraw is recorded (due or under way). */
int dl_hold_undo_pending(const dl_core_t *o);
void dl_hold_undo_begin(dl_core_t *o, char *mode, uint64_t *rid, uint64_t *incarn);

/* After its round trips (they take o->mu).  The renewal of the hold
 * numbered seq, sent at `sent` (ms) in trust epoch `epoch` when
 * o->cuts was `cuts`, was confirmed, and Redis says `queued` others
 * wait.  While threads of the process wait for the hold, the next renewal
 * is asked for within DL_TENURE_RENEW_MS (tenure.c). */
void dl_hold_renewed(dl_proc_t *p, dl_core_t *o, unsigned long seq, unsigned long cuts,
                     uint64_t sent, unsigned long epoch, long long queued);
/* The renewal found the hold numbered seq gone: its unlock will say
 * ENOLCK (unless a release of it got there first). */
void dl_hold_gone(dl_core_t *o, unsigned long seq);
/* The renewal (or check) of the hold numbered seq got no answer.  If the
 * hold was not confirmed since the last sign of lost state (trust.h),
 * it is asked about again DL_UNANSWERED_AGAIN_MS later rather than at the
 * next tick: a failover or a restart that outlasts one call's I/O
 * time-out must not delay finding the hold lost by a third of a lease. */
#define DL_UNANSWERED_AGAIN_MS 250
void dl_hold_unanswered(dl_proc_t *p, dl_core_t *o, unsigned long seq);
/* A check of the fixed lease numbered seq (due at the end of its TTL, or
 * after a sign of lost state), sent at `sent` in trust epoch `epoch` when
 * o->cuts was `cuts`, found it still in Redis (its acquisition
 * reached Redis late, or the clocks differ): trusted as of then, and
 * looked at again DL_FIXED_AGAIN_MS after its end, until it is gone or
 * released. */
#define DL_FIXED_AGAIN_MS 100
void dl_hold_checked(dl_proc_t *p, dl_core_t *o, unsigned long seq, unsigned long cuts,
                     uint64_t sent, unsigned long epoch);
/* The withdrawal of (mode, rid) ended: reached, Redis ran it; had, it found
 * something.  1: look again later (Redis unreachable, the request may not
 * have run yet, or another failed meanwhile). */
int dl_hold_undo_end(dl_core_t *o, char mode, uint64_t rid, int reached, int had);

#endif
