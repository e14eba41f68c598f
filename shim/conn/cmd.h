/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cmd.h - one command to Redis and its outcome (dl_cmd_t), as every layer
 * passes it from the script calls (script.c) down to the socket
 * (cmdlink_io.c); and a batch started on a link and not yet collected
 * (dl_link_op_t).  Types only.
 *
 * Who writes what: the caller fills in the command (argv, key, deadline,
 * undo); the link that runs it sets reply, err, errmsg, done, trips; conn.c
 * clears retried and sent before each call, and the link or the cluster
 * router sets them.
 */
#ifndef DL_CMD_H
#define DL_CMD_H

#include <hiredis/hiredis.h>
#include <stddef.h>
#include <stdint.h>

typedef struct dl_cmd {
    int argc;
    const char **argv;
    const size_t *argvlen;
    const char *key;          /* routes the command in a cluster; NULL: any node */
    size_t keylen;
    redisReply *reply;        /* set on success; the caller frees it */
    int err;                  /* 0, or EIO when no reply could be had */
    int retried;              /* sent again after a connection failure: the
                                 first copy may have run */
    int sent;                 /* written to a server at least once: with err,
                                 it may still have run there */
    uint64_t deadline;        /* monotonic ms: give up waiting for the reply
                                 then (EIO, errmsg says "timed out"); 0 none */
    /* What undoes this command, should the link give up on it after sending
     * it to a server that timed out (a stalled server runs it when it
     * resumes): written right behind it on the same connection, so the
     * server runs it right after.  undo_argc 0: none. */
    int undo_argc;
    const char **undo_argv;
    const size_t *undo_argvlen;
    /* Never sent twice (with an undo): a round trip that another command's
     * deadline cuts short is not resent for it on a new connection (its
     * first copy may still run when the stalled connection delivers it,
     * after the second was answered).  It ends there too, err EAGAIN, with
     * its undo written behind it, and its caller asks again under a new
     * registration id.  An acquisition that does not queue needs it: a
     * second copy told busy, a first one run later takes the lock for a
     * caller that was told it did not. */
    int once;
    char errmsg[200];         /* with err: "redis HOST:PORT: reason" */
    int probe;                /* a fail-fast link tries its server even while it
                                 skips it for a recent failure (redlock: the
                                 quorum needs it) */
    int done;                 /* internal */
    unsigned long *trips;     /* internal: the queuing thread's count of round
                                 trips (status.h), set by the link */
} dl_cmd_t;

/* A batch started on one link and not yet collected (dl_conn_start_node,
 * dl_conn_finish_node): whether this thread leads the link for it, and the
 * batch it took. */
typedef struct dl_link_op {
    dl_cmd_t **batch;
    size_t bn, bcap;
    int leading;
    int written;              /* the batch went out on the live connection */
    int failed;               /* out of memory: the commands failed at once */
} dl_link_op_t;

#endif
