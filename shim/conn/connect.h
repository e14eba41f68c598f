/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * connect.h - opening one connection to one server: TCP or unix socket
 * (through TLS when configured, tls.h), AUTH, SELECT, close-on-exec,
 * keepalive and timeouts.  Blocking, and stateless but for which server
 * dl_connect_first tried last.
 *
 * Used by the backends' dialers (cmdlink_io.h), the subscriber (through
 * dl_connect_any, conn.h) and the distlock command, which open
 * connections of their own.
 */
#ifndef DL_CONNECT_H
#define DL_CONNECT_H

#include <hiredis/hiredis.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"

/* Opens a connection to endpoint ep within `timeout_ms`: connect, AUTH,
 * SELECT, FD_CLOEXEC, keepalive, and a command timeout of timeout_ms.  NULL
 * with a reason in err on failure.  A SELECT the server refuses (no such
 * database) is a configuration error: it is also set as the process's
 * refusal (error.h dl_refused_set), which a connection set up clears.
 * Blocks. */
redisContext *dl_connect_ep(const dl_config_t *c, const dl_endpoint_t *ep,
                            unsigned long timeout_ms, char *err, size_t errlen);
/* The socket alone, with its timeouts: no AUTH or SELECT (sentinels have
 * neither).  NULL with a reason in err. */
redisContext *dl_connect_socket(const dl_config_t *c, const dl_endpoint_t *ep, int is_unix,
                                unsigned long timeout_ms, char *err, size_t errlen);
/* A round over c's endpoints, one try each, from `first` on: the index of
 * the k-th to try (k from 0), and in *left how long that try may take (at
 * most 1 s, and what is left until `end`, a monotonic ms time); -1 when
 * every one was tried or `end` has passed (the first is always tried). */
int dl_connect_round(const dl_config_t *c, int first, int k, uint64_t end, unsigned long *left);
/* The first of c's endpoints that answers (at most 1 s each), starting
 * after the one that answered last, so that a dead one is not the first
 * tried every time. */
redisContext *dl_connect_first(const dl_config_t *c, unsigned long timeout_ms,
                               char *err, size_t errlen);

/* A hint for a plain connection that failed before its first reply, the
 * way a TLS port treats plain text: " (a TLS port? use rediss://)" or "". */
const char *dl_plain_hint(const dl_config_t *c, const redisContext *ctx);

/* Block SIGPIPE in this thread around hiredis's own writes (connect-time
 * AUTH/SELECT) and swallow one they raised, so a vanished server never
 * kills the host program.  The command path sends with MSG_NOSIGNAL. */
void dl_sigpipe_block(sigset_t *old, int *pending_before);
void dl_sigpipe_restore(const sigset_t *old, int pending_before);

#endif
