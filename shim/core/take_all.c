/* SPDX-License-Identifier: BSD-3-Clause */
/* take_all.c - taking the Redis holds of several objects in one call, all
 * or none (take_all.h).
 *
 * One call (the kind's acquire_all) takes every hold if every one is free
 * with nobody queued, else nothing.  Then, as dl_take does for one hold
 * (take.c): ?wait=N's replicas must have them, and last each hold must be
 * within its validity and in the current trust epoch, or be confirmed
 * (renewed, a fixed lease checked); a hold that cannot be is given back
 * with all the others (withdrawn by the registration id, which puts back
 * a death trace it consumed).  The objects' state is their primitive's
 * and hold.c's: the caller records what this returns.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "call_acquire_all.h"
#include "call_renew.h"
#include "call_withdraw.h"
#include "call_withdraw_all.h"
#include "distlock.h"
#include "dl.h"
#include "hold.h"
#include "take_all.h"
#include "tenure.h"
#include "trust.h"

/* How many times in a row the call for the set is asked again after the
 * link ended it unanswered rather than send it twice (dl_cmd_t.once):
 * each is a round trip cut short by another thread's deadline. */
#define DL_TAKE_ALL_AGAIN_MAX 8

/* Every hold of v withdrawn, by the registration id they share, in one
 * batch; a withdrawal that fails leaves g.maybe (the caller has it
 * withdrawn later). */
static void give_back(dl_proc_t *p, dl_take_one_t *v, int n, uint64_t rid)
{
    dl_call_t *c = malloc((size_t)n * sizeof *c);
    dl_caller_t *who = malloc((size_t)n * sizeof *who);
    if (c && who) {
        for (int i = 0; i < n; i++) {
            who[i] = dl_caller(p, v[i].o);
            v[i].o->kind->calls->withdraw(&c[i], &who[i], &(dl_withdraw_args_t){
                .mode = v[i].rq->mode, .regid = rid });
        }
        dl_script_run(p->conn, c, n);
    }
    for (int i = 0; i < n; i++)
        v[i].g.maybe = !c || !who || c[i].cmd.err;
    free(c);
    free(who);
}

/* SPEC "Local trust", as take.c's take_in_time for each hold: the reply
 * came within every hold's validity and no sign of lost state came while
 * the call was under way, or every hold is confirmed now (in one batch of
 * renewals).  0: they stand; EBUSY: one had lapsed, all given back; EIO. */
static int in_time(dl_proc_t *p, dl_take_one_t *v, int n, uint64_t rid)
{
    uint64_t now = dl_now_ms();
    int late = 0, moved = 0;
    for (int i = 0; i < n; i++) {
        late |= now >= v[i].g.valid_until;
        moved |= v[i].g.epoch != dl_trust_epoch();
    }
    if (!late && !moved)
        return 0;
    dl_call_t *c = malloc((size_t)n * sizeof *c);
    dl_caller_t *who = malloc((size_t)n * sizeof *who);
    if (!c || !who) {
        free(c);
        free(who);
        for (int i = 0; i < n; i++)
            v[i].g.maybe = 1;
        return dl_fail(ENOMEM, "out of memory");
    }
    /* A fixed lease past its validity cannot be confirmed without
     * extending it: given back, as take_in_time does. */
    int lapsed = 0;
    for (int i = 0; i < n; i++)
        lapsed |= v[i].rq->lease_ms && now >= v[i].g.valid_until;
    int rc = 0;
    if (!lapsed) {
        unsigned long epoch = dl_trust_epoch();
        uint64_t sent = dl_now_ms();
        for (int i = 0; i < n; i++) {
            who[i] = dl_caller(p, v[i].o);
            v[i].o->kind->calls->renew(&c[i], &who[i], &(dl_renew_args_t){
                .mode = v[i].rq->mode, .lease_ms = v[i].rq->lease_ms ? 0 : p->cfg.lease_ms,
                .fence = v[i].g.fence });
        }
        if (dl_script_run(p->conn, c, n)) {
            for (int i = 0; i < n; i++)
                v[i].g.maybe = 1;
            rc = dl_fail(EIO, "lock-all: confirming the holds taken (%s) failed: %s",
                         late ? "Redis answered after their validity"
                              : "Redis may have lost state meanwhile", c[0].cmd.errmsg);
        } else {
            for (int i = 0; i < n; i++)
                lapsed |= DL_REPLY(&c[i], renew).held != 1;
            for (int i = 0; i < n && !lapsed; i++) {
                if (!v[i].rq->lease_ms)
                    v[i].g.valid_until = dl_tenure_valid_until(sent, p->cfg.lease_ms);
                v[i].g.sent_ms = sent;
                v[i].g.epoch = epoch;
            }
        }
    }
    free(c);
    free(who);
    if (rc || !lapsed)
        return rc;
    dl_log(DL_LOG_INFO, "lock-all: %s; the holds are given back and asked for again",
           late ? "Redis answered after a hold's validity ended"
                : "Redis lost a hold while the call was under way");
    give_back(p, v, n, rid);
    return EBUSY;
}

