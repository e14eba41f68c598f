/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dl_link.h - one auto-pipelined socket to one server (see conn.h), the
 * building block of dl_conn_t.  Internal to conn.c and cluster.c.
 */
#ifndef DL_LINK_H
#define DL_LINK_H

#include "conn.h"

typedef struct dl_link dl_link_t;

/* A link to ep (ignored for redis-sentinel://, whose link asks the
 * sentinels at each connect).  fail_fast: a connection failure fails the
 * batch at once instead of retrying for the I/O timeout, and for down_ms
 * after it the link fails at once without trying (0: try every time); the
 * caller has other servers to turn to.  NULL on ENOMEM. */
dl_link_t *dl_link_new(const dl_config_t *cfg, const dl_endpoint_t *ep, int fail_fast,
                       unsigned long timeout_ms, unsigned long down_ms);
/* As dl_conn_exec, on this link only. */
int dl_link_exec(dl_link_t *k, dl_cmd_t *cmds, int n);
/* dl_link_exec in two halves (see dl_conn_start_node). */
void dl_link_start(dl_link_t *k, dl_cmd_t *cmds, int n, dl_link_op_t *op);
int dl_link_finish(dl_link_t *k, dl_cmd_t *cmds, int n, dl_link_op_t *op);
/* As dl_conn_post, on this link. */
int dl_link_post(dl_link_t *k, int argc, const char **argv, const size_t *argvlen);
const dl_endpoint_t *dl_link_ep(const dl_link_t *k);
/* After fork, in the child. */
void dl_link_abandon(dl_link_t *k);
/* Closes and frees k (NULL: nothing); nobody may be using it. */
void dl_link_free(dl_link_t *k);

/* --- cluster.c --- */
typedef struct dl_cluster dl_cluster_t;
dl_cluster_t *dl_cluster_new(const dl_config_t *cfg);
int dl_cluster_exec(dl_cluster_t *cl, dl_cmd_t *cmds, int n);
void dl_cluster_abandon(dl_cluster_t *cl);
void dl_cluster_free(dl_cluster_t *cl);

#endif
