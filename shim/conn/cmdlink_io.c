/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cmdlink_io.c - one link's connection and one batch's round trip on it
 * (see cmdlink_io.h).
 *
 * A batch goes through named steps, each tried again until the I/O
 * time-out (dl_link_io_run): dial when there is no connection, one round
 * trip (write what has no reply yet, read the replies), and after a
 * failure, what it means (fault.h: a timed-out server gets the undos of
 * what ends now, the connection goes, the trust ends), then whether to
 * try again at once, after a pause (backoff.h), or to give up.  The bytes
 * move through the link's transport (transport.h: plain or TLS), never
 * here.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "backoff.h"
#include "cmdlink_io.h"
#include "connect.h"
#include "dl.h"
#include "fault.h"

void dl_link_io_init(dl_link_io_t *io, const dl_link_conf_t *conf)
{
    memset(io, 0, sizeof *io);
    io->conf = *conf;
    io->tr = dl_transport_of(conf->cfg);
}

void dl_link_io_abandon(dl_link_io_t *io)
{
    if (io->ctx && io->ctx->fd >= 0)
        close(io->ctx->fd);
}

/* Closes the connection (the transport's state first: redisFree closes
 * its socket). */
void dl_link_io_drop(dl_link_io_t *io)
{
    if (io->trs && io->tr->close)
        io->tr->close(io->trs);
    io->trs = NULL;
    if (io->ctx)
        redisFree(io->ctx);
    io->ctx = NULL;
}

static int flush(dl_link_io_t *io, int flags)
{
    return io->tr->flush(io->trs, io->ctx, flags);
}

static void fail_all(dl_cmd_t **cmds, size_t n, const char *msg)
{
    for (size_t i = 0; i < n; i++) {
        cmds[i]->err = EIO;
        snprintf(cmds[i]->errmsg, sizeof cmds[i]->errmsg, "%s", msg);
    }
}

/* A reply on loopback or a LAN comes back within tens of microseconds:
 * polling for it that long avoids putting the thread to sleep and waking it
 * again, which costs about as much as the round trip itself.  Only the
 * leader of a link spins, and only this long; then it blocks as usual. */
#define DL_SPIN_US 40
unsigned long dl_link_spin_us = DL_SPIN_US;