/* What one acquire_all call sends: each lock's keys and lease, the list
 * the script reads them from, and room for each lock's answer. */
typedef struct all_set {
    dl_all_lock_t *locks;
    dl_all_item_t *items;
    char *list;
    size_t listlen;
    char *olders;                 /* redlock: acquire_all.lua's ARGV[7], or NULL */
    size_t olderslen;
} all_set_t;

static void set_free(all_set_t *set)
{
    free(set->locks);
    free(set->items);
    free(set->list);
    free(set->olders);
}

/* redlock: each lock's fence of the process's last hold told EOWNERDEAD
 * (dl_hold_rare_t.told_older): a death trace older than it, left on a server
 * whose release is still owed, is no lapse to tell the process again.
 * NULL (nothing sent) when there is none.  0, or -1 (out of memory). */
static int set_olders(const dl_take_one_t *v, int n, all_set_t *set)
{
    uint64_t *f = malloc((size_t)n * sizeof *f);
    if (!f)
        return -1;
    int any = 0;
    for (int i = 0; i < n; i++) {
        pthread_mutex_lock(&v[i].o->mu);
        f[i] = dl_hold_told_older(v[i].o);
        pthread_mutex_unlock(&v[i].o->mu);
        any |= f[i] != 0;
    }
    if (any && (set->olders = malloc((size_t)n * 21 + 1))) {
        size_t at = 0;
        for (int i = 0; i < n; i++)
            at += (size_t)sprintf(set->olders + at, "%s%llu", i ? "," : "",
                                  (unsigned long long)f[i]);
        set->olderslen = at;
    }
    free(f);
    return any && !set->olders ? -1 : 0;
}

/* 0, or -1 (out of memory, nothing kept). */
static int set_new(dl_proc_t *p, const dl_take_one_t *v, int n, all_set_t *set)
{
    memset(set, 0, sizeof *set);
    set->locks = malloc((size_t)n * sizeof *set->locks);
    set->items = malloc((size_t)n * sizeof *set->items);
    if (set->locks) {
        for (int i = 0; i < n; i++) {
            const dl_req_t *rq = v[i].rq;
            set->locks[i] = (dl_all_lock_t){ dl_core_allkeys(v[i].o),
                                             dl_core_allkeylens(v[i].o),
                                             rq->lease_ms ? rq->lease_ms : p->cfg.lease_ms,
                                             dl_core_key(v[i].o), v[i].o->keylen };
        }
        if ((set->list = malloc(dl_acquire_all_list_size(set->locks, n))))
            set->listlen = dl_acquire_all_list(set->locks, n, set->list);
    }
    if (!set->locks || !set->items || !set->list || set_olders(v, n, set)) {
        set_free(set);
        return -1;
    }
    return 0;
}

/* The call took every lock of the set (reply r, us its round trip): each
 * grant recorded, then ?wait=N's replicas and each hold's validity and
 * trust checked (the whole set given back when one fails).  0,
 * EOWNERDEAD, EBUSY (asked again), EIO. */
static int took_all(dl_proc_t *p, dl_take_one_t *v, int n, const all_set_t *set,
                    const dl_acquire_all_reply_t *r, uint64_t rid, uint64_t us,
                    uint64_t asked_at, unsigned long epoch)
{
    int dead = 0;
    for (int i = 0; i < n; i++) {
        dl_grant_t *g = &v[i].g;
        const dl_all_item_t *it = &set->items[i];
        dl_hold_rtt(v[i].o, us);
        g->fence = it->fence;
        g->dead = it->dead;
        g->claimed = it->claimed;
        g->was = it->was;
        g->rid = rid;
        g->servers = r->servers;
        /* Taken by this call, or found ours and claimed by it: either
         * way its TTL was set to the lease after the call was sent
         * (acquire_all.lua's claim_hold, or the first copy of this
         * very call, resent). */
        g->valid_until = dl_tenure_valid_until(asked_at, set->locks[i].lease_ms);
        g->sent_ms = asked_at;
        g->epoch = epoch;
        dead |= g->dead;
    }
    char err[200];
    if (p->cfg.wait_replicas &&
        dl_conn_wait(p->conn, dl_core_key(v[0].o), v[0].o->keylen, err, sizeof err)) {
        give_back(p, v, n, rid);
        return dl_fail(EIO, "lock-all of %d locks: %s; the acquisition was undone", n, err);
    }
    int trc = in_time(p, v, n, rid);
    return trc ? trc : dead ? EOWNERDEAD : 0;
}

