/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tls.h - TLS to Redis with OpenSSL, under hiredis 0.14 (which has none).
 *
 * connect.c makes the TCP connection; dl_tls_wrap() does the handshake on
 * it and returns one end of a socketpair, which connect.c gives hiredis
 * (redisConnectFd).  A relay thread per connection moves bytes between the
 * other end and the TLS session.  So every user of a redisContext (the
 * subscriber, sentinel discovery, cluster redirects, the distlock
 * command) speaks TLS without knowing it, and hiredis's socket time-outs
 * still bound a stalled server.  The command links, the hot path, take
 * their session over from the relay once set up (dl_tls_direct, below)
 * and spare each message the thread hop.
 */
#ifndef DL_TLS_H
#define DL_TLS_H

#include <stdint.h>
#include <stddef.h>

#include <hiredis/hiredis.h>

#include "config.h"

/* Builds (once per set of files) the client context for c: CA file or the
 * system's CAs, client certificate and key.  0, or EINVAL with
 * dist_lasterror() naming the variable whose file is missing or bad (never
 * its contents).  Called by dl_config_load() when c->tls. */
int dl_tls_setup(const dl_config_t *c);

/* Takes over the connected TCP socket fd (closed on failure), does the
 * handshake, verifies the chain and c->tls_name or host (a name or an IP
 * address) against the certificate, checks that the server accepts us,
 * and starts the relay.  Returns the caller's end of the relay (blocking,
 * close-on-exec), or -1 with the reason in err.  Gives up at `deadline`
 * (monotonic ms).  Never raises SIGPIPE. */
int dl_tls_wrap(const dl_config_t *c, const char *host, int fd, uint64_t deadline,
                char *err, size_t errlen);

/* The hot path without the relay's thread hop: the shared command link
 * (link.c) takes the session over once its connection is set up, and
 * does its own TLS I/O, keeping hiredis for formatting and parsing.
 * dl_tls_direct: stops ctx's relay and makes ctx->fd the TLS socket
 * (blocking; hiredis's time-outs apply to it); *tls is the session, for
 * the calls below and dl_tls_free (before redisFree closes the socket).
 * -1: ctx is unusable (free it).  Every reply must have been read. */
int dl_tls_direct(redisContext *ctx, void **tls);
/* Writes all of buf (nonblock: only what fits now); 0, or -1 with
 * ctx->err and ctx->errstr as hiredis sets them for a plain socket. */
int dl_tls_write(void *tls, redisContext *ctx, const char *buf, size_t len, int nonblock);
/* One reply, as redisGetReply(). */
int dl_tls_get_reply(void *tls, redisContext *ctx, void **reply);
/* Decrypted bytes are waiting (a reply may be complete without a read). */
int dl_tls_pending(void *tls);
void dl_tls_free(void *tls);

#endif
