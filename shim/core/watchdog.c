/* SPDX-License-Identifier: BSD-3-Clause */
/* watchdog.c - one thread renews every renewable hold of the process, all
 * in one pipelined batch every lease/3, and marks holds Redis says are gone
 * as lost (so their unlock reports ENOLCK, and dist_onlost's function is
 * told: hold.c, dl_hold_lapsed).  A fixed lease still held when its TTL
 * ends is asked about (only checked) then, and after each sign.  Between ticks it renews early
 * the holds that asked for it (pushed grants, which start with a short
 * claim ttl; holds that threads of the process wait for, every 20 ms;
 * every hold after a sign of lost state) if they are still held by then,
 * and withdraws acquisitions that failed after being sent.  (Lingering
 * holds are ended by a thread of their own: lingerer.c.)
 *
 * Of an object's state it writes only its schedule (renew_due); what it
 * finds it tells the hold (hold.h: dl_hold_renewed, dl_hold_gone,
 * dl_hold_undo_*), and it pins the objects it works on in the registry
 * (dl_registry_pin) for the time of its round trips.  Each call is built
 * by the object's kind (o->kind->calls: core.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dl.h"
#include "call_renew.h"
#include "call_withdraw.h"
#include "hold.h"
#include "tenure.h"
#include "trust.h"
#include "watchdog.h"

#define DL_RENEW_CHUNK 2000   /* commands per pipelined round trip */
#define DL_CONFIRM_ALL_MS 100 /* at most one pass for signs this often */

typedef struct held {
    dl_core_t *o;
    unsigned long seq;
    char mode;
    unsigned long lease_ms;   /* renewals */
    uint64_t fence;           /* names the hold: renew.lua renews only it */
    uint64_t rid;             /* withdrawals: the registration id */
    uint64_t incarn;          /* withdrawals: the incarnation it was sent to */
    unsigned long cuts;       /* o->tenure.cuts when collected */
    int check;                /* a fixed lease: only asked whether it is there */
} held_t;

typedef struct collect {
    held_t *v;
    size_t n, cap;
    held_t *u;                /* acquisitions to withdraw (o->hold.undo[]) */
    size_t un, ucap;
    int all;                  /* a regular tick, or a sign: every renewable hold */
    int sign;                 /* a sign of lost state: every fixed lease too */
    uint64_t now;             /* ms */
    uint64_t now_us, next;    /* next: earliest due left for later (us) */
} collect_t;

static void later(collect_t *c, uint64_t at_us)
{
    if (at_us < c->next)
        c->next = at_us;
}

/* Registry mutex and o->mu held: an acquisition that failed with EIO may
 * have run in Redis (a stalled server runs queued commands when it
 * resumes), leaving a hold or a registration nobody knows of, which would
 * keep the others out for a lease (and the process's own later request
 * queued behind it).  Withdraw it by its registration id, beside whatever
 * the process's threads do with the object meanwhile. */
static void collect_undo(dl_core_t *o, collect_t *c)
{
    uint64_t due = dl_hold_undo_due(o);
    if (!due)
        return;
    if (due > c->now) {
        later(c, due * 1000);
        return;
    }
    if (c->un == c->ucap) {
        size_t cap = c->ucap ? c->ucap * 2 : 16;
        held_t *u = realloc(c->u, cap * sizeof *u);
        if (!u)
            return;
        c->u = u;
        c->ucap = cap;
    }
    held_t *h = &c->u[c->un++];
    h->o = o;
    h->seq = o->hold.seq;
    dl_hold_undo_begin(o, &h->mode, &h->rid, &h->incarn);
    dl_registry_pin(o);
}

/* Registry mutex and o->mu held: o's hold joins this pass (o pinned),
 * renewed to its lease, or (check) only asked whether it is there.  0, or
 * -1 out of memory (then at the next pass). */
static int take_in(collect_t *c, dl_core_t *o, int check)
{
    if (c->n == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 64;
        held_t *v = realloc(c->v, cap * sizeof *v);
        if (!v)
            return -1;
        c->v = v;
        c->cap = cap;
    }
    held_t *h = &c->v[c->n++];
    h->o = o;
    h->seq = o->hold.seq;
    h->mode = o->hold.rmode;
    h->lease_ms = check ? 0 : o->hold.lease_ms;
    h->fence = o->hold.fence;
    h->cuts = o->tenure.cuts;
    h->check = check;
    dl_registry_pin(o);
    return 0;
}

/* Registry mutex and o->mu held: a fixed lease still held when its TTL
 * ends (its due, dl_hold_watch), or after a sign of lost state, is asked
 * about (renew.lua with no lease: only checked), so that a hold held past
 * its end, or lost in a restart, is found lapsed while it is held. */
static void collect_fixed(dl_core_t *o, collect_t *c)
{
    if (!o->renew_due)
        return;
    if (!c->sign && o->renew_due > c->now) {
        later(c, o->renew_due * 1000);
        return;
    }
    if (o->hold.busy) {                /* being released, or re-acquired */
        later(c, c->now_us + 1000);
        return;
    }
    o->renew_due = 0;
    take_in(c, o, 1);
}

/* Registry mutex and o->mu held: pin each hold to renew now. */
static void collect(dl_core_t *o, void *arg)
{
    collect_t *c = arg;
    if (o->hold.undo[0] || o->hold.undo[1])
        collect_undo(o, c);
    if (!o->hold.rmode || o->hold.lost) {
        o->renew_due = 0;
        return;
    }
    if (!o->hold.renew) {
        collect_fixed(o, c);
        return;
    }
    if (!c->all && (!o->renew_due || o->renew_due > c->now)) {
        if (o->renew_due)
            later(c, o->renew_due * 1000);
        return;
    }
    if (o->hold.busy) {                /* being released, or re-acquired */
        if (o->renew_due)
            later(c, c->now_us + 1000);
        return;
    }
    if (o->hold.linger_until) {
        /* Not while it lingers: renewed, it would outlive a process that
         * ends now by a lease instead of a claim window.  It is released
         * soon (lingerer.c), or renewed once taken back. */
        if (o->hold.linger_until > c->now_us)
            later(c, o->hold.linger_until);
        return;
    }
    o->renew_due = 0;
    dl_hold_renewing(o);
    take_in(c, o, 0);             /* (out of memory: renewed next tick) */
}

