/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tls.h - TLS to Redis with OpenSSL, under hiredis 0.14 (which has none):
 * the client context and the handshake (tls.c).
 *
 * connect.c makes the TCP connection; dl_tls_wrap() does the handshake on
 * it and returns one end of a socketpair, which connect.c gives hiredis
 * (redisConnectFd).  A relay thread per connection moves bytes between the
 * other end and the TLS session.  So every user of a redisContext (the
 * subscriber, sentinel discovery, cluster redirects, the distlock
 * command) speaks TLS without knowing it, and hiredis's socket time-outs
 * still bound a stalled server.  The command links, the hot path, take
 * their session over from the relay once set up (the TLS transport,
 * tls_direct.c) and spare each message the thread hop.
 *
 *   tls.c          the client contexts (one per set of files, kept for the
 *                  process), the socket BIO without SIGPIPE, the handshake
 *                  and its first PING, and why it failed in words
 *   tls_relay.c    the relay threads and the lock that keeps fork() and
 *                  the end of the process away from them (tls_relay.h)
 *   tls_direct.c   the command link's own I/O on its session: the TLS
 *                  transport (dl_transport_tls, transport.h)
 */
#ifndef DL_TLS_H
#define DL_TLS_H

#include <stdint.h>
#include <stddef.h>

#include "config.h"

/* Builds (once per set of files) the client context for c: CA file or the
 * system's CAs, client certificate and key.  0, or EINVAL with
 * dist_lasterror() naming the variable whose file is missing or bad (never
 * its contents).  Run when the configuration is loaded (tls.c registers
 * it with config.c: dl_config_add_check); else built at the first
 * handshake. */
int dl_tls_setup(const dl_config_t *c);

/* Takes over the connected TCP socket fd (closed on failure), does the
 * handshake, verifies the chain and c->tls_name or host (a name or an IP
 * address) against the certificate, checks that the server accepts us,
 * and starts the relay.  Returns the caller's end of the relay (blocking,
 * close-on-exec), or -1 with the reason in err.  Gives up at `deadline`
 * (monotonic ms).  Never raises SIGPIPE. */
int dl_tls_wrap(const dl_config_t *c, const char *host, int fd, uint64_t deadline,
                char *err, size_t errlen);

#endif
