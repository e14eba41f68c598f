/* SPDX-License-Identifier: BSD-3-Clause */
/* tenure.c - how long a process may use its Redis hold without asking
 * Redis (the primitive decides when; this file keeps the facts it decides
 * on).
 *
 * Validity.  A hold passed between the process's own threads, joined by
 * another reader, or taken back after a lingering unlock, costs no round
 * trip: the process believes Redis still has it.  That belief holds until
 * the hold's TTL, counted from when the call that set it was sent, runs
 * out; a process that stalled longer (a pause, swapping, a stopped
 * debugger) or whose watchdog could not reach Redis must ask again.  So
 * each acquisition and each confirmed renewal sets o->tenure.valid_until,
 * each TTL cut by a linger lowers it, and past it no hold is reused
 * locally.
 *
 * Tenure.  The process learns that another process waits from a push sent
 * when that process queues.  A push can be lost (the subscriber was
 * reconnecting) or never come (the process holds the lock without ever
 * having subscribed: its first hold came from a trylock).  So while the
 * process keeps a hold busy among its threads, the watchdog renews it every
 * DL_TENURE_RENEW_MS, and renew.lua's reply says how many wait.
 *
 * Posted renewals.  A hold pushed to a waiter, or cut to a claim window by
 * a linger, lives only that window (2 s) in Redis: renewed as soon as it
 * is claimed (a pushed grant: before the lock call returns, take.c; a
 * lingering hold: by the mark that takes it back, mark.c), it lives the
 * lease again, and a pause right after a handoff does not lose it.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "dl.h"
#include "tenure.h"
#include "trust.h"
#include "watchdog.h"

/* While the process passes its Redis hold between its own threads (or its
 * threads wait for one of theirs that holds it), the watchdog renews it at
 * least this often; a renewal that finds others queued in Redis bounds the
 * local tenure (prim/lock.c: DL_KEEP_US, DL_HANDOFF_MAX) as the waiter's push
 * would.  So another process gets the lock within about this plus
 * DL_KEEP_US of queuing even when its push was lost.  Idle held locks are
 * renewed at lease/3 as before; a busy one costs one renewal per period. */
#define DL_TENURE_RENEW_MS 20

/* A hold serves another thread without a round trip only if its last
 * confirmation was sent at most this long ago (plus the object's round trip,
 * for slow links).  A loss that gives no sign (an operator's DEL,
 * FLUSHALL, eviction) happened after that confirmation ran, so no thread
 * of the process gets or joins a lost hold later than this after the loss.
 * Twice DL_TENURE_RENEW_MS: the watchdog's renewals of a busy hold keep it
 * trusted with a period to spare, and a thread that finds it stale (the
 * watchdog late, or the hold idle until now) confirms it itself (hold.c,
 * dl_hold_confirm) and may then take it. */
#define DL_TRUST_MS (2 * DL_TENURE_RENEW_MS)

/* The allowance for clocks running at different rates, as redlock's. */
static unsigned long drift_of(unsigned long ttl_ms)
{
    return ttl_ms / 100 + 2;
}

uint64_t dl_tenure_valid_until(uint64_t sent_ms, unsigned long ttl_ms)
{
    unsigned long drift = drift_of(ttl_ms);
    return ttl_ms > drift ? sent_ms + ttl_ms - drift : 0;
}

uint64_t dl_tenure_fixed_end(const dl_core_t *o)
{
    return o->tenure.valid_until + drift_of(o->hold.lease_ms);
}

int dl_tenure_lease(const dl_core_t *o, unsigned long *ms_left)
{
    /* What was last confirmed, nothing more: a sign of lost state (trust.h)
     * does not shorten it (the hold may well be there: the watchdog asks
     * Redis at once, and a hold found gone is then ENOLCK), and a renewal
     * that could not reach Redis leaves it to run out. */
    if (!o->hold.rmode || o->hold.lost)
        return ENOLCK;
    uint64_t now = dl_now_ms();
    if (now >= o->tenure.valid_until) {
        /* A fixed lease's end is known: past it, the caller may no longer
         * count on it.  A renewable one may be confirmed again. */
        if (!o->hold.renew)
            return ENOLCK;
        *ms_left = 0;
        return 0;
    }
    *ms_left = (unsigned long)(o->tenure.valid_until - now);
    return 0;
}

