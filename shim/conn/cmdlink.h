/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cmdlink.h - one server's shared, auto-pipelined command link, the
 * building block of every backend (single.c, sentinel.c, cluster.c,
 * redlock.c).
 *
 * A link is one socket to one server, shared by every thread of the
 * process and pipelined automatically: a thread that finds no other thread
 * doing I/O on it becomes the leader, writes every queued command at once
 * and hands each reply back to the thread that asked; others wait.  So any
 * number of threads use one socket, and a batch (the watchdog's renewals)
 * costs one round trip.
 *
 * Owner: cmdlink.c keeps the queue and decides who leads (under the
 * link's mutex); the leader does the I/O through cmdlink_io.c.  The link
 * knows no topology: its backend passes the dialer, the server's name,
 * whether to fail fast and whether it may post (dl_link_conf_t).
 */
#ifndef DL_CMDLINK_H
#define DL_CMDLINK_H

#include "cmd.h"
#include "cmdlink_io.h"

typedef struct dl_link dl_link_t;

/* A link as conf says (copied).  NULL on ENOMEM. */
dl_link_t *dl_link_new(const dl_link_conf_t *conf);
/* As dl_conn_exec, on this link only. */
int dl_link_exec(dl_link_t *k, dl_cmd_t *cmds, int n);
/* One command alone on the link (as dl_link_exec): its reply, which the
 * caller frees, or NULL with the link's reason in err. */
redisReply *dl_link_ask(dl_link_t *k, int argc, const char **argv, const size_t *argvlen,
                        char *err, size_t errlen);
/* dl_link_exec in two halves (see dl_conn_start_node). */
void dl_link_start(dl_link_t *k, dl_cmd_t *cmds, int n, dl_link_op_t *op);
int dl_link_finish(dl_link_t *k, dl_cmd_t *cmds, int n, dl_link_op_t *op);
/* As dl_conn_post, on this link: EAGAIN unless conf.may_post and it can
 * write at once. */
int dl_link_post(dl_link_t *k, int argc, const char **argv, const size_t *argvlen);
/* The endpoint the link was made for. */
const dl_endpoint_t *dl_link_ep(const dl_link_t *k);
/* After fork, in the child. */
void dl_link_abandon(dl_link_t *k);
/* Closes and frees k (NULL: nothing); nobody may be using it. */
void dl_link_free(dl_link_t *k);

#endif
