/* SPDX-License-Identifier: BSD-3-Clause */
/* notify.c - the process's subscriber: one connection, or on a cluster
 * one per node (conn/shardsub.c).
 *
 * Every waiter of the process listens on one channel, <prefix>n:<token>,
 * subscribed once before any registration, so there is no race between
 * subscribing and the last attempt.  On redis-cluster:// the channels are
 * one per slot instead (conn/channel.h), pushed with SPUBLISH inside the
 * slot's shard: a waiter has the slot of its object subscribed before it
 * registers, the registry tells us of every object made and freed so that
 * a slot no object of ours is in any more is unsubscribed, and after a
 * slot's subscription was lost and made again its waiters ask Redis.
 * Redis pushes:
 *   "g REGID FENCE DEAD MORE KEY"  the object whose main key is KEY was
 *                                  granted to registration REGID
 *   "w KEY"                        another process queued for KEY, which we hold
 *   "r KEY"                        `distlock break` removed our hold on KEY
 *   "u KEY"                        KEY, a lock we queue for, was left
 *                                  unrecoverable (a robust holder's unlock
 *                                  without dist_mutex_consistent): our waiter
 *                                  asks again, and is refused at once
 *   "k REGID KEY"                  registration REGID of ours on KEY was
 *                                  woken (a condition's signal): the
 *                                  object's kind is told (dl_kind_t.woken)
 * After a reconnection every waiter asks Redis again, since pushes sent
 * while we were away are lost.  A key names its object's kind and name
 * (keys.h), so one dispatch serves every kind: the registry finds the
 * object, and its waiter or hold (take.c, hold.c) is told.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backoff.h"
#include "cluster.h"
#include "dl.h"
#include "hold.h"
#include "notify.h"
#include "shardsub.h"
#include "take.h"
#include "trust.h"

static int next_word(const char **s, const char *end, unsigned long long *v)
{
    const char *p = *s;
    if (p >= end || *p < '0' || *p > '9')
        return -1;
    unsigned long long x = 0;
    while (p < end && *p >= '0' && *p <= '9')
        x = x * 10 + (unsigned long long)(*p++ - '0');
    if (p >= end || *p != ' ')
        return -1;
    *v = x;
    *s = p + 1;
    return 0;
}

static void dispatch(dl_proc_t *p, const char *msg, size_t len)
{
    const char *end = msg + len, *s = msg + 2;
    if (len < 3 || msg[1] != ' ')
        return;
    if (msg[0] == 'g') {
        unsigned long long regid, fence, dead, more;
        if (next_word(&s, end, &regid) || next_word(&s, end, &fence) ||
            next_word(&s, end, &dead) || next_word(&s, end, &more))
            return;
        dl_core_t *o = dl_registry_find_key(&p->reg, p->cfg.prefix, s, (size_t)(end - s));
        if (!o)
            return;
        dl_take_granted(o, regid, fence, dead != 0, more != 0);
        pthread_mutex_unlock(&o->mu);
    } else if (msg[0] == 'r') {
        /* `distlock break` removed a hold of ours: the process's threads
         * must not pass it on (lua/break.lua). */
        char why[160];
        char q[96];
        snprintf(why, sizeof why, "lock %s was broken (distlock break)",
                 dl_quote(s, (size_t)(end - s), q, sizeof q));
        dl_trust_end(why);
    } else if (msg[0] == 'k') {
        unsigned long long regid;
        if (next_word(&s, end, &regid))
            return;
        dl_core_t *o = dl_registry_find_key(&p->reg, p->cfg.prefix, s, (size_t)(end - s));
        if (!o)
            return;
        if (o->kind->woken)
            o->kind->woken(o, regid);
        pthread_mutex_unlock(&o->mu);
    } else if (msg[0] == 'u') {
        dl_core_t *o = dl_registry_find_key(&p->reg, p->cfg.prefix, s, (size_t)(end - s));
        if (!o)
            return;
        dl_take_recheck(o);
        pthread_mutex_unlock(&o->mu);
    } else if (msg[0] == 'w') {
        dl_core_t *o = dl_registry_find_key(&p->reg, p->cfg.prefix, s, (size_t)(end - s));
        if (!o)
            return;
        dl_hold_waited_on(o);
        pthread_mutex_unlock(&o->mu);
    }
}

