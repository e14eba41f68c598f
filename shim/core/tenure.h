/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tenure.h - what the process knows of its Redis hold's life (tenure.c):
 * until when it may serve the process's threads without asking Redis, and
 * how often it is renewed while they pass it around.  tenure.c writes an
 * object's validity fields (o->tenure: core.h); o->mu held for all but
 * dl_tenure_valid_until.
 */
#ifndef DL_TENURE_H
#define DL_TENURE_H

#include "process.h"

/* Until when a hold is surely still in Redis (monotonic ms), when the call
 * that set its TTL to ttl_ms was sent at sent_ms: less a clock-drift
 * allowance (1% + 2 ms, as redlock's); 0 for a TTL too short to count. */
uint64_t dl_tenure_valid_until(uint64_t sent_ms, unsigned long ttl_ms);
/* When a fixed lease's TTL ends as the process counts it (its validity
 * plus the drift allowance: its sending plus the lease). */
uint64_t dl_tenure_fixed_end(const dl_core_t *o);
/* dist_*_getlease, for a hold the calling thread has (the primitive has
 * checked that): 0 and the time left of its validity in *ms_left (0 once
 * passed, while no round trip has found it gone: a renewal may still
 * confirm it), or ENOLCK when it is known to have lapsed (lost, the hold
 * ended under the thread, or a fixed lease past its validity).  Never
 * blocks; no round trip. */
int dl_tenure_lease(const dl_core_t *o, unsigned long *ms_left);
/* Whether o's hold may serve another thread of the process without a round
 * trip (a local handoff, a reader joining, a relock of a lingering hold):
 * within its validity, not known lost, no sign of lost state since it was
 * last confirmed (trust.h), and confirmed within the last DL_TRUST_MS, so
 * that a loss that gives no sign (DEL, FLUSHALL, eviction) is noticed
 * within that bound while the process's threads keep the hold busy.
 * confirmed_now: the calling thread has just confirmed it itself
 * (dl_hold_confirm), which is as recent as any confirmation can be. */
int dl_tenure_trusted(const dl_core_t *o, int confirmed_now);
/* A new hold, surely in Redis until valid_until (0: unknown until renewed),
 * taken by a call sent at sent_ms in trust epoch `epoch`. */
void dl_tenure_fresh(dl_core_t *o, uint64_t valid_until, uint64_t sent_ms, unsigned long epoch);
/* A renewal (or a check) of o's hold, sent at sent_ms in trust epoch
 * `epoch` when o->cuts was `cuts`, found it there: it is trusted as of
 * then, and if `renewed`, valid a TTL from then (no more than the end of a
 * cut made since: dl_tenure_cut); a check that did not renew (a fixed lease)
 * leaves its validity. */
void dl_tenure_confirmed(dl_core_t *o, uint64_t sent_ms, unsigned long cuts, unsigned long epoch,
                       int renewed);
/* A linger just cut the hold's TTL to ttl_ms: lowers its validity to that.
 * The cut is kept in o->hold.rare, which the linger made (hold.c). */
void dl_tenure_cut(dl_core_t *o, unsigned long ttl_ms);
/* The TTL a confirmed renewal of o's hold vouches for: its lease, or once
 * a linger cut it, no more than the cut (a cut may run after the renewal). */
unsigned long dl_tenure_ttl(const dl_core_t *o);
/* A thread of the process takes over, or waits for, the process's hold:
 * has the watchdog renew it within DL_TENURE_RENEW_MS (whose reply says if
 * others wait, and which keeps the hold trusted).  The watchdog renews it
 * again as often while threads of the process wait for it (hold.c,
 * dl_hold_renewed). */
void dl_tenure_renew(dl_proc_t *p, dl_core_t *o);

#endif
