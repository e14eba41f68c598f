/* conn.c - connecting to Redis, and the shared, auto-pipelined command
 * connection of a process. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <hiredis/sds.h>

#include "conn.h"
#include "dl.h"

struct dl_conn {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    const dl_config_t *cfg;
    redisContext *ctx;        /* touched only by the leader */
    int leader;               /* a thread is doing I/O */
    dl_cmd_t **queue;         /* commands waiting for the next leader */
    size_t qlen, qcap;
    dl_cmd_t **batch;         /* the leader's batch (kept to reuse its memory) */
    size_t bcap;
};

void dl_sigpipe_block(sigset_t *old, int *pending_before)
{
    sigset_t pipe, pending;
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe, old);
    sigpending(&pending);
    *pending_before = sigismember(&pending, SIGPIPE);
}

void dl_sigpipe_restore(const sigset_t *old, int pending_before)
{
    sigset_t pipe, pending;
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    sigpending(&pending);
    if (!pending_before && sigismember(&pending, SIGPIPE)) {
        /* Ours: consume it before unblocking. */
        struct timespec zero = { 0, 0 };
        while (sigtimedwait(&pipe, NULL, &zero) == -1 && errno == EINTR)
            ;
    }
    pthread_sigmask(SIG_SETMASK, old, NULL);
}

static int reply_ok(redisReply *r)
{
    return r && r->type != REDIS_REPLY_ERROR;
}

redisContext *dl_connect(const dl_config_t *c, int i, unsigned long timeout_ms,
                         char *err, size_t errlen)
{
    char name[300];
    dl_endpoint_name(c, i, name, sizeof name);
    struct timeval tv = { (time_t)(timeout_ms / 1000), (suseconds_t)(timeout_ms % 1000) * 1000 };
    redisContext *ctx = c->scheme == DL_SCHEME_UNIX
                            ? redisConnectUnixWithTimeout(c->ep[i].host, tv)
                            : redisConnectWithTimeout(c->ep[i].host, c->ep[i].port, tv);
    if (!ctx) {
        snprintf(err, errlen, "redis %s: out of memory", name);
        return NULL;
    }
    if (ctx->err) {
        snprintf(err, errlen, "redis %s: %s", name, ctx->errstr);
        redisFree(ctx);
        return NULL;
    }
    /* hiredis leaves the socket inheritable: a forked-and-exec'd child must
     * not keep our connection open. */
    int fl = fcntl(ctx->fd, F_GETFD);
    if (fl >= 0)
        fcntl(ctx->fd, F_SETFD, fl | FD_CLOEXEC);
    redisSetTimeout(ctx, tv);
    if (c->scheme != DL_SCHEME_UNIX)
        redisEnableKeepAlive(ctx);

    redisReply *r = NULL;
    if (c->password[0]) {
        if (c->user[0])
            r = redisCommand(ctx, "AUTH %s %s", c->user, c->password);
        else
            r = redisCommand(ctx, "AUTH %s", c->password);
        if (!reply_ok(r)) {
            /* The server's text never contains the password. */
            snprintf(err, errlen, "redis %s: authentication failed: %s", name,
                     r ? r->str : ctx->errstr);
            goto fail;
        }
        freeReplyObject(r);
    }
    if (c->db) {
        r = redisCommand(ctx, "SELECT %d", c->db);
        if (!reply_ok(r)) {
            snprintf(err, errlen, "redis %s: SELECT %d failed: %s", name, c->db,
                     r ? r->str : ctx->errstr);
            goto fail;
        }
        freeReplyObject(r);
    }
    return ctx;
fail:
    if (r)
        freeReplyObject(r);
    redisFree(ctx);
    return NULL;
}

dl_conn_t *dl_conn_new(const dl_config_t *c)
{
    dl_conn_t *conn = calloc(1, sizeof *conn);
    if (!conn)
        return NULL;
    pthread_mutex_init(&conn->mu, NULL);
    pthread_cond_init(&conn->cv, NULL);
    conn->cfg = c;
    return conn;
}

