/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cmdlink_io.h - the I/O of one command link (cmdlink.h): its connection
 * to one server and one batch's round trip on it: connect (through the
 * dialer its backend gave), write, read, reconnect and resend until the
 * I/O time-out, per-command deadlines, undos behind commands a stalled
 * server may still run, and the reply-less posts.
 *
 * Owner: a dl_link_io_t is embedded in its link; cmdlink_io.c alone reads
 * and writes its fields, and only the thread leading the link calls it
 * (cmdlink.c decides who leads; a post runs under the link's mutex while
 * nobody leads).  It knows nothing of topologies: what differs between
 * them comes in dl_link_conf_t.
 */
#ifndef DL_CMDLINK_IO_H
#define DL_CMDLINK_IO_H

#include <hiredis/hiredis.h>
#include <stddef.h>
#include <stdint.h>

#include "cmd.h"
#include "config.h"
#include "transport.h"

/* Opens a ready connection (AUTH and SELECT done) to the link's server
 * within timeout_ms; NULL with a reason in err.  dl_connect_ep is one;
 * redis-sentinel:// asks the sentinels for the master and ignores ep. */
typedef redisContext *dl_dial_fn(const dl_config_t *cfg, const dl_endpoint_t *ep,
                                 unsigned long timeout_ms, char *err, size_t errlen);

/* What a backend tells the link it creates. */
typedef struct dl_link_conf {
    const dl_config_t *cfg;   /* for the dialer; the link itself only picks
                                 its transport by it (dl_transport_of) and
                                 hands it to dl_plain_hint */
    dl_endpoint_t ep;         /* for the dialer; names the link (cluster) */
    dl_dial_fn *dial;
    /* A reply that says the server is no master serving its data now
     * (dl_fault_not_master: a demoted master, one loading its data) makes
     * the link leave it: the command did not run; the link reconnects,
     * dialing anew, and resends it.  0: such a reply is the caller's. */
    int leave_not_master;
    char name[160];           /* the server in messages: "HOST:PORT" */
    /* A connection failure fails the batch at once instead of retrying for
     * the I/O timeout, and for down_ms after it the link fails at once
     * without trying (0: try every time): the caller has other servers to
     * turn to. */
    int fail_fast;
    unsigned long timeout_ms; /* connect and command timeout */
    unsigned long down_ms;
    /* Posts (dl_link_post) may be written: the backend sends every command
     * of the process on this one connection.  The link still probes that
     * the server takes CLIENT REPLY SKIP, and never posts over TLS. */
    int may_post;
} dl_link_conf_t;

typedef struct dl_link_io {
    dl_link_conf_t conf;
    uint64_t down_until;      /* fail_fast: monotonic ms */
    char down_err[200];
    const dl_transport_t *tr; /* how ctx's bytes move: plain or TLS */
    redisContext *ctx;
    void *trs;                /* the transport's state of ctx (TLS: its
                                 session, whose I/O the link does itself) */
    int can_post;             /* this connection accepts CLIENT REPLY SKIP */
    int connected;            /* it has been connected before: the next
                                 connection counts as a reconnection */
} dl_link_io_t;

/* Sets a link's I/O up as conf says (copied); nothing is connected yet. */
void dl_link_io_init(dl_link_io_t *io, const dl_link_conf_t *conf);
/* One batch's I/O.  Each command ends with a reply or EIO; a connection
 * failure is retried (reconnect, resend what has no reply yet) until the
 * I/O timeout has passed since it began.  written: dl_link_io_presend sent
 * the batch already. */
void dl_link_io_run(dl_link_io_t *io, dl_cmd_t **cmds, size_t n, int written);
/* Writes the batch on the live connection without reading: 1 if all of it
 * went out.  No connect and no wait: without a usable connection the
 * batch is left to dl_link_io_run. */
int dl_link_io_presend(dl_link_io_t *io, dl_cmd_t **cmds, size_t n);
/* Writes one command after CLIENT REPLY SKIP on the live connection, held
 * back (MSG_MORE) until the next command goes out.  0, or EAGAIN with no
 * live connection that takes posts. */
int dl_link_io_post(dl_link_io_t *io, int argc, const char **argv, const size_t *argvlen);
/* Closes the connection (the next batch reconnects). */
void dl_link_io_drop(dl_link_io_t *io);
/* After fork, in the child: closes the socket without sending anything. */
void dl_link_io_abandon(dl_link_io_t *io);

#endif
