/* SPDX-License-Identifier: BSD-3-Clause */
/* transport.c - the plain transport, and which one a link uses (see
 * transport.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include <hiredis/sds.h>

#include "transport.h"

/* Writes the context's output buffer with send(MSG_NOSIGNAL): a server
 * that went away gives EPIPE, never a SIGPIPE that would kill the host
 * program, and no signal masking is needed on the hot path.  hiredis then
 * finds nothing left to write and only reads, which raises no signal. */
static int plain_flush(void *state, redisContext *ctx, int flags)
{
    (void)state;
    size_t len = sdslen(ctx->obuf), done = 0;
    while (done < len) {
        ssize_t n = send(ctx->fd, ctx->obuf + done, len - done, MSG_NOSIGNAL | flags);
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

static int plain_get_reply(void *state, redisContext *ctx, void **reply)
{
    (void)state;
    return redisGetReply(ctx, reply);
}

const dl_transport_t dl_transport_plain = {
    .flush = plain_flush,
    .get_reply = plain_get_reply,
    /* Over TLS a post would sit in the relay (tls.h), which dies with the
     * process: it could not promise to reach Redis.  Plain ones can. */
    .posts = 1,
};

const dl_transport_t *dl_transport_of(const dl_config_t *cfg)
{
    return cfg->tls ? &dl_transport_tls : &dl_transport_plain;
}
