/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tls_direct.c - the TLS transport of the command links (dl_transport_tls,
 * transport.h): the hot path without the relay's thread hop.  The link
 * (cmdlink_io.c) takes its session over from the relay (tls_relay.h) once
 * its connection is set up, and does its own TLS I/O, keeping hiredis for
 * formatting and parsing.  The session (SSL *) is the link's, from
 * adopt to close; this file keeps no state of its own.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <hiredis/sds.h>

#include "tls_relay.h"
#include "transport.h"

/* Stops ctx's relay and makes ctx->fd the TLS socket (blocking;
 * hiredis's time-outs apply to it); *out is the session.  -1: ctx is
 * unusable (free it).  Every reply must have been read. */
static int tls_adopt(redisContext *ctx, void **out)
{
    int tcp = -1;
    SSL *ssl = NULL;
    if (dl_tls_relay_detach(ctx->fd, &ssl, &tcp))
        return -1;
    if (SSL_pending(ssl) > 0) {   /* bytes nobody asked for: do not go on from there */
        SSL_free(ssl);
        close(tcp);
        return -1;
    }
    /* hiredis keeps only formatting and parsing; ctx->fd is the TLS
     * socket from now on (for time-outs, polls and the close). */
    int fl = fcntl(tcp, F_GETFL);
    fcntl(tcp, F_SETFL, fl & ~O_NONBLOCK);
    /* the time-outs set on hiredis's end now bound the TLS socket */
    static const int opts[2] = { SO_RCVTIMEO, SO_SNDTIMEO };
    for (int i = 0; i < 2; i++) {
        struct timeval tv;
        socklen_t len = sizeof tv;
        if (getsockopt(ctx->fd, SOL_SOCKET, opts[i], &tv, &len) == 0)
            setsockopt(tcp, SOL_SOCKET, opts[i], &tv, sizeof tv);
    }
    close(ctx->fd);
    ctx->fd = tcp;
    *out = ssl;
    return 0;
}

static void set_error(redisContext *ctx, int type, const char *msg)
{
    ctx->err = type;
    snprintf(ctx->errstr, sizeof ctx->errstr, "%.127s", msg);
}

/* After a failed SSL_read or SSL_write: the error hiredis sets for the
 * same failure of a plain socket. */
static void io_error(SSL *ssl, redisContext *ctx, int rc)
{
    int se = errno;
    int e = SSL_get_error(ssl, rc);
    unsigned long q = ERR_get_error();
    ERR_clear_error();
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
        set_error(ctx, REDIS_ERR_IO, strerror(EAGAIN));      /* SO_RCVTIMEO/SO_SNDTIMEO */
    } else if (e == SSL_ERROR_ZERO_RETURN || (e == SSL_ERROR_SYSCALL && !q && (rc == 0 || !se))) {
        set_error(ctx, REDIS_ERR_EOF, "Server closed the connection");
    } else if (e == SSL_ERROR_SYSCALL && !q) {
        set_error(ctx, REDIS_ERR_IO, strerror(se));
    } else {
        char m[160];
        const char *rs = q ? ERR_reason_error_string(q) : NULL;
        snprintf(m, sizeof m, "TLS: %s", rs ? rs : "error");
        set_error(ctx, REDIS_ERR_IO, m);
    }
}

/* Writes all of buf (nonblock: only what fits now); 0, or -1 with
 * ctx->err and ctx->errstr as hiredis sets them for a plain socket. */
static int tls_write(void *s, redisContext *ctx, const char *buf, size_t len, int nonblock)
{
    SSL *ssl = s;
    int fl = 0, rc = 0;
    if (nonblock) {
        fl = fcntl(ctx->fd, F_GETFL);
        fcntl(ctx->fd, F_SETFL, fl | O_NONBLOCK);
    }
    size_t done = 0;
    while (done < len) {
        size_t chunk = len - done > (1u << 30) ? (1u << 30) : len - done;
        errno = 0;
        int n = SSL_write(ssl, buf + done, (int)chunk);
        if (n > 0) {
            done += (size_t)n;
            continue;
        }
        if (SSL_get_error(ssl, n) == SSL_ERROR_SYSCALL && errno == EINTR)
            continue;
        io_error(ssl, ctx, n);
        rc = -1;
        break;
    }
    if (nonblock)
        fcntl(ctx->fd, F_SETFL, fl);
    return rc;
}

static int tls_flush(void *s, redisContext *ctx, int flags)
{
    if (tls_write(s, ctx, ctx->obuf, sdslen(ctx->obuf), flags & MSG_DONTWAIT))
        return -1;
    sdsclear(ctx->obuf);
    return 0;
}

/* One reply, as redisGetReply(). */
static int tls_get_reply(void *s, redisContext *ctx, void **reply)
{
    SSL *ssl = s;
    char buf[16384];
    *reply = NULL;
    for (;;) {
        if (redisGetReplyFromReader(ctx, reply) != REDIS_OK)
            return REDIS_ERR;
        if (*reply)
            return REDIS_OK;
        errno = 0;
        int n = SSL_read(ssl, buf, sizeof buf);
        if (n > 0) {
            if (redisReaderFeed(ctx->reader, buf, (size_t)n) != REDIS_OK) {
                set_error(ctx, REDIS_ERR_PROTOCOL, "protocol error");
                return REDIS_ERR;
            }
            continue;
        }
        if (SSL_get_error(ssl, n) == SSL_ERROR_SYSCALL && errno == EINTR)
            continue;
        io_error(ssl, ctx, n);
        return REDIS_ERR;
    }
}

/* Decrypted bytes are waiting (a reply may be complete without a read). */
static int tls_pending(void *s)
{
    return SSL_pending((SSL *)s) > 0;
}

static void tls_close(void *s)
{
    SSL_free((SSL *)s);
    ERR_clear_error();
}

const dl_transport_t dl_transport_tls = {
    .adopt = tls_adopt,
    .adopt_err = "redis: TLS: could not take the connection over",
    .flush = tls_flush,
    .get_reply = tls_get_reply,
    .pending = tls_pending,
    .close = tls_close,
    /* Posts are probed for, and so would be written, through the relay
     * that set the connection up (tls.h), which dies with the process: a
     * post there could not promise to reach Redis. */
    .posts = 0,
};
