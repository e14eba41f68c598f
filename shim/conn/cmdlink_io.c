/* SPDX-License-Identifier: BSD-3-Clause */
/* cmdlink_io.c - one link's connection and one batch's round trip on it
 * (see cmdlink_io.h). */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <hiredis/sds.h>

#include "cmdlink_io.h"
#include "connect.h"
#include "dl.h"
#include "tls.h"
#include "trust.h"

void dl_link_io_abandon(dl_link_io_t *io)
{
    if (io->ctx && io->ctx->fd >= 0)
        close(io->ctx->fd);
}

/* Closes the connection (the TLS session first: redisFree closes its
 * socket). */
void dl_link_io_drop(dl_link_io_t *io)
{
    if (io->tls)
        dl_tls_free(io->tls);
    io->tls = NULL;
    if (io->ctx)
        redisFree(io->ctx);
    io->ctx = NULL;
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
            /* What went out is gone from the buffer: anything written
             * behind it on this socket (an undo) must not repeat it. */
            sdsrange(ctx->obuf, (int)done, -1);
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


static void warn_rate_limited(const char *err, const dl_link_io_t *io)
{
    /* Callers that retry EIO (the interposer) would print a line per
     * attempt: one every 5 s is enough. */
    static uint64_t last_warn;
    uint64_t now = dl_now_ms();
    uint64_t prev = __atomic_load_n(&last_warn, __ATOMIC_RELAXED);
    if (!prev || now - prev >= 5000) {
        __atomic_store_n(&last_warn, now, __ATOMIC_RELAXED);
        if (io->conf.fail_fast)   /* the others carry on: a redlock minority, a cluster failing over */
            dl_log(DL_LOG_INFO, "%s", err);
        else
            dl_log(DL_LOG_WARN, "%s; retrying for up to %lu ms", err, io->conf.timeout_ms);
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

/* Without the link's mutex: only its leader runs a batch. */
void dl_link_io_run(dl_link_io_t *io, dl_cmd_t **cmds, size_t n, int written)
{
    const dl_link_conf_t *conf = &io->conf;
    const dl_config_t *cfg = conf->cfg;
    /* The I/O time-out runs from when the batch was sent, not from when a
     * failure was noticed: a stalled server is noticed only when a read
     * times out, after timeout_ms already. */
    uint64_t started = dl_now_ms();
    int shortened = 0;        /* io->ctx was opened with less than timeout_ms */
    uint64_t give_up = 0;
    unsigned backoff = 10;
    char err[200] = "";
    size_t first = 0;                 /* commands before it have replies */
    /* A connection opened by an earlier batch may be stale: the server
     * restarted, or closed it after `timeout` idle seconds.  A fail-fast
     * link gives it one fresh connection before calling the server down. */
    int may_be_stale = io->ctx != NULL, stale = 0;
    int fresh = 0;                    /* io->ctx has given no reply yet */
    if (conf->fail_fast && io->down_until) {
        if (dl_now_ms() < io->down_until && !cmds[0]->probe) {
            fail_all(cmds, n, io->down_err);
            return;
        }
        io->down_until = 0;
    }
    for (;;) {
        if (!io->ctx) {
            unsigned long budget = conf->timeout_ms;
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
            io->ctx = conf->dial(cfg, &conf->ep, budget, cerr, sizeof cerr);
            if (!io->ctx && (!err[0] || !strstr(cerr, "timed out")))
                snprintf(err, sizeof err, "%s", cerr);
            /* (hiredis writes the probe itself: still under the mask) */
            /* Over TLS a post would sit in the relay (tls.h), which dies
             * with the process: it could not promise to reach Redis. */
            io->can_post = io->ctx && !cfg->tls && conf->may_post && probe_post(io->ctx);
            dl_sigpipe_restore(&oldmask, pending);
            /* Set up through the relay; from here on the link drives the
             * TLS session itself. */
            if (io->ctx && cfg->tls && dl_tls_direct(io->ctx, &io->tls)) {
                redisFree(io->ctx);
                io->ctx = NULL;
                if (!err[0])
                    snprintf(err, sizeof err, "redis: TLS: could not take the connection over");
            }
            if (io->ctx) {
                fresh = 1;
                shortened = budget < conf->timeout_ms;
                /* A link's first connection is no reconnection (the
                 * metrics file reports this count). */
                if (io->connected)
                    DL_STAT_ADD(reconnects, 1);
                io->connected = 1;
                if (give_up)
                    dl_log(DL_LOG_INFO, "reconnected to redis");
            }
            if (!io->ctx && dl_refused()) {
                /* The server refused the configuration (connect.c: no
                 * such database): no retry mends it. */
                fail_all(cmds + first, n - first, err);
                break;
            }
        }
        if (io->ctx) {
            /* (written: dl_link_start sent them on this connection already) */
            for (size_t i = first; i < n && !written; i++) {
                redisAppendCommandArgv(io->ctx, cmds[i]->argc, cmds[i]->argv, cmds[i]->argvlen);
                cmds[i]->sent = 1;
            }
            DL_STAT_ADD(roundtrips, 1);
            DL_STAT_ADD(commands, n - first);
            int reroute = 0;
            /* A command with a deadline (a timed lock) waits no longer than
             * that for its reply, even when the server stalls. */
            uint64_t dl = batch_deadline(cmds, first, n), t = dl ? dl_now_ms() : 0;
            int cut = dl && dl < t + conf->timeout_ms;
            if (cut)
                set_timeout(io->ctx, dl > t ? dl - t : 1);
            int ok = written || flush_nosignal(io->ctx, io->tls, 0) == 0;
            written = 0;
            if (ok) {
                spin_for_reply(io->ctx, io->tls);
                for (; first < n; first++) {
                    void *reply = NULL;
                    if ((io->tls ? dl_tls_get_reply(io->tls, io->ctx, &reply)
                                 : redisGetReply(io->ctx, &reply)) != REDIS_OK)
                        break;
                    if (conf->reroute && reply && conf->reroute(reply)) {
                        snprintf(io->ctx->errstr, sizeof io->ctx->errstr, "%s",
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
                    set_timeout(io->ctx, conf->timeout_ms);
                break;
            }
            const char *name = conf->name;
            snprintf(err, sizeof err, "redis %.120s: %.70s%s", name,
                     io->ctx->errstr[0] ? io->ctx->errstr : "connection lost",
                     fresh ? dl_plain_hint(cfg, io->ctx) : "");
            stale = may_be_stale && !reroute &&
                    (io->ctx->err == REDIS_ERR_EOF || strstr(io->ctx->errstr, "reset") ||
                     strstr(io->ctx->errstr, "Broken pipe"));
            may_be_stale = 0;
            if (timed_out(io->ctx)) {
                /* Which of them end now, without being sent again: see the
                 * deadline and give-up checks below. */
                uint64_t now = dl_now_ms();
                int cut_over = cut && now >= dl;
                int all = !cut_over &&
                          (conf->fail_fast || now >= (give_up ? give_up : started + conf->timeout_ms));
                if (cut_over || all)
                    write_undos(io->ctx, io->tls, cmds, first, n, all, now);
            }
            dl_link_io_drop(io);
            /* The server may have restarted empty, or stepped down to a
             * replica that lacked our holds: a sign (trust.h). */
            dl_trust_end(err);
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
        if (conf->fail_fast && stale) {
            stale = 0;
            continue;                 /* reconnect once, resend what has no reply */
        }
        if (conf->fail_fast) {
            warn_rate_limited(err, io);
            if (conf->down_ms) {
                io->down_until = now + conf->down_ms;
                snprintf(io->down_err, sizeof io->down_err, "%s", err);
            }
            fail_all(cmds + first, n - first, err);
            break;
        }
        if (!give_up) {
            give_up = started + conf->timeout_ms;
            warn_rate_limited(err, io);
        }
        if (now >= give_up) {
            char msg[200];
            fail_all(cmds + first, n - first,
                     dl_unreachable(cfg, err, conf->timeout_ms, msg, sizeof msg));
            break;
        }
        uint64_t left = give_up - now;
        dl_sleep_ms((unsigned)(backoff < left ? backoff : left));
        backoff = backoff * 2 > 200 ? 200 : backoff * 2;
    }
}


/* (the link's mutex not held, leadership ours) */
int dl_link_io_presend(dl_link_io_t *io, dl_cmd_t **cmds, size_t n)
{
    if (!io->ctx || io->ctx->err || (io->conf.fail_fast && io->down_until))
        return 0;
    for (size_t i = 0; i < n; i++) {
        redisAppendCommandArgv(io->ctx, cmds[i]->argc, cmds[i]->argv, cmds[i]->argvlen);
        cmds[i]->sent = 1;
    }
    if (flush_nosignal(io->ctx, io->tls, 0) == 0)
        return 1;
    /* Part of it may have gone out: dl_link_io_run reconnects and resends (the
     * server may have run a first copy: `retried`). */
    dl_link_io_drop(io);
    dl_trust_end("redis: connection lost while sending");
    for (size_t i = 0; i < n; i++)
        cmds[i]->retried = 1;
    return 0;
}

/* The server closed the idle connection (CLIENT KILL, a restart, its idle
 * time-out) or it was reset: the peer's FIN or an error waits in the
 * socket.  Data waiting (never expected on an idle command connection)
 * counts as alive: the next round trip reads it. */
static int peer_gone(int fd)
{
    char b;
    ssize_t r = recv(fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
    return r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

int dl_link_io_post(dl_link_io_t *io, int argc, const char **argv, const size_t *argvlen)
{
    static const char *skip[3] = { "CLIENT", "REPLY", "SKIP" };
    static const size_t skiplen[3] = { 6, 5, 4 };
    if (!io->ctx || io->ctx->err || !io->can_post)
        return EAGAIN;
    /* A socket whose peer has closed still takes our bytes (the kernel
     * sends them and gets a reset), so a post written there would be lost
     * without anyone knowing: a pushed grant's renewal, and the grantee
     * stopped right after its lock call returned, lost its hold at the end
     * of the claim window (the nemesis, a CLIENT KILL while it waited).
     * One peek finds the close first; the caller then makes a round trip
     * on a new connection.  (Posts never go over TLS.) */
    if (peer_gone(io->ctx->fd)) {
        dl_link_io_drop(io);
        dl_trust_end("redis: the server closed the connection");
        return EAGAIN;
    }
    /* No reply: nothing is left unread in our socket, whose close (the
     * process ending) then sends what it holds instead of a reset.
     * MSG_MORE: the kernel keeps the bytes until the next command goes out
     * (or the socket closes), so a post costs no packet of its own and no
     * wake-up of the server; they arrive in order, before it. */
    redisAppendCommandArgv(io->ctx, 3, skip, skiplen);
    redisAppendCommandArgv(io->ctx, argc, argv, argvlen);
    if (flush_nosignal(io->ctx, io->tls, MSG_MORE) == 0) {
        DL_STAT_ADD(commands, 1);
        return 0;
    }
    /* A post that may not have gone out whole: nobody would ever read of
     * its failure (trust.h). */
    dl_link_io_drop(io);          /* the next batch reconnects */
    dl_trust_end("redis: connection lost while posting");
    return EAGAIN;
}
