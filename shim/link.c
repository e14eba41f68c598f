/* SPDX-License-Identifier: BSD-3-Clause */
/* link.c - one server's shared, auto-pipelined command connection. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <hiredis/sds.h>

#include "dl.h"
#include "dl_link.h"
#include "tls.h"

struct dl_link {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    const dl_config_t *cfg;
    dl_endpoint_t ep;
    int fail_fast;
    unsigned long timeout_ms; /* connect and command timeout */
    unsigned long down_ms;
    uint64_t down_until;      /* fail_fast: monotonic ms; touched by the leader */
    char down_err[200];
    redisContext *ctx;        /* touched only by the leader */
    void *tls;                /* over TLS: ctx's session, whose I/O the link
                                 does itself (tls.h: no relay thread) */
    int leader;               /* a thread is doing I/O */
    dl_cmd_t **queue;         /* commands waiting for the next leader */
    size_t qlen, qcap;
    dl_cmd_t **batch;         /* the leader's batch (kept to reuse its memory) */
    size_t bcap;
    dl_cmd_t **inflight;      /* the batch being sent: reachable from here, so a
                                 child forked meanwhile does not leak it */
    int can_post;             /* this connection accepts CLIENT REPLY SKIP */
};

dl_link_t *dl_link_new(const dl_config_t *cfg, const dl_endpoint_t *ep, int fail_fast,
                       unsigned long timeout_ms, unsigned long down_ms)
{
    dl_link_t *k = calloc(1, sizeof *k);
    if (!k)
        return NULL;
    pthread_mutex_init(&k->mu, NULL);
    /* A follower's wait ends at its call's deadline, which dl_timespec_at
     * gives on the monotonic clock (the default, CLOCK_REALTIME, would
     * take it for a time decades past and end the wait at once). */
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&k->cv, &ca);
    pthread_condattr_destroy(&ca);
    k->cfg = cfg;
    k->ep = *ep;
    k->fail_fast = fail_fast;
    k->timeout_ms = timeout_ms;
    k->down_ms = down_ms;
    return k;
}

const dl_endpoint_t *dl_link_ep(const dl_link_t *k)
{
    return &k->ep;
}

void dl_link_abandon(dl_link_t *k)
{
    if (k && k->ctx && k->ctx->fd >= 0)
        close(k->ctx->fd);
}

/* Closes the connection (the TLS session first: redisFree closes its
 * socket). */
static void drop(dl_link_t *k)
{
    if (k->tls)
        dl_tls_free(k->tls);
    k->tls = NULL;
    if (k->ctx)
        redisFree(k->ctx);
    k->ctx = NULL;
}

void dl_link_free(dl_link_t *k)
{
    if (!k)
        return;
    drop(k);
    free(k->queue);
    free(k->batch);
    pthread_cond_destroy(&k->cv);
    pthread_mutex_destroy(&k->mu);
    free(k);
}

static void fail_all(dl_cmd_t **cmds, size_t n, const char *msg)
{
    for (size_t i = 0; i < n; i++) {
        cmds[i]->err = EIO;
        snprintf(cmds[i]->errmsg, sizeof cmds[i]->errmsg, "%s", msg);
    }
}

/* Writes the context's output buffer with send(MSG_NOSIGNAL): a server
 * that went away gives EPIPE, never a SIGPIPE that would kill the host
 * program, and no signal masking is needed on the hot path.  hiredis then
 * finds nothing left to write and only reads, which raises no signal. */
static int flush_nosignal(redisContext *ctx, void *tls, int more)
{
    size_t len = sdslen(ctx->obuf), done = 0;
    if (tls) {
        if (dl_tls_write(tls, ctx, ctx->obuf, len, more & MSG_DONTWAIT))
            return -1;
        sdsclear(ctx->obuf);
        return 0;
    }
    while (done < len) {
        ssize_t n = send(ctx->fd, ctx->obuf + done, len - done, MSG_NOSIGNAL | more);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            snprintf(ctx->errstr, sizeof ctx->errstr, "%s", strerror(errno));
            ctx->err = REDIS_ERR_IO;
            return -1;
        }
        done += (size_t)n;
    }
    sdsclear(ctx->obuf);
    return 0;
}

/* A reply on loopback or a LAN comes back within tens of microseconds:
 * polling for it that long avoids putting the thread to sleep and waking it
 * again, which costs about as much as the round trip itself.  Only the
 * leader of a link spins, and only this long; then it blocks as usual. */
