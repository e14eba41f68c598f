/* SPDX-License-Identifier: BSD-3-Clause */
/* watchdog.c - one thread renews every renewable hold of the process every
 * lease/3, and marks holds Redis says are gone as lost (so their unlock
 * reports ENOLCK, and dist_onlost's function is told: hold.c,
 * dl_hold_lapsed).  A fixed lease still held when its TTL ends is asked
 * about (only checked) then, and after each sign.  Between ticks it renews
 * early the holds that asked for it (pushed grants, which start with a
 * short claim ttl; holds that threads of the process wait for, every
 * 20 ms; every hold after a sign of lost state) if they are still held by
 * then, and withdraws acquisitions that failed after being sent.
 * (Lingering holds are ended by a thread of their own: lingerer.c.)
 *
 * At scale.  A tick walks the registry in parts (dl_registry_walk_part:
 * its mutex is held for a few hundred buckets at a time, not for a million
 * objects), and renews the holds it collected in the order their validity
 * ends, earliest first, so that when Redis cannot keep up, what expires
 * first is renewed first; renewals sent with less than a third of the
 * lease left are counted (renewals_late, the metrics file) and logged, at
 * most once every DL_LATE_WARN_MS.  A hold renewed or taken less than half
 * a tick ago waits for the next tick (after a sign, every hold is renewed
 * at once all the same).  Renewals go DL_RENEW_BATCH holds per call
 * (renew_many.lua, the kind's renew_many: each hold's outcome is said, so
 * a hold gone among those renewed is found lost), each call's holds in one
 * cluster slot; kinds without renew_many, and a slot that is migrating
 * (the call was not run: cluster ASK), are renewed a hold per call.
 * Between ticks it looks only at the objects its schedule names (a min-heap
 * of early looks: a renew_due, a linger's end, a busy hold tried again, an
 * undo), never at all of them.
 *
 * Of an object's state it writes only its schedule (renew_due, wlook);
 * what it finds it tells the hold (hold.h: dl_hold_renewed, dl_hold_gone,
 * dl_hold_undo_*), and it pins the objects it works on in the registry
 * (dl_registry_pin) for the time of its round trips.  The schedule does
 * not pin: the registry tells the watchdog of each object it frees
 * (dl_registry_t's unwatch).  Each call is built by the object's kind
 * (o->kind->calls: core.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "dl.h"
#include "call_renew.h"
#include "call_renew_many.h"
#include "call_withdraw.h"
#include "hold.h"
#include "tenure.h"
#include "trust.h"
#include "watchdog.h"

#define DL_RENEW_BATCH 512    /* holds per renew_many call (about 1 ms of Redis) */
#define DL_RENEW_TRIP 16384   /* holds per pipelined round trip: a round trip
                                 waits for the scheduler on a busy host, so
                                 few large ones (about 32 ms of Redis) */
#define DL_RENEW_CALLS 2048   /* calls per round trip (a hold renewed alone is one;
                                 so is a cluster slot's batch: few holds a slot) */
#define DL_WALK_BUCKETS 512   /* registry buckets per hold of its mutex */
#define DL_CONFIRM_ALL_MS 100 /* at most one pass for signs this often */
#define DL_LATE_WARN_MS 30000 /* at most one warning of late renewals this often */

/* One hold collected for a pass.  A tick lists every renewable hold of
 * the process (a million, 48 MB, for the time of the pass: 48 bytes a
 * hold, nothing that can be derived at sending is kept). */
typedef struct held {
    dl_core_t *o;
    uint64_t order;           /* when its validity ends (ms): renewed earliest first */
    uint64_t fence;           /* names the hold: renew.lua renews only it */
    unsigned long seq;
    uint32_t lease_ms;        /* renewals (at most DL_LEASE_MAX, 30 days); 0 a check */
    unsigned cuts;            /* o->cuts when collected */
    uint16_t slot;            /* its main key's cluster slot (redis-cluster://), else 0 */
    char mode;
    char check;               /* a fixed lease: only asked whether it is there */
    char single;              /* renewed alone (renew), not in a batch */
    char timed;               /* a renewal sent with less than a third of its lease
                                 left (from order - lease_ms / 3) is counted late */
} held_t;

