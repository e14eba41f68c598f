/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * single.h - the backend of one server (redis://, unix://, rediss://):
 * every command of the process on one link (cmdlink.h), which retries a
 * failed connection for the I/O timeout and may post.
 *
 * Owner: the backend's state is its link, nothing else.  The sentinel
 * backend (sentinel.h) is this one with another dialer, and shares these
 * functions.
 */
#ifndef DL_SINGLE_H
#define DL_SINGLE_H

#include "conn.h"

extern const dl_backend_t dl_backend_single;

/* A one-link backend's functions (dl_backend_t), b being its link. */
int dl_single_nodes(const void *b);
int dl_single_exec(void *b, int node, dl_cmd_t *cmds, int n);
void dl_single_start(void *b, int node, dl_cmd_t *cmds, int n, dl_link_op_t *op);
int dl_single_finish(void *b, int node, dl_cmd_t *cmds, int n, dl_link_op_t *op);
int dl_single_post(void *b, int argc, const char **argv, const size_t *argvlen);
void dl_single_abandon(void *b);
void dl_single_free(void *b);

#endif