static void renew_chunk(dl_proc_t *p, held_t *v, size_t n, dl_call_t *calls)
{
    for (size_t i = 0; i < n; i++) {
        dl_caller_t who = dl_caller(p, v[i].o);
        v[i].o->kind->calls->renew(&calls[i], &who, &(dl_renew_args_t){
            .mode = v[i].mode, .lease_ms = v[i].lease_ms, .fence = v[i].fence });
    }
    uint64_t sent = dl_now_ms();
    unsigned long epoch = dl_trust_epoch();
    dl_script_run(p->conn, calls, (int)n);
    DL_STAT_ADD(watchdog_roundtrips, 1);
    for (size_t i = 0; i < n; i++) {
        if (calls[i].cmd.err) {
            /* Redis unreachable: again next tick, or soon after a sign */
            dl_hold_unanswered(p, v[i].o, v[i].seq);
            continue;
        }
        if (DL_REPLY(&calls[i], renew).held == 1 && v[i].check) {
            dl_hold_checked(p, v[i].o, v[i].seq, v[i].cuts, sent, epoch);
            continue;
        }
        if (DL_REPLY(&calls[i], renew).held == 1) {
            DL_STAT_ADD(renewed, 1);
            /* Sure to be there until a lease from `sent`, or the end of a
             * cut made since: others may wait (the count is theirs). */
            dl_hold_renewed(p, v[i].o, v[i].seq, v[i].cuts, sent, epoch,
                            DL_REPLY(&calls[i], renew).queued);
            continue;
        }
        dl_hold_gone(v[i].o, v[i].seq);
    }
}

/* The watchdog looks again by `at` (us) at the latest (p->wmu held). */
static void wake_by(dl_proc_t *p, uint64_t at)
{
    if (at < p->wnext) {
        p->wnext = at;
        pthread_cond_signal(&p->wcv);
    }
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
        if (dl_hold_undo_end(o, c->u[i].mode, c->u[i].rid, !rc, had)) {
            /* Redis still unreachable, or a second look: again in a while */
            pthread_mutex_lock(&p->wmu);
            wake_by(p, (dl_now_ms() + DL_UNDO_AGAIN_MS) * 1000);
            pthread_mutex_unlock(&p->wmu);
        }
        dl_registry_put(&p->reg, o);
    }
    c->un = 0;
}

static void *watchdog_main(void *arg)
{
    dl_proc_t *p = arg;
    uint64_t tick = (p->cfg.lease_ms / 3 ? p->cfg.lease_ms / 3 : 1) * 1000;   /* us */
    collect_t c;
    memset(&c, 0, sizeof c);
    dl_call_t *calls = malloc(DL_RENEW_CHUNK * sizeof *calls);
    p->wbuf[0] = calls;
    uint64_t tick_at = dl_now_us() + tick;
    for (;;) {
        pthread_mutex_lock(&p->wmu);
        for (;;) {
            uint64_t now = dl_now_us(), wake = p->wnext < tick_at ? p->wnext : tick_at;
            if (now >= wake)
                break;
            struct timespec ts;
            dl_timespec_at_us(wake, &ts);
            pthread_cond_timedwait(&p->wcv, &p->wmu, &ts);
        }
        p->wnext = DL_FOREVER;
        int all_now = p->wall;
        p->wall = 0;
        pthread_mutex_unlock(&p->wmu);

        c.n = 0;
        c.un = 0;
        c.now_us = dl_now_us();
        c.now = c.now_us / 1000;
        c.all = c.now_us >= tick_at || all_now;
        c.sign = all_now;
        c.next = DL_FOREVER;
        if (c.now_us >= tick_at)
            tick_at = c.now_us + tick;
        dl_registry_each(&p->reg, collect, &c);
        p->wbuf[1] = c.v;         /* reachable from the state (leak checkers, forks) */
        dl_undo_buf = c.u;
        if (c.next != DL_FOREVER) {
            pthread_mutex_lock(&p->wmu);
            wake_by(p, c.next);
            pthread_mutex_unlock(&p->wmu);
        }
        if (c.un)
            undo_all(p, &c);
        if (!c.n)
            continue;
        if (!calls && !(calls = p->wbuf[0] = malloc(DL_RENEW_CHUNK * sizeof *calls))) {
            dl_log(DL_LOG_ERROR, "watchdog: out of memory; holds are not renewed");
        } else {
            for (size_t at = 0; at < c.n; at += DL_RENEW_CHUNK)
                renew_chunk(p, c.v + at, c.n - at < DL_RENEW_CHUNK ? c.n - at : DL_RENEW_CHUNK, calls);
            if (c.all)
                DL_STAT_ADD(watchdog_ticks, 1);
        }
        for (size_t i = 0; i < c.n; i++)
            dl_registry_put(&p->reg, c.v[i].o);
    }
    return NULL;
}

void dl_watchdog_due(dl_proc_t *p, dl_core_t *o, uint64_t due)
{
    o->renew_due = due;
    pthread_mutex_lock(&p->wmu);
    wake_by(p, due * 1000);
    pthread_mutex_unlock(&p->wmu);
}

void dl_watchdog_undue(dl_core_t *o)
{
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