static void recheck(dl_core_t *o, void *arg)
{
    dl_take_recheck(o);
    if (o->kind->recheck)
        o->kind->recheck(o);
}

/* --- on a cluster: a connection per node, a channel per slot --- */

static unsigned slot_of(const dl_core_t *o)
{
    return dl_cluster_slot(dl_core_key(o), o->keylen);
}

/* The registry's hooks (its mutex held): the objects of each slot. */
static void obj_made(dl_core_t *o, void *arg)
{
    dl_proc_t *p = arg;
    p->nslot_objs[slot_of(o)]++;
}

static void obj_gone(dl_core_t *o, void *arg)
{
    dl_proc_t *p = arg;
    unsigned s = slot_of(o);
    if (p->nslot_objs[s] && --p->nslot_objs[s] == 0)
        dl_shardsub_want(p->shards, s, 0);
}

static void on_push(void *arg, const char *msg, size_t len)
{
    dispatch(arg, msg, len);
}

static void recheck_slots(dl_core_t *o, void *arg)
{
    const unsigned char *slots = arg;
    unsigned s = slot_of(o);
    if (slots[s / 8] & (1u << (s % 8)))
        recheck(o, NULL);
}

static void on_resubscribed(void *arg, const unsigned char *slots)
{
    dl_proc_t *p = arg;
    int n = 0;
    for (int i = 0; i < DL_SLOTS / 8; i++)
        n += __builtin_popcount(slots[i]);
    DL_STAT_ADD(reconnects, 1);
    dl_log(DL_LOG_INFO, "subscriber: %d slot(s) subscribed again; their waiters ask Redis", n);
    dl_registry_each(&p->reg, recheck_slots, (void *)slots);
}

int dl_notify_init(dl_proc_t *p)
{
    if (!dl_chans_by_slot(p->chans))
        return 0;
    dl_shardsub_hooks_t hooks = { on_push, on_resubscribed, p };
    p->nslot_objs = calloc(DL_SLOTS, sizeof *p->nslot_objs);
    p->shards = p->nslot_objs ? dl_shardsub_new(p->conn, &p->cfg, p->chans, &hooks) : NULL;
    if (!p->shards) {
        free(p->nslot_objs);
        p->nslot_objs = NULL;
        return ENOMEM;
    }
    pthread_mutex_lock(&p->reg.mu);
    p->reg.made = obj_made;
    p->reg.gone = obj_gone;
    p->reg.watch_arg = p;
    pthread_mutex_unlock(&p->reg.mu);
    return 0;
}

void dl_notify_abandon(dl_proc_t *p)
{
    if (p->sub && p->sub->fd >= 0)
        close(p->sub->fd);
    if (p->shards)
        dl_shardsub_abandon(p->shards);
}

/* --- elsewhere: the process's one channel --- */

/* The classic subscriber: one connection, SUBSCRIBEd to the process's
 * channel, made again whenever it is lost.  Never returns. */