#define DL_SPIN_US 40

static void spin_for_reply(redisContext *ctx, void *tls)
{
    if (tls && dl_tls_pending(tls))
        return;
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        char b;
        ssize_t r = recv(ctx->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
        if (r >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
            return;           /* data, EOF or an error: the read will tell */
        clock_gettime(CLOCK_MONOTONIC, &t);
        if ((t.tv_sec - t0.tv_sec) * 1000000L + (t.tv_nsec - t0.tv_nsec) / 1000 >= DL_SPIN_US)
            return;
    }
}

/* Behind redis-sentinel://, a server that says it is no longer the master
 * (or not ready) is left for the one the sentinels name now; the command
 * did not run. */
static int must_reroute(const dl_config_t *cfg, const redisReply *r)
{
    return cfg->scheme == DL_SCHEME_SENTINEL && r && r->type == REDIS_REPLY_ERROR &&
           (strncmp(r->str, "READONLY", 8) == 0 || strncmp(r->str, "MASTERDOWN", 10) == 0 ||
            strncmp(r->str, "LOADING", 7) == 0);
}

static void warn_rate_limited(const char *err, const dl_link_t *k)
{
    /* Callers that retry EIO (the interposer) would print a line per
     * attempt: one every 5 s is enough. */
    static uint64_t last_warn;
    uint64_t now = dl_now_ms();
    uint64_t prev = __atomic_load_n(&last_warn, __ATOMIC_RELAXED);
    if (!prev || now - prev >= 5000) {
        __atomic_store_n(&last_warn, now, __ATOMIC_RELAXED);
        if (k->fail_fast)     /* the others carry on: a redlock minority, a cluster failing over */
            dl_log(DL_LOG_INFO, "%s", err);
        else
            dl_log(DL_LOG_WARN, "%s; retrying for up to %lu ms", err, k->timeout_ms);
    }
}

/* The earliest deadline of cmds[first..n), 0 if none. */
static uint64_t batch_deadline(dl_cmd_t **cmds, size_t first, size_t n)
{
    uint64_t d = 0;
    for (size_t i = first; i < n; i++)
        if (cmds[i]->deadline && (!d || cmds[i]->deadline < d))
            d = cmds[i]->deadline;
    return d;
}

/* Moves the commands of cmds[first..*n) whose deadline has passed behind
 * the others (keeping their order), fails them, and shrinks *n to the
 * rest.  The array keeps every pointer: the caller marks them all done. */
static void expire(dl_cmd_t **cmds, size_t first, size_t *n, uint64_t now, const char *why)
{
    size_t m = *n - first, keep = 0, gone = 0;
    dl_cmd_t **tmp = malloc(m * sizeof *tmp);
    if (!tmp)
        return;                       /* they wait for the I/O time-out instead */
    for (size_t i = first; i < *n; i++)
        if (!(cmds[i]->deadline && cmds[i]->deadline <= now))
            tmp[keep++] = cmds[i];
    for (size_t i = first; i < *n; i++)
        if (cmds[i]->deadline && cmds[i]->deadline <= now) {
            tmp[keep + gone++] = cmds[i];
            cmds[i]->err = EIO;
            snprintf(cmds[i]->errmsg, sizeof cmds[i]->errmsg, "timed out waiting for %s", why);
        }
    memcpy(cmds + first, tmp, m * sizeof *tmp);
    free(tmp);
    *n = first + keep;
}

/* hiredis's read or write timed out (SO_RCVTIMEO/SO_SNDTIMEO give EAGAIN):
 * the server is there but slow or stalled, and may yet run what it was
 * sent, unlike a connection that was reset or closed. */
static int timed_out(const redisContext *ctx)
{
    return ctx->err == REDIS_ERR_IO && strstr(ctx->errstr, "temporarily unavailable");
}

/* Before giving up on a connection that timed out: the commands of
 * cmds[first..n) that end now (`all`, or those whose deadline is at or
 * before `now`) and that have an undo get it written behind them on this
 * connection.  A stalled server that resumes then runs each undo right
 * after its command, whatever the order in which it serves its other
 * connections (where the caller may have asked again).  Best effort: it
 * never waits for room in the socket (an undo cut short is never run: the
 * server discards an incomplete command at the close). */
static void write_undos(redisContext *ctx, void *tls, dl_cmd_t **cmds, size_t first, size_t n,
                        int all, uint64_t now)
{
    int any = 0;
    for (size_t i = first; i < n; i++) {
        const dl_cmd_t *c = cmds[i];
        if (c->undo_argc && c->sent && (all || (c->deadline && c->deadline <= now))) {
            redisAppendCommandArgv(ctx, c->undo_argc, c->undo_argv, c->undo_argvlen);
            any = 1;
        }
    }
    if (any && flush_nosignal(ctx, tls, MSG_DONTWAIT) == 0)
        DL_STAT_ADD(undos_written, 1);
}

static void set_timeout(redisContext *ctx, unsigned long ms)
{
    struct timeval tv = { (time_t)(ms / 1000), (suseconds_t)(ms % 1000) * 1000 };
    redisSetTimeout(ctx, tv);
}

/* Whether the server takes CLIENT REPLY SKIP from us (an ACL may forbid
 * CLIENT): posts need it, or their replies would come back unasked. */
static int probe_post(redisContext *ctx)
{
    redisReply *r = redisCommand(ctx, "CLIENT REPLY ON");
    int ok = r && r->type == REDIS_REPLY_STATUS;
    if (r)
        freeReplyObject(r);
    return ok;
}

/* The leader's I/O for one batch, without k->mu.  Each command ends with a
 * reply or EIO; a connection failure is retried (reconnect, resend what has
 * no reply yet) until the I/O timeout has passed since it began. */
static void run_batch(dl_link_t *k, dl_cmd_t **cmds, size_t n, int written)
{
    const dl_config_t *cfg = k->cfg;
    /* The I/O time-out runs from when the batch was sent, not from when a
     * failure was noticed: a stalled server is noticed only when a read
     * times out, after timeout_ms already. */
    uint64_t started = dl_now_ms();
    int shortened = 0;        /* k->ctx was opened with less than timeout_ms */
    uint64_t give_up = 0;
    unsigned backoff = 10;
    char err[200] = "";
    size_t first = 0;                 /* commands before it have replies */
    /* A connection opened by an earlier batch may be stale: the server
     * restarted, or closed it after `timeout` idle seconds.  A fail-fast
     * link gives it one fresh connection before calling the server down. */
    int may_be_stale = k->ctx != NULL, stale = 0;
    int fresh = 0;                    /* k->ctx has given no reply yet */
    if (k->fail_fast && k->down_until) {
        if (dl_now_ms() < k->down_until) {
            fail_all(cmds, n, k->down_err);
            return;
        }
        k->down_until = 0;
    }
    for (;;) {
        if (!k->ctx) {
            unsigned long budget = k->timeout_ms;
            if (give_up) {
                uint64_t now = dl_now_ms();
                budget = give_up > now ? give_up - now : 1;
            }
            /* Connecting may AUTH and SELECT through hiredis's own writes. */
            sigset_t oldmask;
            int pending;
            dl_sigpipe_block(&oldmask, &pending);
            /* A retry cut short by what is left of the time-out must not
             * hide why the first attempt failed (a certificate refused)
             * behind "timed out". */
            char cerr[200];
            k->ctx = cfg->scheme == DL_SCHEME_SENTINEL
                         ? dl_connect(cfg, 0, budget, cerr, sizeof cerr)
                         : dl_connect_ep(cfg, &k->ep, budget, cerr, sizeof cerr);
            if (!k->ctx && (!err[0] || !strstr(cerr, "timed out")))
                snprintf(err, sizeof err, "%s", cerr);
            /* (hiredis writes the probe itself: still under the mask) */
            /* Over TLS a post would sit in the relay (tls.h), which dies
             * with the process: it could not promise to reach Redis. */
            k->can_post = k->ctx && !cfg->tls && cfg->scheme != DL_SCHEME_REDLOCK &&
                          cfg->scheme != DL_SCHEME_CLUSTER && probe_post(k->ctx);
            dl_sigpipe_restore(&oldmask, pending);
            /* Set up through the relay; from here on the link drives the
             * TLS session itself. */
            if (k->ctx && cfg->tls && dl_tls_direct(k->ctx, &k->tls)) {
                redisFree(k->ctx);
                k->ctx = NULL;
                if (!err[0])
                    snprintf(err, sizeof err, "redis: TLS: could not take the connection over");
            }
            if (k->ctx) {
                fresh = 1;
                shortened = budget < k->timeout_ms;
                DL_STAT_ADD(reconnects, 1);
                if (give_up)
                    dl_log(DL_LOG_INFO, "reconnected to redis");
            }
        }
        if (k->ctx) {
            /* (written: dl_link_start sent them on this connection already) */
            for (size_t i = first; i < n && !written; i++) {
                redisAppendCommandArgv(k->ctx, cmds[i]->argc, cmds[i]->argv, cmds[i]->argvlen);
                cmds[i]->sent = 1;
            }
            DL_STAT_ADD(roundtrips, 1);
            DL_STAT_ADD(commands, n - first);
            int reroute = 0;
            /* A command with a deadline (a timed lock) waits no longer than
             * that for its reply, even when the server stalls. */
            uint64_t dl = batch_deadline(cmds, first, n), t = dl ? dl_now_ms() : 0;
            int cut = dl && dl < t + k->timeout_ms;
            if (cut)
                set_timeout(k->ctx, dl > t ? dl - t : 1);
            int ok = written || flush_nosignal(k->ctx, k->tls, 0) == 0;
            written = 0;
            if (ok) {
                spin_for_reply(k->ctx, k->tls);
                for (; first < n; first++) {
                    void *reply = NULL;
                    if ((k->tls ? dl_tls_get_reply(k->tls, k->ctx, &reply)
                                : redisGetReply(k->ctx, &reply)) != REDIS_OK)
                        break;
                    if (must_reroute(cfg, reply)) {
                        snprintf(k->ctx->errstr, sizeof k->ctx->errstr, "%s",
                                 ((redisReply *)reply)->str);
                        freeReplyObject(reply);
                        reroute = 1;
                        break;
                    }
                    cmds[first]->reply = reply;
                    fresh = 0;
                }
            }
            if (first == n) {
                /* opened with what was left of this batch's time, or cut
                 * for a deadline: later batches get the whole time-out */
                if (shortened || cut)
                    set_timeout(k->ctx, k->timeout_ms);
                break;
            }
            char name[160];
            if (cfg->scheme == DL_SCHEME_SENTINEL)
                snprintf(name, sizeof name, "master \"%.100s\"", cfg->master);
            else
                dl_ep_name(&k->ep, cfg->scheme == DL_SCHEME_UNIX, name, sizeof name);
            snprintf(err, sizeof err, "redis %.120s: %.70s%s", name,
                     k->ctx->errstr[0] ? k->ctx->errstr : "connection lost",
                     fresh ? dl_plain_hint(cfg, k->ctx) : "");
            stale = may_be_stale && !reroute &&
                    (k->ctx->err == REDIS_ERR_EOF || strstr(k->ctx->errstr, "reset") ||
                     strstr(k->ctx->errstr, "Broken pipe"));
            may_be_stale = 0;
            if (timed_out(k->ctx)) {
                /* Which of them end now, without being sent again: see the
                 * deadline and give-up checks below. */
                uint64_t now = dl_now_ms();
                int cut_over = cut && now >= dl;
                int all = !cut_over &&
                          (k->fail_fast || now >= (give_up ? give_up : started + k->timeout_ms));
                if (cut_over || all)
                    write_undos(k->ctx, k->tls, cmds, first, n, all, now);
            }
            drop(k);
            for (size_t i = first; i < n; i++)
                cmds[i]->retried = !reroute;
            if (cut && dl_now_ms() >= dl) {
                /* A deadline ran out, not the I/O time-out: those commands
                 * end here (they may still run: the caller knows from
                 * `sent`); the others are sent again at once. */
                expire(cmds, first, &n, dl_now_ms(), name);
                if (first == n)
                    break;
                continue;
            }
        }
        uint64_t now = dl_now_ms();
        if (k->fail_fast && stale) {
            stale = 0;
            continue;                 /* reconnect once, resend what has no reply */
        }
        if (k->fail_fast) {
            warn_rate_limited(err, k);
            if (k->down_ms) {
                k->down_until = now + k->down_ms;
                snprintf(k->down_err, sizeof k->down_err, "%s", err);
            }
            fail_all(cmds + first, n - first, err);
            break;
        }
        if (!give_up) {
            give_up = started + k->timeout_ms;
            warn_rate_limited(err, k);
        }
        if (now >= give_up) {
            fail_all(cmds + first, n - first, err);
            break;
        }
        uint64_t left = give_up - now;
        dl_sleep_ms((unsigned)(backoff < left ? backoff : left));
        backoff = backoff * 2 > 200 ? 200 : backoff * 2;
    }
}

/* Takes cmds[0..n) back out of the queue if no leader has taken them yet
 * (k->mu held): 1 if so. */
static int dequeue(dl_link_t *k, dl_cmd_t *cmds, int n)
{
    for (size_t i = 0; i + (size_t)n <= k->qlen; i++)
        if (k->queue[i] == &cmds[0]) {
            memmove(k->queue + i, k->queue + i + n, (k->qlen - i - (size_t)n) * sizeof *k->queue);
            k->qlen -= (size_t)n;
            return 1;
        }
    return 0;
}

/* Writes the leader's batch on the live connection without reading (k->mu
 * not held, leadership ours): 1 if all of it went out.  No connect and no
 * wait here: a link without a usable connection leaves the batch to
 * run_batch, which connects and retries as for any batch. */
static int presend(dl_link_t *k, dl_cmd_t **cmds, size_t n)
{
    if (!k->ctx || k->ctx->err || (k->fail_fast && k->down_until))
        return 0;
    for (size_t i = 0; i < n; i++) {
        redisAppendCommandArgv(k->ctx, cmds[i]->argc, cmds[i]->argv, cmds[i]->argvlen);
        cmds[i]->sent = 1;
    }
    if (flush_nosignal(k->ctx, k->tls, 0) == 0)
        return 1;
    /* Part of it may have gone out: run_batch reconnects and resends (the
     * server may have run a first copy: `retried`). */
    drop(k);
    for (size_t i = 0; i < n; i++)
        cmds[i]->retried = 1;
    return 0;
}

/* Queues cmds; with `send`, leads now if nobody does and writes the batch. */
static void start(dl_link_t *k, dl_cmd_t *cmds, int n, dl_link_op_t *op, int send)
{
    memset(op, 0, sizeof *op);
    pthread_mutex_lock(&k->mu);
    if (k->qlen + (size_t)n > k->qcap) {
        size_t cap = (k->qlen + (size_t)n) * 2;
        dl_cmd_t **q = realloc(k->queue, cap * sizeof *q);
        if (!q) {
            pthread_mutex_unlock(&k->mu);
            for (int i = 0; i < n; i++) {
                cmds[i].err = EIO;
                cmds[i].done = 1;
                snprintf(cmds[i].errmsg, sizeof cmds[i].errmsg, "out of memory");
            }
            op->failed = 1;
            return;
        }
        k->queue = q;
        k->qcap = cap;
    }
    for (int i = 0; i < n; i++) {
        cmds[i].reply = NULL;
        cmds[i].err = cmds[i].done = 0;
        cmds[i].errmsg[0] = 0;
        k->queue[k->qlen++] = &cmds[i];
    }
    if (!send || k->leader) {
        pthread_mutex_unlock(&k->mu);
        return;               /* a leader busy with its batch: ours goes next */
    }
    /* Lead now, and write the whole queue as one batch: the caller collects
     * the replies in dl_link_finish, after starting its calls elsewhere.
     * Swap buffers so followers can queue while we do I/O. */
    k->leader = 1;
    op->leading = 1;
    op->batch = k->queue;
    op->bn = k->qlen;
    op->bcap = k->qcap;
    k->queue = k->batch;
    k->qcap = k->bcap;
    k->qlen = 0;
    k->batch = NULL;
    k->bcap = 0;
    k->inflight = op->batch;
    pthread_mutex_unlock(&k->mu);
    op->written = presend(k, op->batch, op->bn);
}

void dl_link_start(dl_link_t *k, dl_cmd_t *cmds, int n, dl_link_op_t *op)
{
    start(k, cmds, n, op, 1);
}

/* The leader's end of a batch (k->mu held): every command of it is done. */
static void lead_end(dl_link_t *k, dl_cmd_t **batch, size_t bn, size_t bcap)
{
    k->inflight = NULL;
    for (size_t i = 0; i < bn; i++)
        __atomic_store_n(&batch[i]->done, 1, __ATOMIC_RELEASE);
    if (!k->batch) {
        k->batch = batch;
        k->bcap = bcap;
    } else {
        free(batch);
    }
    k->leader = 0;
    pthread_cond_broadcast(&k->cv);
}

int dl_link_finish(dl_link_t *k, dl_cmd_t *cmds, int n, dl_link_op_t *op)
{
    if (op->failed)
        return EIO;
    if (op->leading) {
        run_batch(k, op->batch, op->bn, op->written);
        pthread_mutex_lock(&k->mu);
        lead_end(k, op->batch, op->bn, op->bcap);
    } else {
        pthread_mutex_lock(&k->mu);
    }
    uint64_t deadline = 0;
    for (int i = 0; i < n; i++)
        if (cmds[i].deadline && (!deadline || cmds[i].deadline < deadline))
            deadline = cmds[i].deadline;
    /* Our commands are done when the last one is: replies come in order. */
    while (!__atomic_load_n(&cmds[n - 1].done, __ATOMIC_ACQUIRE)) {
        if (k->leader) {
            if (!deadline) {
                pthread_cond_wait(&k->cv, &k->mu);
                continue;
            }
            struct timespec ts;
            dl_timespec_at(deadline, &ts);
            if (pthread_cond_timedwait(&k->cv, &k->mu, &ts) != ETIMEDOUT)
                continue;
            if (dequeue(k, cmds, n)) {
                /* Never sent: the leader is stuck on a stalled server. */
                for (int i = 0; i < n; i++) {
                    cmds[i].err = EIO;
                    snprintf(cmds[i].errmsg, sizeof cmds[i].errmsg,
                             "timed out waiting for redis (a round trip before it is stuck)");
                }
                pthread_mutex_unlock(&k->mu);
                return EIO;
            }
            /* In the leader's batch already: it gives them up at this same
             * deadline (batch_deadline) and wakes us when its batch ends.
             * Wait for that without a time-out: with one already past,
             * the wait would return at once, again and again (a spin). */
            deadline = 0;
            continue;
        }
        k->leader = 1;
        /* Take the whole queue as one batch; swap buffers so followers can
         * queue while we do I/O. */
        dl_cmd_t **batch = k->queue;
        size_t bn = k->qlen, bcap = k->qcap;
        k->queue = k->batch;
        k->qcap = k->bcap;
        k->qlen = 0;
        k->batch = NULL;
        k->bcap = 0;
        k->inflight = batch;
        pthread_mutex_unlock(&k->mu);
        run_batch(k, batch, bn, 0);
        pthread_mutex_lock(&k->mu);
        lead_end(k, batch, bn, bcap);
    }
    pthread_mutex_unlock(&k->mu);
    for (int i = 0; i < n; i++)
        if (cmds[i].err)
            return EIO;
    return 0;
}

int dl_link_exec(dl_link_t *k, dl_cmd_t *cmds, int n)
{
    /* Alone, it leads (or follows) in dl_link_finish, as it always did. */
    dl_link_op_t op;
    start(k, cmds, n, &op, 0);
    return dl_link_finish(k, cmds, n, &op);
}

int dl_link_post(dl_link_t *k, int argc, const char **argv, const size_t *argvlen)
{
    static const char *skip[3] = { "CLIENT", "REPLY", "SKIP" };
    static const size_t skiplen[3] = { 6, 5, 4 };
    pthread_mutex_lock(&k->mu);
    /* Only on a live connection that no leader is using: a post never
     * connects and never waits for another thread's round trip. */
    int rc = EAGAIN;
    if (!k->leader && k->ctx && !k->ctx->err && k->can_post) {
        /* No reply: nothing is left unread in our socket, whose close (the
         * process ending) then sends what it holds instead of a reset.
         * MSG_MORE: the kernel keeps the bytes until the next command goes
         * out (or the socket closes), so a post costs no packet of its own
         * and no wake-up of the server; they arrive in order, before it. */
        redisAppendCommandArgv(k->ctx, 3, skip, skiplen);
        redisAppendCommandArgv(k->ctx, argc, argv, argvlen);
        if (flush_nosignal(k->ctx, k->tls, MSG_MORE) == 0) {
            DL_STAT_ADD(commands, 1);
            rc = 0;
        } else {
            drop(k);                      /* the next batch reconnects */
        }
    }
    pthread_mutex_unlock(&k->mu);
    return rc;
}
