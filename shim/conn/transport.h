/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * transport.h - how a command link moves its bytes (as hiredis 1.x's
 * redisContextFuncs): hiredis formats the commands into ctx->obuf and
 * parses the replies; a transport writes the one and reads the other, on
 * the connection its link dialed.  Two implementations:
 *   dl_transport_plain  (transport.c) TCP or a unix socket: send() with
 *                       MSG_NOSIGNAL, hiredis's own reads
 *   dl_transport_tls    (tls_direct.c) a TLS session the link takes over
 *                       from the relay thread that set it up (tls.h)
 * The link (cmdlink_io.c) calls only these; nothing else of it knows TLS.
 * A transport keeps no state of its own: a connection's (the TLS session)
 * is the link's, from adopt to close.
 */
#ifndef DL_TRANSPORT_H
#define DL_TRANSPORT_H

#include <hiredis/hiredis.h>

#include "config.h"

typedef struct dl_transport {
    /* Makes a freshly dialed ctx this transport's; *state is then the
     * connection's, for the calls below.  0, or -1: ctx is unusable (free
     * it), and adopt_err says why.  NULL: nothing to do. */
    int (*adopt)(redisContext *ctx, void **state);
    const char *adopt_err;
    /* Writes all of ctx->obuf and empties it: 0, or -1 with ctx->err and
     * ctx->errstr set as hiredis sets them.  flags: MSG_DONTWAIT (only
     * what fits now), MSG_MORE (held back until the next write). */
    int (*flush)(void *state, redisContext *ctx, int flags);
    /* One reply, as redisGetReply(). */
    int (*get_reply)(void *state, redisContext *ctx, void **reply);
    /* Whether a reply may be complete without reading the socket (bytes
     * decrypted already).  NULL: never. */
    int (*pending)(void *state);
    /* Ends the connection's state before redisFree closes its socket.
     * NULL: none. */
    void (*close)(void *state);
    /* Posts may go this way (CLIENT REPLY SKIP): the bytes reach the
     * kernel at once and are sent even if the process then ends. */
    int posts;
} dl_transport_t;

extern const dl_transport_t dl_transport_plain;
extern const dl_transport_t dl_transport_tls;

/* The transport of cfg's links. */
const dl_transport_t *dl_transport_of(const dl_config_t *cfg);

#endif