static void classic_run(dl_proc_t *p)
{
    dl_backoff_t backoff;
    dl_backoff_init(&backoff, 20, 500);
    int ever = 0;
    for (;;) {
        char err[200];
        redisContext *c = dl_connect_any(&p->cfg, p->cfg.io_timeout_ms, err, sizeof err);
        redisReply *r = NULL;
        if (c) {
            r = redisCommand(c, "SUBSCRIBE %b", p->channel, p->channel_len);
            if (!r || r->type != REDIS_REPLY_ARRAY) {
                snprintf(err, sizeof err, "subscribe failed: %s%s",
                         r && r->type == REDIS_REPLY_ERROR ? r->str : c->errstr,
                         r ? "" : dl_plain_hint(&p->cfg, c));
                redisFree(c);
                c = NULL;
            }
            if (r)
                freeReplyObject(r);
        }
        if (!c) {
            pthread_mutex_lock(&p->nmu);
            snprintf(p->nerr, sizeof p->nerr, "%s", err);
            if (dl_refused())
                pthread_cond_broadcast(&p->ncv);  /* a bad configuration: nobody waits it out */
            pthread_mutex_unlock(&p->nmu);
            dl_backoff_wait(&backoff, 0);
            continue;
        }
        dl_backoff_reset(&backoff);
        pthread_mutex_lock(&p->nmu);
        p->sub = c;
        p->nsubscribed = 1;
        p->nerr[0] = 0;           /* what failed before is past */
        pthread_cond_broadcast(&p->ncv);
        pthread_mutex_unlock(&p->nmu);
        if (ever) {
            DL_STAT_ADD(reconnects, 1);
            dl_log(DL_LOG_INFO, "subscriber reconnected; waiters ask Redis again");
            dl_registry_each(&p->reg, recheck, NULL);
        }
        ever = 1;

        for (;;) {
            struct pollfd pfd = { c->fd, POLLIN, 0 };
            int n = poll(&pfd, 1, 1000);
            if (n < 0 && errno == EINTR)
                continue;
            if (n == 0)
                continue;
            if (n < 0 || redisBufferRead(c) != REDIS_OK)
                break;
            void *reply;
            int ok = 1;
            while ((ok = redisGetReplyFromReader(c, &reply)) == REDIS_OK && reply) {
                redisReply *m = reply;
                if (m->type == REDIS_REPLY_ARRAY && m->elements == 3 &&
                    m->element[2]->type == REDIS_REPLY_STRING &&
                    strcmp(m->element[0]->str, "message") == 0)
                    dispatch(p, m->element[2]->str, m->element[2]->len);
                freeReplyObject(m);
            }
            if (ok != REDIS_OK)
                break;
        }
        pthread_mutex_lock(&p->nmu);
        p->nsubscribed = 0;
        p->sub = NULL;
        pthread_mutex_unlock(&p->nmu);
        redisFree(c);
        /* Often the first to see a server restart (it was waiting on the
         * socket): a sign (trust.h), and pushes sent meanwhile are lost. */
        dl_trust_end("redis: the subscriber's connection was lost");
    }
}

static void *notify_main(void *arg)
{
    dl_proc_t *p = arg;
    if (p->shards)
        dl_shardsub_run(p->shards);       /* a cluster: a connection per node */
    else
        classic_run(p);
    return NULL;
}

int dl_notify_ensure(dl_proc_t *p, const dl_core_t *o, uint64_t until)
{
    int rc = 0;
    pthread_mutex_lock(&p->nmu);
    if (!p->nstarted) {
        if (dl_thread_start(notify_main, p)) {
            pthread_mutex_unlock(&p->nmu);
            return dl_fail(EIO, "cannot start the subscriber thread");
        }
        p->nstarted = 1;
    }
    uint64_t start = dl_now_ms(), deadline = start + p->cfg.io_timeout_ms;
    if (until < deadline)
        deadline = until;
    if (p->shards) {
        pthread_mutex_unlock(&p->nmu);
        unsigned s = slot_of(o);
        char err[200];
        dl_shardsub_want(p->shards, s, 1);
        rc = dl_shardsub_wait(p->shards, s, deadline, err, sizeof err);
        if (rc && err[0])
            dl_log(DL_LOG_INFO, "subscriber: %s", err);
        return rc;
    }
    while (!p->nsubscribed) {
        if (p->nerr[0] && dl_refused()) {
            rc = dl_fail(EIO, "%s", p->nerr);      /* the caller's code says EINVAL */
            break;
        }
        if (dl_now_ms() >= deadline) {
            char msg[DL_ERRMAX];
            rc = p->nerr[0] ? dl_fail(EIO, "%s", dl_unreachable(&p->cfg, p->nerr, deadline - start,
                                                                 msg, sizeof msg))
                            : EAGAIN;
            break;
        }
        struct timespec ts;
        dl_timespec_at(deadline, &ts);
        pthread_cond_timedwait(&p->ncv, &p->nmu, &ts);
    }
    pthread_mutex_unlock(&p->nmu);
    return rc;
}
