/* SPDX-License-Identifier: BSD-3-Clause */
/* connect.c - opening one connection (see connect.h). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "connect.h"
#include "dl.h"
#include "tls.h"

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

const char *dl_plain_hint(const dl_config_t *c, const redisContext *ctx)
{
    /* A TLS port takes our first command for a broken handshake: it
     * closes or resets the connection, or answers with a TLS alert (a
     * record of type 0x15, which hiredis shows as the reply type). */
    if (c->tls || c->scheme == DL_SCHEME_UNIX || !ctx)
        return "";
    if (ctx->err == REDIS_ERR_EOF || (ctx->err == REDIS_ERR_IO && (strstr(ctx->errstr, "reset") || strstr(ctx->errstr, "Broken pipe"))) ||
        (ctx->err == REDIS_ERR_PROTOCOL && strstr(ctx->errstr, "\\x15")))
        return " (a TLS port? use rediss://)";
    return "";
}

static int reply_ok(redisReply *r)
{
    return r && r->type != REDIS_REPLY_ERROR;
}

/* Over TLS, hiredis gets its end of the relay (tls.h) instead of the TCP
 * socket, which it connected and hands over. */
redisContext *dl_connect_socket(const dl_config_t *c, const dl_endpoint_t *ep, int is_unix,
                                 unsigned long timeout_ms, char *err, size_t errlen)
{
    char name[300];
    dl_ep_name(ep, is_unix, name, sizeof name);
    uint64_t deadline = dl_now_ms() + timeout_ms;
    struct timeval tv = { (time_t)(timeout_ms / 1000), (suseconds_t)(timeout_ms % 1000) * 1000 };
    redisContext *ctx = is_unix ? redisConnectUnixWithTimeout(ep->host, tv)
                                : redisConnectWithTimeout(ep->host, ep->port, tv);
    if (!ctx) {
        snprintf(err, errlen, "redis %s: out of memory", name);
        return NULL;
    }
    if (ctx->err) {
        snprintf(err, errlen, "redis %s: %s", name, ctx->errstr);
        redisFree(ctx);
        return NULL;
    }
    if (c->tls && !is_unix) {
        int tcp = fcntl(ctx->fd, F_DUPFD_CLOEXEC, 0);
        redisFree(ctx);
        if (tcp < 0) {
            snprintf(err, errlen, "redis %s: %s", name, strerror(errno));
            return NULL;
        }
        char why[240];
        int fd = dl_tls_wrap(c, ep->host, tcp, deadline, why, sizeof why);
        if (fd < 0) {
            snprintf(err, errlen, "redis %s: %s", name, why);
            return NULL;
        }
        ctx = redisConnectFd(fd);
        if (!ctx || ctx->err) {
            snprintf(err, errlen, "redis %s: %s", name, ctx ? ctx->errstr : "out of memory");
            if (ctx)
                redisFree(ctx);
            else
                close(fd);
            return NULL;
        }
        redisSetTimeout(ctx, tv);     /* bounds a stalled server: the relay only forwards */
        return ctx;
    }
    /* hiredis leaves the socket inheritable: a forked-and-exec'd child must
     * not keep our connection open. */
    int fl = fcntl(ctx->fd, F_GETFD);
    if (fl >= 0)
        fcntl(ctx->fd, F_SETFD, fl | FD_CLOEXEC);
    redisSetTimeout(ctx, tv);
    if (!is_unix)
        redisEnableKeepAlive(ctx);
    return ctx;
}

redisContext *dl_connect_ep(const dl_config_t *c, const dl_endpoint_t *ep,
                            unsigned long timeout_ms, char *err, size_t errlen)
{
    int is_unix = c->scheme == DL_SCHEME_UNIX;
    redisContext *ctx = dl_connect_socket(c, ep, is_unix, timeout_ms, err, errlen);
    if (!ctx)
        return NULL;
    char name[300];
    dl_ep_name(ep, is_unix, name, sizeof name);
    redisReply *r = NULL;
    if (c->password[0]) {
        if (c->user[0])
            r = redisCommand(ctx, "AUTH %s %s", c->user, c->password);
        else
            r = redisCommand(ctx, "AUTH %s", c->password);
        if (!reply_ok(r)) {
            /* The server's text never contains the password. */
            snprintf(err, errlen, "redis %s: authentication failed: %s%s", name,
                     r ? r->str : ctx->errstr, r ? "" : dl_plain_hint(c, ctx));
            goto fail;
        }
        freeReplyObject(r);
    }
    if (c->db) {
        r = redisCommand(ctx, "SELECT %d", c->db);
        if (r && r->type == REDIS_REPLY_ERROR) {
            /* The server has no such database (ERR DB index is out of
             * range): the configuration is wrong, and no retry mends it. */
            snprintf(err, errlen, "DISTLOCK_URL: database %d: redis %s refused it (%.80s); "
                     "use one below the server's `databases` setting", c->db, name, r->str);
            dl_refused_set(err);
            goto fail;
        }
        if (!reply_ok(r)) {
            snprintf(err, errlen, "redis %s: SELECT %d failed: %s", name, c->db,
                     r ? r->str : ctx->errstr);
            goto fail;
        }
        freeReplyObject(r);
    }
    dl_refused_set(NULL);
    return ctx;
fail:
    if (r)
        freeReplyObject(r);
    redisFree(ctx);
    return NULL;
}

int dl_connect_round(const dl_config_t *c, int first, int k, uint64_t end, unsigned long *left)
{
    if (k >= c->nep)
        return -1;
    uint64_t now = dl_now_ms();
    if (now >= end && k)
        return -1;            /* the first always gets its try */
    *left = end > now ? end - now : 1;
    if (*left > 1000)
        *left = 1000;
    return (first + k) % c->nep;
}

redisContext *dl_connect_first(const dl_config_t *c, unsigned long timeout_ms,
                               char *err, size_t errlen)
{
    /* Any node will do: start after the one used last, so a dead node is
     * not the first tried every time. */
    static int next;
    uint64_t end = dl_now_ms() + timeout_ms;
    int first = __atomic_load_n(&next, __ATOMIC_RELAXED), i;
    unsigned long left;
    for (int k = 0; (i = dl_connect_round(c, first, k, end, &left)) >= 0; k++) {
        redisContext *ctx = dl_connect_ep(c, &c->ep[i], left, err, errlen);
        if (ctx) {
            __atomic_store_n(&next, i, __ATOMIC_RELAXED);
            return ctx;
        }
    }
    __atomic_store_n(&next, (first + 1) % c->nep, __ATOMIC_RELAXED);
    return NULL;
}
