/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tls_relay.h - the relay threads of the TLS layer (tls_relay.c), internal
 * to it: after the handshake (tls.c) a relay thread per connection moves
 * bytes between the TLS session and one end of a socketpair, whose other
 * end hiredis is given (see tls.h); the command link takes its session
 * back from the relay (tls_direct.c).
 *
 * tls_relay.c owns the list of live relays and each relay's state,
 * whether TLS is in use in this process at all, and dl_tls_busy: held
 * shared by every thread inside OpenSSL on a connection (a relay, a
 * handshake), exclusively by fork() (its atfork handlers are here) and
 * at the very end of the process.
 */
#ifndef DL_TLS_RELAY_H
#define DL_TLS_RELAY_H

#include <pthread.h>
#include <stddef.h>

#include <openssl/ssl.h>

/* Taken shared around every OpenSSL call on a connection, released
 * around every wait (poll) in between. */
extern pthread_rwlock_t dl_tls_busy;

/* OpenSSL is in use from now on: fork() and the end of the process take
 * dl_tls_busy (before, they touch no lock at all). */
void dl_tls_mark_used(void);

/* Starts the relay of a session whose handshake is done on the TCP socket
 * fd: returns the user's end of the socketpair (blocking, close-on-exec),
 * the relay owning ssl and fd from then on; or -1 with the reason in err,
 * ssl and fd still the caller's.  The caller holds dl_tls_busy shared. */
int dl_tls_relay_start(SSL *ssl, int fd, char *err, size_t errlen);

/* Stops the relay whose user's end is `user` without closing its session:
 * waits for its thread to end and gives the session (*ssl) and its TCP
 * socket (*tcp, non-blocking) to the caller.  -1: no relay has that end.
 * Every reply must have been read. */
int dl_tls_relay_detach(int user, SSL **ssl, int *tcp);

#endif