int dl_tenure_trusted(const dl_core_t *o, int confirmed_now)
{
#ifdef DISTLOCK_MUTANT_TRUST
    return o->hold.rmode && !o->hold.lost;  /* mutant (tools/mutants.sh): trust always granted */
#endif
    uint64_t now = dl_now_ms();
    if (!o->hold.rmode || o->hold.lost || now >= o->tenure.valid_until ||
        o->tenure.trust_epoch != dl_trust_epoch())
        return 0;
    /* A confirmation is as old as its sending; over a slow link it comes
     * back a round trip later, which the window allows for (on a LAN a
     * fraction of a millisecond), up to DL_TRUST_MS more: a round trip
     * slowed once (an outage) must not widen it for good. */
    uint64_t rtt_ms = __atomic_load_n(&o->hold.rtt_us, __ATOMIC_RELAXED) / 1000;
    if (rtt_ms > DL_TRUST_MS)
        rtt_ms = DL_TRUST_MS;
    return confirmed_now || now - o->tenure.confirmed_ms <= DL_TRUST_MS + rtt_ms;
}

void dl_tenure_fresh(dl_core_t *o, uint64_t valid_until, uint64_t sent_ms, unsigned long epoch)
{
    if (o->hold.rare)
        o->hold.rare->cut_ttl = 0;
    o->tenure.valid_until = valid_until;
    o->tenure.confirmed_ms = sent_ms;
    o->tenure.trust_epoch = epoch;
}

void dl_tenure_confirmed(dl_core_t *o, uint64_t sent_ms, unsigned long cuts, unsigned long epoch,
                       int renewed)
{
    if (renewed) {
        uint64_t v = dl_tenure_valid_until(sent_ms, dl_tenure_ttl(o));
        /* Cut since it was sent: no more than the cut left (a cut keeps
         * o->hold.rare for the rest of the hold; without it, nothing). */
        if (o->cuts != cuts) {
            uint64_t cut_until = o->hold.rare ? o->hold.rare->cut_until : 0;
            if (v > cut_until)
                v = cut_until;
        }
        if (v > o->tenure.valid_until)
            o->tenure.valid_until = v;
    }
    /* Epochs only grow: a confirmation sent before a sign restores nothing
     * (the sign may concern a loss after it ran). */
    if (epoch > o->tenure.trust_epoch) {
        o->tenure.trust_epoch = epoch;
        o->tenure.confirmed_ms = sent_ms;
    } else if (epoch == o->tenure.trust_epoch && sent_ms > o->tenure.confirmed_ms) {
        o->tenure.confirmed_ms = sent_ms;
    }
}

void dl_tenure_cut(dl_core_t *o, unsigned long ttl_ms)
{
    uint64_t v = dl_tenure_valid_until(dl_now_ms(), ttl_ms);
    if (v < o->tenure.valid_until)
        o->tenure.valid_until = v;
    o->cuts++;
    if (o->hold.rare) {           /* (made by dl_hold_linger) */
        o->hold.rare->cut_until = v;
        o->hold.rare->cut_ttl = (unsigned)ttl_ms;
    }
}

unsigned long dl_tenure_ttl(const dl_core_t *o)
{
    /* A cut posted on a connection that was then given up may run in Redis
     * at any later time, after a renewal sent on the next connection: the
     * hold then lives a claim window from when the cut runs, which is
     * after the renewal ran.  So once a hold was cut, a renewal vouches for
     * a claim window from its sending, whatever the order the two run in. */
    unsigned long cut = dl_tenure_cut_ttl(o);
    return cut && cut < o->hold.lease_ms ? cut : o->hold.lease_ms;
}

void dl_tenure_renew(dl_proc_t *p, dl_core_t *o)
{
    /* redlock: nobody queues, and local handoffs of a write hold are
     * bounded as if someone waited (hold.c, dl_hold_record); a renewal would
     * learn nothing.  A read hold shared by the process's readers learns
     * of a waiting writer's mark from it (renew.lua). */
    if (!o->hold.rmode || !o->hold.renew || (!dl_conn_caps(p->conn).queue && o->hold.rmode == 'w'))
        return;
    uint64_t due = dl_now_ms() + DL_TENURE_RENEW_MS;
    if (!o->renew_due || o->renew_due > due)
        dl_watchdog_due(p, o, due);
}