_Static_assert(sizeof(held_t) <= 48, "a pass's list grew: a million holds list it all");

/* An acquisition to withdraw (o->hold.undo[]). */
typedef struct undo {
    dl_core_t *o;
    uint64_t rid;             /* its registration id */
    uint64_t incarn;          /* the incarnation it was sent to */
    unsigned long seq;
    char mode;
} undo_t;

typedef struct collect {
    dl_proc_t *p;
    held_t *v;                /* mmap'd: a pass over a million holds gives it back */
    size_t n, cap;
    undo_t *u;                /* acquisitions to withdraw */
    size_t un, ucap;
    int all;                  /* a regular tick, or a sign: every renewable hold */
    int sign;                 /* a sign of lost state: every hold and fixed lease not
                                 confirmed since (unconfirmed_since_sign) */
    int slots;                /* keys spread over slots (redis-cluster://) */
    uint64_t now;             /* ms */
    uint64_t now_us;
    unsigned long tick_ms;
} collect_t;

/* --- the schedule of early looks: a min-heap by time, under p->wmu --- */

static void look_swap(dl_proc_t *p, size_t a, size_t b)
{
    dl_wlook_t t = p->wlooks[a];
    p->wlooks[a] = p->wlooks[b];
    p->wlooks[b] = t;
    p->wlooks[a].o->wlook = (unsigned)a + 1;
    p->wlooks[b].o->wlook = (unsigned)b + 1;
}

static void look_up(dl_proc_t *p, size_t i)
{
    while (i && p->wlooks[(i - 1) / 2].at > p->wlooks[i].at) {
        look_swap(p, i, (i - 1) / 2);
        i = (i - 1) / 2;
    }
}

static void look_down(dl_proc_t *p, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, m = i;
        if (l < p->nwlooks && p->wlooks[l].at < p->wlooks[m].at)
            m = l;
        if (l + 1 < p->nwlooks && p->wlooks[l + 1].at < p->wlooks[m].at)
            m = l + 1;
        if (m == i)
            return;
        look_swap(p, i, m);
        i = m;
    }
}

/* Removes entry i (its object forgets it). */
static void look_remove(dl_proc_t *p, size_t i)
{
    p->wlooks[i].o->wlook = 0;
    if (i != --p->nwlooks) {
        p->wlooks[i] = p->wlooks[p->nwlooks];
        p->wlooks[i].o->wlook = (unsigned)i + 1;
        look_down(p, i);
        look_up(p, i);
    }
}

/* The watchdog looks at o by `at` (us) at the latest.  p->wmu held. */
static void look_at_locked(dl_proc_t *p, dl_core_t *o, uint64_t at)
{
    if (o->wlook) {
        size_t i = o->wlook - 1;
        if (at < p->wlooks[i].at) {
            p->wlooks[i].at = at;
            look_up(p, i);
        }
    } else {
        if (p->nwlooks == p->capwlooks) {
            size_t cap = p->capwlooks ? p->capwlooks * 2 : 64;
            dl_wlook_t *v = realloc(p->wlooks, cap * sizeof *v);
            if (!v)
                return;           /* out of memory: the next tick looks at it */
            p->wlooks = v;
            p->capwlooks = cap;
        }
        p->wlooks[p->nwlooks] = (dl_wlook_t){ at, o };
        o->wlook = (unsigned)++p->nwlooks;
        look_up(p, p->nwlooks - 1);
    }
    /* Sleeping past it: wake up to sleep until then instead. */
    if (p->wsleep && at < p->wsleep)
        pthread_cond_signal(&p->wcv);
}

static void look_at(dl_proc_t *p, dl_core_t *o, uint64_t at)
{
    pthread_mutex_lock(&p->wmu);
    look_at_locked(p, o, at);
    pthread_mutex_unlock(&p->wmu);
}

