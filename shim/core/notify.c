/* SPDX-License-Identifier: BSD-3-Clause */
/* notify.c - the process's one subscriber connection.
 *
 * Every waiter of the process listens on one channel, <prefix>n:<token>,
 * subscribed once before any registration, so there is no race between
 * subscribing and the last attempt.  Redis pushes there:
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

#include "backoff.h"
#include "dl.h"
#include "hold.h"
#include "notify.h"
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

static void *notify_main(void *arg)
{
    dl_proc_t *p = arg;
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
    return NULL;
}

int dl_notify_ensure(dl_proc_t *p, uint64_t until)
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
