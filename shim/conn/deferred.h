/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * deferred.h - commands that must reach a server, sent in the background
 * until they do (redlock.c's dl_conn_defer): the release of a hold on a
 * server that failed while it held, the withdrawal of an acquisition that
 * did not count on a server whose reply timed out.  A quorum call returns
 * once a majority answered; what the others still owe is sent from here.
 *
 * One thread per set (started at the first command, stopped by
 * dl_deferred_free), which sends each server's due commands as one batch
 * on that server's link (cmdlink.h), the link every caller shares: a
 * server in its down window fails them at once, and they are tried again
 * a little later.
 *
 * Owner: deferred.c owns the set and its commands (copies); the links are
 * its backend's and outlive it.
 */
#ifndef DL_DEFERRED_H
#define DL_DEFERRED_H

#include <stdint.h>

#include "cmd.h"
#include "cmdlink.h"

typedef struct dl_deferred dl_deferred_t;

/* A set sending on links[0..n) (node i on links[i]).  NULL on ENOMEM. */
dl_deferred_t *dl_deferred_new(dl_link_t *const *links, int n);
/* As dl_conn_defer (conn.h). */
int dl_deferred_add(dl_deferred_t *d, int node, const dl_cmd_t *cmd, int looks, uint64_t give_up);
/* Stops the thread (waiting for a batch under way) and frees what is left
 * unsent.  NULL: nothing. */
void dl_deferred_free(dl_deferred_t *d);

#endif