/* The registry frees o (its mutex held): the schedule forgets it. */
static void unwatch(dl_core_t *o, void *arg)
{
    dl_proc_t *p = arg;
    pthread_mutex_lock(&p->wmu);
    if (o->wlook)
        look_remove(p, o->wlook - 1);
    pthread_mutex_unlock(&p->wmu);
}

/* --- collecting what is due --- */

static void later(collect_t *c, dl_core_t *o, uint64_t at_us)
{
    look_at(c->p, o, at_us);
}

/* o->mu held, o pinned (the registry mutex held, or a pin of ours): an
 * acquisition that failed with EIO may have run in Redis (a stalled server
 * runs queued commands when it resumes), leaving a hold or a registration
 * nobody knows of, which would keep the others out for a lease (and the
 * process's own later request queued behind it).  Withdraw it by its
 * registration id, beside whatever the process's threads do with the
 * object meanwhile. */
static void collect_undo(dl_core_t *o, collect_t *c)
{
    uint64_t due = dl_hold_undo_due(o);
    if (!due)
        return;
    if (due > c->now) {
        later(c, o, due * 1000);
        return;
    }
    if (c->un == c->ucap) {
        size_t cap = c->ucap ? c->ucap * 2 : 16;
        undo_t *u = realloc(c->u, cap * sizeof *u);
        if (!u) {
            later(c, o, c->now_us + DL_UNDO_AGAIN_MS * 1000);
            return;
        }
        c->u = u;
        c->ucap = cap;
    }
    undo_t *h = &c->u[c->un++];
    h->o = o;
    h->seq = o->hold.seq;
    dl_hold_undo_begin(o, &h->mode, &h->rid, &h->incarn);
    dl_registry_pin(o);
}

