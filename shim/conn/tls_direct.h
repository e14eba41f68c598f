/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tls_direct.h - the hot path without the relay's thread hop (tls_direct.c):
 * the shared command link (cmdlink_io.c) takes its session over from the relay
 * (tls_relay.h) once its connection is set up, and does its own TLS I/O,
 * keeping hiredis for formatting and parsing.
 *
 * The session (void *tls) is the link's from dl_tls_direct() to
 * dl_tls_free(); tls_direct.c keeps no state of its own.
 */
#ifndef DL_TLS_DIRECT_H
#define DL_TLS_DIRECT_H

#include <stddef.h>

#include <hiredis/hiredis.h>

/* Stops ctx's relay and makes ctx->fd the TLS socket (blocking;
 * hiredis's time-outs apply to it); *tls is the session, for the calls
 * below and dl_tls_free (before redisFree closes the socket).  -1: ctx is
 * unusable (free it).  Every reply must have been read. */
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