void dl_conn_abandon(dl_conn_t *c)
{
    if (c && c->ctx && c->ctx->fd >= 0)
        close(c->ctx->fd);
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
static int flush_nosignal(redisContext *ctx)
{
    size_t len = sdslen(ctx->obuf), done = 0;
    while (done < len) {
        ssize_t n = send(ctx->fd, ctx->obuf + done, len - done, MSG_NOSIGNAL);
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

/* The leader's I/O for one batch, without c->mu.  Each command ends with a
 * reply or EIO; a connection failure is retried (reconnect, resend what has
 * no reply yet) until the I/O timeout has passed since it began. */
static void run_batch(dl_conn_t *c, dl_cmd_t **cmds, size_t n)
{
    const dl_config_t *cfg = c->cfg;
    uint64_t give_up = 0;
    unsigned backoff = 10;
    char err[200] = "";
    size_t first = 0;                 /* commands before it have replies */
    for (;;) {
        if (!c->ctx) {
            unsigned long budget = cfg->io_timeout_ms;
            if (give_up) {
                uint64_t now = dl_now_ms();
                budget = give_up > now ? give_up - now : 1;
            }
            /* Connecting may AUTH and SELECT through hiredis's own writes. */
            sigset_t oldmask;
            int pending;
            dl_sigpipe_block(&oldmask, &pending);
            c->ctx = dl_connect(cfg, 0, budget, err, sizeof err);
            dl_sigpipe_restore(&oldmask, pending);
            if (c->ctx) {
                DL_STAT_ADD(reconnects, 1);
                if (give_up)
                    dl_log(DL_LOG_INFO, "reconnected to redis");
            }
        }
        if (c->ctx) {
            for (size_t i = first; i < n; i++)
                redisAppendCommandArgv(c->ctx, cmds[i]->argc, cmds[i]->argv, cmds[i]->argvlen);
            DL_STAT_ADD(roundtrips, 1);
            DL_STAT_ADD(commands, n - first);
            if (flush_nosignal(c->ctx) == 0) {
                for (; first < n; first++) {
                    void *reply = NULL;
                    if (redisGetReply(c->ctx, &reply) != REDIS_OK)
                        break;
                    cmds[first]->reply = reply;
                }
            }
            if (first == n)
                break;
            char name[300];
            snprintf(err, sizeof err, "redis %s: %s",
                     dl_endpoint_name(cfg, 0, name, sizeof name),
                     c->ctx->errstr[0] ? c->ctx->errstr : "connection lost");
            redisFree(c->ctx);
            c->ctx = NULL;
            for (size_t i = first; i < n; i++)
                cmds[i]->retried = 1;
        }
        uint64_t now = dl_now_ms();
        if (!give_up) {
            give_up = now + cfg->io_timeout_ms;
            /* Callers that retry EIO (the interposer) would print a line per
             * attempt: one every 5 s is enough. */
            static uint64_t last_warn;
            uint64_t prev = __atomic_load_n(&last_warn, __ATOMIC_RELAXED);
            if (!prev || now - prev >= 5000) {
                __atomic_store_n(&last_warn, now, __ATOMIC_RELAXED);
                dl_log(DL_LOG_WARN, "%s; retrying for up to %lu ms", err, cfg->io_timeout_ms);
            }
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

int dl_conn_exec(dl_conn_t *c, dl_cmd_t *cmds, int n)
{
    pthread_mutex_lock(&c->mu);
    if (c->qlen + (size_t)n > c->qcap) {
        size_t cap = (c->qlen + (size_t)n) * 2;
        dl_cmd_t **q = realloc(c->queue, cap * sizeof *q);
        if (!q) {
            pthread_mutex_unlock(&c->mu);
            for (int i = 0; i < n; i++) {
                cmds[i].err = EIO;
                snprintf(cmds[i].errmsg, sizeof cmds[i].errmsg, "out of memory");
            }
            return EIO;
        }
        c->queue = q;
        c->qcap = cap;
    }
    for (int i = 0; i < n; i++) {
        cmds[i].reply = NULL;
        cmds[i].err = cmds[i].retried = cmds[i].done = 0;
        cmds[i].errmsg[0] = 0;
        c->queue[c->qlen++] = &cmds[i];
    }
    /* Our commands are done when the last one is: replies come in order. */
    while (!__atomic_load_n(&cmds[n - 1].done, __ATOMIC_ACQUIRE)) {
        if (c->leader) {
            pthread_cond_wait(&c->cv, &c->mu);
            continue;
        }
        c->leader = 1;
        /* Take the whole queue as one batch; swap buffers so followers can
         * queue while we do I/O. */
        dl_cmd_t **batch = c->queue;
        size_t bn = c->qlen, bcap = c->qcap;
        c->queue = c->batch;
        c->qcap = c->bcap;
        c->qlen = 0;
        c->batch = NULL;
        c->bcap = 0;
        pthread_mutex_unlock(&c->mu);
        run_batch(c, batch, bn);
        pthread_mutex_lock(&c->mu);
        for (size_t i = 0; i < bn; i++)
            __atomic_store_n(&batch[i]->done, 1, __ATOMIC_RELEASE);
        if (!c->batch) {
            c->batch = batch;
            c->bcap = bcap;
        } else {
            free(batch);
        }
        c->leader = 0;
        pthread_cond_broadcast(&c->cv);
    }
    pthread_mutex_unlock(&c->mu);
    for (int i = 0; i < n; i++)
        if (cmds[i].err)
            return EIO;
    return 0;
}