static int grow(collect_t *c)
{
    size_t cap = c->cap ? c->cap * 2 : 1024;
    void *m = c->v ? mremap(c->v, c->cap * sizeof *c->v, cap * sizeof *c->v, MREMAP_MAYMOVE)
                   : mmap(NULL, cap * sizeof *c->v, PROT_READ | PROT_WRITE,
                          MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return -1;
    c->v = m;
    c->cap = cap;
    return 0;
}

/* After a pass: a list of more than a few thousand holds goes back to the
 * system (a million held locks would otherwise keep 48 MB for it). */
static void shrink(collect_t *c)
{
    if (c->cap > 4096) {
        munmap(c->v, c->cap * sizeof *c->v);
        c->v = NULL;
        c->cap = 0;
    }
}

/* o->mu held, o pinned: o's hold joins this pass (o pinned again),
 * renewed to its lease, or (check) only asked whether it is there.  0, or
 * -1 out of memory (then at the next pass). */
static int take_in(collect_t *c, dl_core_t *o, int check, int early)
{
    if (c->n == c->cap && grow(c))
        return -1;
    held_t *h = &c->v[c->n++];
    h->o = o;
    h->seq = o->hold.seq;
    h->mode = o->hold.rmode;
    h->lease_ms = check ? 0 : (uint32_t)o->hold.lease_ms;
    h->fence = o->hold.fence;
    h->cuts = o->cuts;
    h->check = (char)check;
    h->single = !o->kind->calls->renew_many;
    h->order = check ? dl_tenure_fixed_end(o) : o->tenure.valid_until;
    h->slot = c->slots ? (uint16_t)dl_conn_slot(c->p->conn, dl_core_key(o), o->keylen) : 0;
    /* A regular renewal of a hold that lives its lease (no claim window,
     * no cut: those are short by design) is late once less than a third of
     * its lease is left: a tick after it was due (late_at). */
    h->timed = !check && !early && !dl_tenure_cut_ttl(o) &&
               o->tenure.valid_until > o->hold.lease_ms / 3;
    dl_registry_pin(o);
    return 0;
}

/* o->mu held: after a sign, o's hold is confirmed by this pass unless it
 * already was since: taken or renewed by a call sent in the current trust
 * epoch (tenure.c).  Such a hold has nothing to be found, and a renewal
 * would cost a round trip, beside the calls of the threads that just took
 * it (and, its script missing on that node, a NOSCRIPT: another sign,
 * which makes every thread confirm its holds again).  A sign after this
 * look starts a pass of its own, or came within DL_CONFIRM_ALL_MS of this
 * one, as before. */
static int unconfirmed_since_sign(const collect_t *c, const dl_core_t *o)
{
    return c->sign && o->tenure.trust_epoch != dl_trust_epoch();
}

/* o->mu held, o pinned: a fixed lease still held when its TTL ends (its
 * due, dl_hold_watch), or after a sign of lost state, is asked about
 * (renew.lua with no lease: only checked), so that a hold held past its
 * end, or lost in a restart, is found lapsed while it is held. */
static void collect_fixed(dl_core_t *o, collect_t *c)
{
    if (!o->renew_due)
        return;
    if (!unconfirmed_since_sign(c, o) && o->renew_due > c->now) {
        later(c, o, o->renew_due * 1000);
        return;
    }
    if (o->hold.busy) {                /* being released, or re-acquired */
        later(c, o, c->now_us + 1000);
        return;
    }
    o->renew_due = 0;
    take_in(c, o, 1, 1);
}

/* o->mu held, o pinned (the registry mutex held, or a pin of ours): takes
 * in o's hold if it is to be renewed or checked now, and asks for a look
 * at o when something of it is due later. */
static void collect(dl_core_t *o, void *arg)
{
    collect_t *c = arg;
    if (dl_hold_undo_pending(o))
        collect_undo(o, c);
    if (!o->hold.rmode || o->hold.lost) {
        o->renew_due = 0;
        return;
    }
    if (!o->hold.renew) {
        collect_fixed(o, c);
        return;
    }
    int due = o->renew_due && o->renew_due <= c->now;
    if (!c->all && !due) {
        if (o->renew_due)
            later(c, o, o->renew_due * 1000);
        return;
    }
    /* A tick: a hold confirmed less than half a tick ago (just taken, or
     * renewed by the last pass when it ran late) waits for the next one.
     * Not after a sign: then every hold not confirmed since is confirmed
     * anew. */
    if (!due && !unconfirmed_since_sign(c, o) &&
        o->tenure.valid_until > dl_tenure_valid_until(c->now - c->tick_ms / 2, o->hold.lease_ms)) {
        if (o->renew_due)
            later(c, o, o->renew_due * 1000);
        return;
    }
    if (o->hold.busy) {                /* being released, or re-acquired */
        if (o->renew_due)
            later(c, o, c->now_us + 1000);
        return;
    }
    if (o->hold.linger_until) {
        /* Not while it lingers: renewed, it would outlive a process that
         * ends now by a lease instead of a claim window.  It is released
         * soon (lingerer.c), or renewed once taken back. */
        if (o->hold.linger_until > c->now_us)
            later(c, o, o->hold.linger_until);
        return;
    }
    int early = o->renew_due != 0;
    o->renew_due = 0;
    dl_hold_renewing(o);
    take_in(c, o, 0, early);      /* (out of memory: renewed next tick) */
}

/* --- renewing what was collected --- */

/* When a renewal of h sent from then (ms) is late; 0: not counted. */
static uint64_t late_at(const held_t *h)
{
    return h->timed ? h->order - h->lease_ms / 3 : 0;
}

/* Each slot's earliest `order` in this pass (redis-cluster://; else
 * slot 0's is 0): a list is ordered by it first.  The watchdog's alone. */
static uint64_t first[DL_CLUSTER_SLOTS];

static int by_order(const void *a, const void *b)
{
    const held_t *x = a, *y = b;
    if (first[x->slot] != first[y->slot])
        return first[x->slot] < first[y->slot] ? -1 : 1;
    if (x->slot != y->slot)
        return x->slot < y->slot ? -1 : 1;
    if (x->order != y->order)
        return x->order < y->order ? -1 : 1;
    return x->o < y->o ? -1 : x->o > y->o;
}

/* Earliest end first; in a cluster, a slot's holds together (one call
 * may touch one slot only), the slots by their earliest hold. */
static void order(collect_t *c)
{
    if (c->slots && c->n > 1) {
        for (size_t i = 0; i < c->n; i++)
            first[c->v[i].slot] = UINT64_MAX;
        for (size_t i = 0; i < c->n; i++)
            if (c->v[i].order < first[c->v[i].slot])
                first[c->v[i].slot] = c->v[i].order;
    } else {
        first[0] = 0;
    }
    qsort(c->v, c->n, sizeof *c->v, by_order);
}

/* What one round trip sends: its calls, and the holds of each. */
typedef struct trip {
    struct { size_t at, n; } span[DL_RENEW_CALLS];   /* each call's holds in v */
    dl_call_t *calls;         /* ncalls of them (as many as a trip has needed:
                                 a few on one server, thousands in a cluster) */
    size_t ncalls;
    dl_renew_reply_t out[DL_RENEW_TRIP];             /* renew_many's, hold by hold */
    char *list;                                      /* renew_many's lists */
    size_t listcap;
} trip_t;

/* What a pass found, for the counters and the log. */
typedef struct tally_pass {
    unsigned long late;
} tally_pass_t;

/* Tells h's hold what its renewal (or check) said: held 1 there (queued
 * others wait), 0 gone, -1 not known; err: no answer. */
static void settle(dl_proc_t *p, const held_t *h, int err, int held, long long queued,
                   uint64_t sent, unsigned long epoch)
{
    if (err || held < 0) {
        /* Redis unreachable (or, redlock, too few servers answered for
         * this hold): again next tick, or soon after a sign */
        dl_hold_unanswered(p, h->o, h->seq);
    } else if (held == 1 && h->check) {
        dl_hold_checked(p, h->o, h->seq, h->cuts, sent, epoch);
    } else if (held == 1) {
        DL_STAT_ADD(renewed, 1);
        /* Sure to be there until a lease from `sent`, or the end of a cut
         * made since: others may wait (the count is theirs). */
        dl_hold_renewed(p, h->o, h->seq, h->cuts, sent, epoch, queued);
    } else {
        dl_hold_gone(h->o, h->seq);
    }
}

static void renew_list(dl_proc_t *p, trip_t *t, held_t *v, size_t n, tally_pass_t *tp);

/* One round trip: the holds of v from *at on, as many as it takes. */
static void renew_trip(dl_proc_t *p, trip_t *t, held_t *v, size_t n, size_t *at, tally_pass_t *tp)
{
    int nc = 0;
    size_t nh = 0, listlen = 0, i = *at;
    int nofence = dl_conn_caps(p->conn).quorum;
    /* Which holds go in which call: a batch of one slot and one builder,
     * or a hold alone. */
    while (i < n && nc < DL_RENEW_CALLS && nh < DL_RENEW_TRIP) {
        const held_t *h = &v[i];
        size_t j = i + 1;
        if (!h->single) {
            while (j < n && j - i < DL_RENEW_BATCH && nh + (j - i) < DL_RENEW_TRIP &&
                   !v[j].single && v[j].slot == h->slot &&
                   v[j].o->kind->calls->renew_many == h->o->kind->calls->renew_many)
                j++;
            for (size_t k = i; k < j; k++)
                listlen += 3 * 21 + 5 + v[k].o->keylen;
        }
        t->span[nc].at = i;
        t->span[nc].n = j - i;
        nh += j - i;
        nc++;
        i = j;
    }
    if ((size_t)nc > t->ncalls) {
        dl_call_t *c = realloc(t->calls, (size_t)nc * sizeof *c);
        if (!c) {
            dl_log(DL_LOG_ERROR, "watchdog: out of memory; holds are renewed at the next tick");
            *at = n;
            return;
        }
        t->calls = c;
        t->ncalls = (size_t)nc;
    }
    if (listlen > t->listcap) {
        char *l = realloc(t->list, listlen);
        if (!l) {
            dl_log(DL_LOG_ERROR, "watchdog: out of memory; holds are renewed at the next tick");
            *at = n;
            return;
        }
        t->list = l;
        t->listcap = listlen;
    }
    size_t used = 0, outs = 0;
    for (int k = 0; k < nc; k++) {
        const held_t *h = &v[t->span[k].at];
        dl_caller_t who = dl_caller(p, h->o);
        if (h->single) {
            h->o->kind->calls->renew(&t->calls[k], &who, &(dl_renew_args_t){
                .mode = h->mode, .lease_ms = h->lease_ms, .fence = h->fence });
            continue;
        }
        char *list = t->list + used;
        size_t len = 0;
        for (size_t j = 0; j < t->span[k].n; j++) {
            const held_t *x = &v[t->span[k].at + j];
            dl_renew_item_t it = { dl_core_key(x->o), x->o->keylen, x->mode, x->lease_ms, x->fence };
            len += dl_renew_many_list(&it, 1, nofence, list + len);
        }
        used += len;
        h->o->kind->calls->renew_many(&t->calls[k], &who, &(dl_renew_many_args_t){
            .n = (int)t->span[k].n, .list = list, .listlen = len, .out = t->out + outs });
        outs += t->span[k].n;
    }
    uint64_t sent = dl_now_ms();
    unsigned long epoch = dl_trust_epoch();
    for (size_t k = *at; k < i; k++)
        if (late_at(&v[k]) && sent >= late_at(&v[k]))
            tp->late++;
    dl_script_run(p->conn, t->calls, nc);
    DL_STAT_ADD(watchdog_roundtrips, 1);
    *at = i;

    /* Holds of a slot that is moving (the batch was not run: cluster ASK)
     * go again, alone, once this trip is settled. */
    held_t *again = NULL;
    size_t nagain = 0;
    for (int k = 0; k < nc; k++) {
        const dl_call_t *c = &t->calls[k];
        const held_t *h = &v[t->span[k].at];
        if (h->single) {
            /* renew.lua alone: an unexpected reply is a hold gone */
            settle(p, h, c->cmd.err != 0, DL_REPLY(c, renew).held == 1 ? 1 : 0,
                   DL_REPLY(c, renew).queued, sent, epoch);
            continue;
        }
        const dl_renew_many_args_t *a = &DL_ARGS(c, renew_many);
        if (!c->cmd.err && DL_REPLY(c, renew_many).got == 0) {
            if (!again)
                again = malloc(DL_RENEW_TRIP * sizeof *again);
            for (size_t j = 0; again && j < t->span[k].n; j++) {
                again[nagain] = h[j];
                again[nagain++].single = 1;
            }
            if (again)
                continue;
        }
        int err = c->cmd.err || DL_REPLY(c, renew_many).got != 1;
        for (size_t j = 0; j < t->span[k].n; j++)
            settle(p, &h[j], err, err ? -1 : a->out[j].held, err ? 0 : a->out[j].queued, sent,
                   epoch);
    }
    if (nagain) {
        renew_list(p, t, again, nagain, tp);
        free(again);
    }
}

static void renew_list(dl_proc_t *p, trip_t *t, held_t *v, size_t n, tally_pass_t *tp)
{
    size_t at = 0;
    while (at < n)
        renew_trip(p, t, v, n, &at, tp);
}

/* c.u, reachable (leak checkers, forks); volatile: a write-only static
 * would be optimised away with its stores. */
static void *volatile dl_undo_buf;

/* Withdraws each acquisition of c->u by its registration id (withdraw.lua):
 * its place in the queue or the hold taken for it, and nothing the process
 * asked for since. */
static void undo_all(dl_proc_t *p, collect_t *c)
{
    for (size_t i = 0; i < c->un; i++) {
        dl_core_t *o = c->u[i].o;
        dl_call_t call;
        dl_caller_t who = dl_caller(p, o);
        o->kind->calls->withdraw(&call, &who, &(dl_withdraw_args_t){
            .mode = c->u[i].mode, .regid = c->u[i].rid, .incarn = c->u[i].incarn });
        int rc = dl_script_run(p->conn, &call, 1);
        int had = !call.cmd.err && DL_REPLY(&call, withdraw).result >= 1;
        /* Redis still unreachable, or a second look: again in a while */
        if (dl_hold_undo_end(o, c->u[i].mode, c->u[i].rid, !rc, had))
            look_at(p, o, (dl_now_ms() + DL_UNDO_AGAIN_MS) * 1000);
        dl_registry_put(&p->reg, o);
    }
    c->un = 0;
}

/* A look at the objects whose early looks are due (between ticks): each
 * taken off the schedule, pinned, and collected. */
static void collect_due(dl_proc_t *p, collect_t *c)
{
    dl_core_t *due[256];
    size_t n;
    do {
        n = 0;
        pthread_mutex_lock(&p->reg.mu);
        pthread_mutex_lock(&p->wmu);
        while (n < 256 && p->nwlooks && p->wlooks[0].at <= c->now_us) {
            dl_core_t *o = p->wlooks[0].o;
            look_remove(p, 0);
            dl_registry_pin(o);       /* (alive: the registry would have unwatched it) */
            due[n++] = o;
        }
        pthread_mutex_unlock(&p->wmu);
        pthread_mutex_unlock(&p->reg.mu);
        for (size_t i = 0; i < n; i++) {
            pthread_mutex_lock(&due[i]->mu);
            collect(due[i], c);
            pthread_mutex_unlock(&due[i]->mu);
            dl_registry_put(&p->reg, due[i]);
        }
    } while (n == 256);
}

/* A tick, or a sign: every object.  What the schedule had due now is
 * looked at by the walk: off the schedule. */
static void collect_every(dl_proc_t *p, collect_t *c)
{
    pthread_mutex_lock(&p->wmu);
    while (p->nwlooks && p->wlooks[0].at <= c->now_us)
        look_remove(p, 0);
    pthread_mutex_unlock(&p->wmu);
    dl_registry_cursor_t cur = { 0, 0 };
    while (dl_registry_walk_part(&p->reg, &cur, DL_WALK_BUCKETS, collect, c)) {
    }
}

static void warn_late(dl_proc_t *p, unsigned long late, int behind, uint64_t took_ms,
                      size_t holds, unsigned long tick_ms)
{
    static uint64_t last;
    uint64_t now = dl_now_ms();
    if (last && now - last < DL_LATE_WARN_MS)
        return;
    last = now;
    (void)p;
    if (late)
        dl_log(DL_LOG_WARN, "watchdog: %lu renewals went out with less than a third of their "
               "lease left (a pass over %zu holds took %llu ms, a tick is %lu ms): Redis, or "
               "this process, does not keep up; the holds that expire first are renewed first",
               late, holds, (unsigned long long)took_ms, tick_ms);
    else if (behind)
        dl_log(DL_LOG_WARN, "watchdog: a pass over %zu holds took %llu ms, longer than a tick "
               "(%lu ms): renewals run behind; the holds that expire first are renewed first",
               holds, (unsigned long long)took_ms, tick_ms);
}

static void *watchdog_main(void *arg)
{
    dl_proc_t *p = arg;
    unsigned long tick_ms = p->cfg.lease_ms / 3 ? p->cfg.lease_ms / 3 : 1;
    uint64_t tick = (uint64_t)tick_ms * 1000;   /* us */
    collect_t c;
    memset(&c, 0, sizeof c);
    c.p = p;
    c.tick_ms = tick_ms;
    c.slots = dl_conn_caps(p->conn).slots;
    trip_t *t = calloc(1, sizeof *t);
    p->wbuf[0] = t;
    uint64_t tick_at = dl_now_us() + tick;
    for (;;) {
        pthread_mutex_lock(&p->wmu);
        for (;;) {
            uint64_t now = dl_now_us(), wake = p->wnext < tick_at ? p->wnext : tick_at;
            if (p->nwlooks && p->wlooks[0].at < wake)
                wake = p->wlooks[0].at;
            if (now >= wake)
                break;
            struct timespec ts;
            dl_timespec_at_us(wake, &ts);
            p->wsleep = wake;
            pthread_cond_timedwait(&p->wcv, &p->wmu, &ts);
            p->wsleep = 0;
        }
        p->wnext = DL_FOREVER;
        int all_now = p->wall;
        p->wall = 0;
        pthread_mutex_unlock(&p->wmu);

        c.n = 0;
        c.un = 0;
        c.now_us = dl_now_us();
        c.now = c.now_us / 1000;
        int ticked = c.now_us >= tick_at;
        c.all = ticked || all_now;
        c.sign = all_now;
        if (ticked)
            tick_at = c.now_us + tick;
        if (c.all)
            collect_every(p, &c);
        else
            collect_due(p, &c);
        p->wbuf[1] = c.v;         /* reachable from the state (leak checkers, forks) */
        dl_undo_buf = c.u;
        if (c.un)
            undo_all(p, &c);
        if (!c.n)
            continue;
        if (!t && !(t = p->wbuf[0] = calloc(1, sizeof *t))) {
            dl_log(DL_LOG_ERROR, "watchdog: out of memory; holds are not renewed");
        } else {
            tally_pass_t tp = { 0 };
            order(&c);
            renew_list(p, t, c.v, c.n, &tp);
            uint64_t took = dl_now_us() - c.now_us;
            int behind = c.all && took >= tick;
            if (c.all)
                DL_STAT_ADD(watchdog_ticks, 1);
            if (tp.late)
                DL_STAT_ADD(renewals_late, tp.late);
            if (behind)
                DL_STAT_ADD(watchdog_behind, 1);
            if (tp.late || behind)
                warn_late(p, tp.late, behind, took / 1000, c.n, tick_ms);
        }
        for (size_t i = 0; i < c.n; i++)
            dl_registry_put(&p->reg, c.v[i].o);
        shrink(&c);
        p->wbuf[1] = c.v;
    }
    return NULL;
}

void dl_watchdog_init(dl_proc_t *p)
{
    p->reg.unwatch = unwatch;
    p->reg.unwatch_arg = p;
}

void dl_watchdog_due(dl_proc_t *p, dl_core_t *o, uint64_t due)
{
    o->renew_due = due;
    look_at(p, o, due * 1000);
}

void dl_watchdog_undue(dl_core_t *o)
{
    /* (its look, if any, finds nothing due and goes) */
    o->renew_due = 0;
}

void dl_watchdog_confirm_all(dl_proc_t *p)
{
    pthread_mutex_lock(&p->wmu);
    /* At most one pass every DL_CONFIRM_ALL_MS: a sign that persists (a
     * server answering READONLY or LOADING to every renewal) would
     * otherwise make each pass's failures start the next one at once.  The
     * trust ends at once anyway (trust.c); this pass only finds sooner
     * what a thread would confirm itself before using a hold. */
    uint64_t now = dl_now_ms();
    if (p->wstarted && (!p->wall_at || now - p->wall_at >= DL_CONFIRM_ALL_MS)) {
        p->wall_at = now;
        p->wall = 1;
        p->wnext = 0;
        pthread_cond_signal(&p->wcv);
    }
    pthread_mutex_unlock(&p->wmu);
}

void dl_watchdog_ensure(dl_proc_t *p)
{
    pthread_mutex_lock(&p->wmu);
    if (!p->wstarted && dl_thread_start(watchdog_main, p) == 0)
        p->wstarted = 1;
    pthread_mutex_unlock(&p->wmu);
}