/* One call for the set as sent: what it asked with, and when. */
typedef struct ask {
    dl_call_t c;
    uint64_t rid, asked_at, sent_us;
    unsigned long epoch;
} ask_t;

/* Sends the call for the set (set_new's: its locks, as acquire_all.lua
 * takes them, and where its reply goes) under a new registration id, until
 * the link gives it an answer or an error of its own.  0, or the run's
 * error (a->c.cmd says which). */
static int ask_all(dl_proc_t *p, dl_take_one_t *v, int n, uint64_t deadline, const all_set_t *set,
                   ask_t *a)
{
    char info[200];
    size_t infolen = dl_proc_info(p, info, sizeof info);
    dl_caller_t who = dl_caller(p, v[0].o);
    for (int agains = 0;; agains++) {
        a->rid = __atomic_add_fetch(&p->regseq, 1, __ATOMIC_RELAXED);
        v[0].o->kind->calls->acquire_all(&a->c, &who, &(dl_acquire_all_args_t){
            .n = n, .locks = set->locks, .list = set->list, .listlen = set->listlen,
            .info = info, .infolen = infolen, .regid = a->rid, .out = set->items,
            .olders = set->olders, .olderslen = set->olderslen });
        /* A timed lock waits for a stalled server no longer than its
         * deadline; one already past (or too near for a wait) asks once,
         * as a trylock. */
        a->c.deadline = dl_round_trip_cut(deadline);
        /* Should the link give up on a stalled server after sending this,
         * the server may run it when it resumes and take every lock of the
         * set: the withdrawal of exactly what this request takes then runs
         * right after it, on the same connection (lua/withdraw_all.lua;
         * redlock: on each server, the acquire_all entry's undo_for).  As
         * take.c's take_ask; the caller has each lock withdrawn from a new
         * connection as well (dl_hold_undo_later), in case the undo found
         * no room.  Nor is it sent twice (dl_cmd_t.once): a second copy
         * answered "busy" while the first still waits in a stalled
         * connection would leave the set to the first. */
        dl_call_t undo;
        v[0].o->kind->calls->withdraw_all(&undo, &who, &(dl_withdraw_all_args_t){
            .list = set->list, .listlen = set->listlen, .regid = a->rid });
        a->c.once = 1;
        a->epoch = dl_trust_epoch();
        a->asked_at = dl_now_ms();
        a->sent_us = dl_now_us();
        int rc = dl_script_run_undoable(p->conn, &a->c, &undo);
        if (!rc || a->c.cmd.err != EAGAIN || agains == DL_TAKE_ALL_AGAIN_MAX)
            return rc;
        /* Ended unanswered, its undo behind it: asked again under a new
         * id, each lock withdrawn by the watchdog too (a later id is left
         * alone). */
        for (int i = 0; i < n; i++) {
            pthread_mutex_lock(&v[i].o->mu);
            dl_hold_undo_later(p, v[i].o, v[i].rq->mode, a->rid);
            pthread_mutex_unlock(&v[i].o->mu);
        }
    }
}

int dl_take_all(dl_proc_t *p, dl_take_one_t *v, int n, uint64_t deadline, int *busy)
{
    *busy = -1;
    for (int i = 0; i < n; i++)
        memset(&v[i].g, 0, sizeof v[i].g);
    all_set_t set;
    if (set_new(p, v, n, &set))
        return dl_fail(ENOMEM, "out of memory");
    ask_t a;
    int rc = ask_all(p, v, n, deadline, &set, &a);
    dl_call_t *c = &a.c;
    uint64_t rid = a.rid;
    const dl_acquire_all_reply_t *r = &DL_REPLY(c, acquire_all);
    if (rc) {
        for (int i = 0; i < n; i++) {
            v[i].g.maybe = c->cmd.sent;
            v[i].g.rid = rid;
        }
        rc = c->deadline && dl_now_ms() >= c->deadline
                 ? ETIMEDOUT
                 : dl_fail(EIO, "lock-all of %d locks: %s", n, c->cmd.errmsg);
    } else if (r->got == 1) {
        rc = took_all(p, v, n, &set, r, rid, dl_now_us() - a.sent_us, a.asked_at, a.epoch);
    } else if (r->got == 0) {
        *busy = r->busy;
        rc = EBUSY;
    } else if (r->got == 2) {
        rc = EAGAIN;
    } else if (r->got == 3) {
        *busy = r->busy;
        v[r->busy].g.unrec = r->mark;
        rc = ENOTRECOVERABLE;
    } else {
        rc = dl_fail(EIO, "lock-all of %d locks: unexpected reply from Redis", n);
    }
    for (int i = 0; i < n; i++)
        v[i].g.rid = rid;
    dl_call_free_reply(c);
    set_free(&set);
    return rc;
}