static void spin_for_reply(dl_link_io_t *io)
{
    unsigned long spin_us = __atomic_load_n(&dl_link_spin_us, __ATOMIC_RELAXED);
    if (!spin_us || (io->tr->pending && io->tr->pending(io->trs)))
        return;
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        char b;
        ssize_t r = recv(io->ctx->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
        if (r >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
            return;           /* data, EOF or an error: the read will tell */
        clock_gettime(CLOCK_MONOTONIC, &t);
        if ((t.tv_sec - t0.tv_sec) * 1000000L + (t.tv_nsec - t0.tv_nsec) / 1000 >= (long)spin_us)
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

/* Whether a command sent on a connection given up after a round trip cut
 * short for a deadline ends there: its own deadline passed, or it is never
 * sent twice (dl_cmd_t.once, with its undo written behind it: undone). */
static int ends_at_cut(const dl_cmd_t *c, uint64_t now, int undone)
{
    return (c->deadline && c->deadline <= now) ||
           (undone && c->once && c->undo_argc && c->sent);
}

/* Moves the commands of cmds[first..*n) that end at this cut (ends_at_cut)
 * behind the others (keeping their order), fails them, and shrinks *n to
 * the rest.  The array keeps every pointer: the caller marks them all
 * done. */
static void expire(dl_cmd_t **cmds, size_t first, size_t *n, uint64_t now, int undone,
                   const char *why)
{
    size_t m = *n - first, keep = 0, gone = 0;
    dl_cmd_t **tmp = malloc(m * sizeof *tmp);
    if (!tmp)
        return;                       /* they wait for the I/O time-out instead */
    for (size_t i = first; i < *n; i++)
        if (!ends_at_cut(cmds[i], now, undone))
            tmp[keep++] = cmds[i];
    for (size_t i = first; i < *n; i++) {
        dl_cmd_t *c = cmds[i];
        if (!ends_at_cut(c, now, undone))
            continue;
        tmp[keep + gone++] = c;
        if (c->deadline && c->deadline <= now) {
            c->err = EIO;
            snprintf(c->errmsg, sizeof c->errmsg, "timed out waiting for %s", why);
        } else {
            c->err = EAGAIN;
            snprintf(c->errmsg, sizeof c->errmsg, "redis %.60s: the round trip was cut short for "
                     "another call's deadline (undone; to be asked again)", why);
        }
    }
    memcpy(cmds + first, tmp, m * sizeof *tmp);
    free(tmp);
    *n = first + keep;
}

/* Before giving up on a connection that timed out: the commands of
 * cmds[first..n) that end now (`all`, or at a cut those ends_at_cut names:
 * their deadline is at or before `now`, or they are never sent twice) and
 * that have an undo get it written behind them on this connection.  A
 * stalled server that resumes then runs each undo right after its
 * command, whatever the order in which it serves its other connections
 * (where the caller may have asked again).  Best effort: it never waits
 * for room in the socket (an undo cut short is never run: the server
 * discards an incomplete command at the close). */
static void write_undos(dl_link_io_t *io, dl_cmd_t **cmds, size_t first, size_t n, int all,
                        uint64_t now)
{
    int any = 0;
    for (size_t i = first; i < n; i++) {
        const dl_cmd_t *c = cmds[i];
        if (c->undo_argc && c->sent && (all || ends_at_cut(c, now, 1))) {
            redisAppendCommandArgv(io->ctx, c->undo_argc, c->undo_argv, c->undo_argvlen);
            any = 1;
        }
    }
    if (any && flush(io, MSG_DONTWAIT) == 0)
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

/* --- one batch, step by step --- */

/* A batch across its tries. */
typedef struct batch {
    dl_cmd_t **cmds;
    size_t first, n;          /* cmds[first..n) have no reply yet */
    int written;              /* dl_link_io_presend sent them on io->ctx */
    /* The I/O time-out runs from when the batch was sent, not from when a
     * failure was noticed: a stalled server is noticed only when a read
     * times out, after timeout_ms already. */
    uint64_t started, give_up;        /* give_up: 0 until the first failure */
    int shortened;            /* io->ctx was opened with less than timeout_ms */
    int fresh;                /* io->ctx has given no reply yet */
    /* A connection opened by an earlier batch may be stale: the server
     * restarted, or closed it after `timeout` idle seconds.  A fail-fast
     * link gives it one fresh connection before calling the server down. */
    int may_be_stale, stale;
    /* This round trip's: the earliest deadline of its commands, when it
     * comes before the time-out (the round trip is cut to it). */
    uint64_t deadline;
    int cut;
    dl_fault_t fault;         /* why the last round trip failed */
    dl_backoff_t backoff;
    char err[200];
} batch_t;

/* A fail-fast link whose server failed lately fails at once, unless the
 * batch probes it.  1 if the batch ended so. */
static int skipped_while_down(dl_link_io_t *io, batch_t *b)
{
    if (!io->conf.fail_fast || !io->down_until)
        return 0;
    if (dl_now_ms() < io->down_until && !b->cmds[0]->probe) {
        fail_all(b->cmds, b->n, io->down_err);
        return 1;
    }
    io->down_until = 0;
    return 0;
}

/* Opens the link's connection, within what is left of the batch's time. */
static void dial(dl_link_io_t *io, batch_t *b)
{
    const dl_link_conf_t *conf = &io->conf;
    unsigned long budget = conf->timeout_ms;
    if (b->give_up) {
        uint64_t now = dl_now_ms();
        budget = b->give_up > now ? b->give_up - now : 1;
    }
    /* Connecting may AUTH and SELECT through hiredis's own writes. */
    sigset_t oldmask;
    int pending;
    dl_sigpipe_block(&oldmask, &pending);
    /* A retry cut short by what is left of the time-out must not hide why
     * the first attempt failed (a certificate refused) behind "timed
     * out". */
    char cerr[200];
    io->ctx = conf->dial(conf->cfg, &conf->ep, budget, cerr, sizeof cerr);
    if (!io->ctx && (!b->err[0] || !strstr(cerr, "timed out")))
        snprintf(b->err, sizeof b->err, "%s", cerr);
    /* (hiredis writes the probe itself: still under the mask) */
    io->can_post = io->ctx && io->tr->posts && conf->may_post && probe_post(io->ctx);
    dl_sigpipe_restore(&oldmask, pending);
    /* Set up (over TLS, through the relay); from here on the link drives
     * the connection through its transport. */
    if (io->ctx && io->tr->adopt && io->tr->adopt(io->ctx, &io->trs)) {
        redisFree(io->ctx);
        io->ctx = NULL;
        if (!b->err[0])
            snprintf(b->err, sizeof b->err, "%s", io->tr->adopt_err);
    }
    if (!io->ctx)
        return;
    b->fresh = 1;
    b->shortened = budget < conf->timeout_ms;
    /* A link's first connection is no reconnection (the metrics file
     * reports this count). */
    if (io->connected)
        DL_STAT_ADD(reconnects, 1);
    io->connected = 1;
    if (b->give_up)
        dl_log(DL_LOG_INFO, "reconnected to redis");
}

/* Reads the replies of cmds[first..n) in order, up to the first failure.
 * A reply that makes the link leave its server (conf.leave_not_master)
 * counts as one: its text goes in ctx->errstr, b->fault says which. */
static void read_replies(dl_link_io_t *io, batch_t *b)
{
    for (; b->first < b->n; b->first++) {
        void *reply = NULL;
        if (io->tr->get_reply(io->trs, io->ctx, &reply) != REDIS_OK) {
            b->fault = dl_fault_of(io->ctx, NULL);
            return;
        }
        dl_fault_t f = reply ? dl_fault_of(NULL, reply) : DL_FAULT_NONE;
        if (io->conf.leave_not_master && dl_fault_not_master(f)) {
            snprintf(io->ctx->errstr, sizeof io->ctx->errstr, "%s", ((redisReply *)reply)->str);
            freeReplyObject(reply);
            b->fault = f;
            return;
        }
        b->cmds[b->first]->reply = reply;
        b->fresh = 0;
    }
}

/* One round trip on the live connection: writes what has no reply yet
 * (unless presend did), reads the replies.  1 when every command has its
 * reply. */
static int round_trip(dl_link_io_t *io, batch_t *b)
{
    const dl_link_conf_t *conf = &io->conf;
    for (size_t i = b->first; i < b->n && !b->written; i++) {
        redisAppendCommandArgv(io->ctx, b->cmds[i]->argc, b->cmds[i]->argv, b->cmds[i]->argvlen);
        b->cmds[i]->sent = 1;
    }
    DL_STAT_ADD(roundtrips, 1);
    DL_STAT_ADD(commands, b->n - b->first);
    /* Once for each thread with a command in it: a thread's commands are
     * queued together, so they are neighbours in the batch. */
    for (size_t i = b->first; i < b->n; i++)
        if (b->cmds[i]->trips && (i == b->first || b->cmds[i]->trips != b->cmds[i - 1]->trips))
            __atomic_fetch_add(b->cmds[i]->trips, 1UL, __ATOMIC_RELAXED);
    /* A command with a deadline (a timed lock) waits no longer than that
     * for its reply, even when the server stalls. */
    uint64_t t = 0;
    b->deadline = batch_deadline(b->cmds, b->first, b->n);
    if (b->deadline)
        t = dl_now_ms();
    b->cut = b->deadline && b->deadline < t + conf->timeout_ms;
    if (b->cut)
        set_timeout(io->ctx, b->deadline > t ? b->deadline - t : 1);
    int ok = b->written || flush(io, 0) == 0;
    b->written = 0;
    if (ok) {
        spin_for_reply(io);
        read_replies(io, b);
    } else {
        b->fault = dl_fault_of(io->ctx, NULL);
    }
    if (b->first < b->n)
        return 0;
    /* opened with what was left of this batch's time, or cut for a
     * deadline: later batches get the whole time-out */
    if (b->shortened || b->cut)
        set_timeout(io->ctx, conf->timeout_ms);
    return 1;
}

/* After a round trip that failed: what comes next. */
typedef enum next {
    NEXT_RETRY,               /* try again, perhaps after a pause (retry()) */
    NEXT_RESEND,              /* resend the rest at once */
    NEXT_DONE,                /* every command has ended */
} next_t;

/* What a round trip that failed leaves: the reason in b->err, the undos
 * a timed-out server is owed, the connection closed, the trust ended
 * (fault.h); the commands whose deadline ran out ended. */
static next_t after_failure(dl_link_io_t *io, batch_t *b)
{
    const dl_link_conf_t *conf = &io->conf;
    int reroute = dl_fault_not_master(b->fault);
    snprintf(b->err, sizeof b->err, "redis %.120s: %.70s%s", conf->name,
             io->ctx->errstr[0] ? io->ctx->errstr : "connection lost",
             b->fresh ? dl_plain_hint(conf->cfg, io->ctx) : "");
    b->stale = b->may_be_stale && b->fault == DL_FAULT_CLOSED;
    b->may_be_stale = 0;
    int undone = 0;               /* a cut's undos written (ends_at_cut) */
    if (b->fault == DL_FAULT_TIMEOUT) {
        /* Which of them end now, without being sent again: see the
         * deadline check below and the give-up check of retry(). */
        uint64_t now = dl_now_ms();
        int cut_over = b->cut && now >= b->deadline;
        int all = !cut_over &&
                  (conf->fail_fast || now >= (b->give_up ? b->give_up : b->started + conf->timeout_ms));
        if (cut_over || all)
            write_undos(io, b->cmds, b->first, b->n, all, now);
        undone = cut_over;
    }
    dl_link_io_drop(io);
    /* The server may have restarted empty, or stepped down to a replica
     * that lacked our holds: a sign (trust.h). */
    dl_fault_note(b->fault, b->err);
    for (size_t i = b->first; i < b->n; i++)
        b->cmds[i]->retried = !reroute;
    if (!b->cut || dl_now_ms() < b->deadline)
        return NEXT_RETRY;
    /* A deadline ran out, not the I/O time-out: those commands end here
     * (they may still run: the caller knows from `sent`), with those never
     * sent twice whose undo went behind them; the others are sent again at
     * once. */
    expire(b->cmds, b->first, &b->n, dl_now_ms(), undone, conf->name);
    return b->first == b->n ? NEXT_DONE : NEXT_RESEND;
}

/* No connection, or a failed round trip: whether to try again (after a
 * pause, but at once for a stale connection).  0 when the batch failed:
 * what had no reply has EIO. */
static int retry(dl_link_io_t *io, batch_t *b)
{
    const dl_link_conf_t *conf = &io->conf;
    if (conf->fail_fast && b->stale) {
        b->stale = 0;
        return 1;                 /* reconnect once, resend what has no reply */
    }
    uint64_t now = dl_now_ms();
    if (conf->fail_fast) {
        warn_rate_limited(b->err, io);
        if (conf->down_ms) {
            io->down_until = now + conf->down_ms;
            snprintf(io->down_err, sizeof io->down_err, "%s", b->err);
        }
        fail_all(b->cmds + b->first, b->n - b->first, b->err);
        return 0;
    }
    if (!b->give_up) {
        b->give_up = b->started + conf->timeout_ms;
        warn_rate_limited(b->err, io);
    }
    if (now >= b->give_up) {
        char msg[200];
        fail_all(b->cmds + b->first, b->n - b->first,
                 dl_unreachable(conf->cfg, b->err, conf->timeout_ms, msg, sizeof msg));
        return 0;
    }
    dl_backoff_wait(&b->backoff, b->give_up);
    return 1;
}

/* Without the link's mutex: only its leader runs a batch. */
void dl_link_io_run(dl_link_io_t *io, dl_cmd_t **cmds, size_t n, int written)
{
    batch_t b = { .cmds = cmds, .n = n, .written = written, .started = dl_now_ms(),
                  .may_be_stale = io->ctx != NULL };
    dl_backoff_init(&b.backoff, DL_BACKOFF_RETRY_MS);
    if (skipped_while_down(io, &b))
        return;
    for (;;) {
        if (!io->ctx)
            dial(io, &b);
        if (!io->ctx && dl_refused()) {
            /* The server refused the configuration (connect.c: no such
             * database): no retry mends it. */
            fail_all(b.cmds + b.first, b.n - b.first, b.err);
            return;
        }
        if (io->ctx) {
            if (round_trip(io, &b))
                return;
            next_t next = after_failure(io, &b);
            if (next == NEXT_DONE)
                return;
            if (next == NEXT_RESEND)
                continue;
        }
        if (!retry(io, &b))
            return;
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
    if (flush(io, 0) == 0)
        return 1;
    /* Part of it may have gone out: dl_link_io_run reconnects and resends (the
     * server may have run a first copy: `retried`). */
    dl_fault_t f = dl_fault_of(io->ctx, NULL);
    dl_link_io_drop(io);
    dl_fault_note(f, "redis: connection lost while sending");
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
        dl_fault_note(DL_FAULT_CLOSED, "redis: the server closed the connection");
        return EAGAIN;
    }
    /* No reply: nothing is left unread in our socket, whose close (the
     * process ending) then sends what it holds instead of a reset.
     * MSG_MORE: the kernel keeps the bytes until the next command goes out
     * (or the socket closes), so a post costs no packet of its own and no
     * wake-up of the server; they arrive in order, before it. */
    redisAppendCommandArgv(io->ctx, 3, skip, skiplen);
    redisAppendCommandArgv(io->ctx, argc, argv, argvlen);
    if (flush(io, MSG_MORE) == 0) {
        DL_STAT_ADD(commands, 1);
        return 0;
    }
    /* A post that may not have gone out whole: nobody would ever read of
     * its failure (trust.h). */
    dl_fault_t f = dl_fault_of(io->ctx, NULL);
    dl_link_io_drop(io);          /* the next batch reconnects */
    dl_fault_note(f, "redis: connection lost while posting");
    return EAGAIN;
}
