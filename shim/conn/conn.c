/* SPDX-License-Identifier: BSD-3-Clause */
/* conn.c - the one interface to the process's connections, dispatching to
 * the backend of its topology (see conn.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster.h"
#include "conn.h"
#include "redlock.h"
#include "sentinel.h"
#include "single.h"

struct dl_conn {
    const dl_config_t *cfg;
    const dl_backend_t *be;
    void *b;                  /* the backend's state: its links */
};

/* The backend of c's topology: the one place outside config.c that
 * tells topologies apart by the scheme (connect.c and single.c only tell
 * a unix socket's path from a TCP host by it). */
static const dl_backend_t *backend_of(const dl_config_t *c)
{
    switch (c->scheme) {
    case DL_SCHEME_SENTINEL:
        return &dl_backend_sentinel;
    case DL_SCHEME_CLUSTER:
        return &dl_backend_cluster;
    case DL_SCHEME_REDLOCK:
        return &dl_backend_redlock;
    default:                  /* redis://, unix://, rediss:// */
        return &dl_backend_single;
    }
}

dl_conn_t *dl_conn_new(const dl_config_t *c)
{
    dl_conn_t *conn = calloc(1, sizeof *conn);
    if (!conn)
        return NULL;
    conn->cfg = c;
    conn->be = backend_of(c);
    if (!(conn->b = conn->be->open(c))) {
        free(conn);
        return NULL;
    }
    return conn;
}

dl_caps_t dl_conn_caps(const dl_conn_t *c)
{
    return c->be->caps;
}

int dl_conn_together(const dl_conn_t *c, const char *const *keys, const size_t *lens, int n)
{
    if (!c->be->caps.slots || n < 2)
        return 1;
    unsigned slot = dl_cluster_slot(keys[0], lens[0]);
    for (int i = 1; i < n; i++)
        if (dl_cluster_slot(keys[i], lens[i]) != slot)
            return 0;
    return 1;
}

redisContext *dl_connect_any(const dl_config_t *c, unsigned long timeout_ms,
                             char *err, size_t errlen)
{
    return backend_of(c)->connect_any(c, timeout_ms, err, errlen);
}

int dl_conn_locate(dl_conn_t *c, unsigned slot, int reload, dl_endpoint_t *ep, char *err,
                   size_t errlen)
{
    if (!c->be->locate) {
        snprintf(err, errlen, "no slots in this topology");
        return ENOTSUP;
    }
    return c->be->locate(c->b, slot, reload, ep, err, errlen);
}

void dl_conn_abandon(dl_conn_t *c)
{
    if (c)
        c->be->abandon(c->b);
}

void dl_conn_free(dl_conn_t *c)
{
    if (!c)
        return;
    c->be->free(c->b);
    free(c);
}

/* Before a call: whether a command was sent, or sent again, is this
 * call's news. */
static void clear_marks(dl_cmd_t *cmds, int n)
{
    for (int i = 0; i < n; i++)
        cmds[i].retried = cmds[i].sent = 0;
}

int dl_conn_exec(dl_conn_t *c, dl_cmd_t *cmds, int n)
{
    clear_marks(cmds, n);
    return c->be->exec(c->b, -1, cmds, n);
}

int dl_conn_post(dl_conn_t *c, int argc, const char **argv, const size_t *argvlen)
{
    if (!c->be->caps.post)
        return ENOTSUP;
    return c->be->post(c->b, argc, argv, argvlen);
}

int dl_conn_defer(dl_conn_t *c, int node, const dl_cmd_t *cmd, int looks, uint64_t give_up)
{
    if (!c->be->defer)
        return ENOTSUP;
    return c->be->defer(c->b, node, cmd, looks, give_up);
}

const dl_config_t *dl_conn_config(const dl_conn_t *c)
{
    return c->cfg;
}

int dl_conn_nodes(const dl_conn_t *c)
{
    return c->be->nodes(c->b);
}

int dl_conn_exec_node(dl_conn_t *c, int node, dl_cmd_t *cmds, int n)
{
    clear_marks(cmds, n);
    return c->be->exec(c->b, node, cmds, n);
}

void dl_conn_start_node(dl_conn_t *c, int node, dl_cmd_t *cmds, int n, dl_link_op_t *op)
{
    clear_marks(cmds, n);
    c->be->start(c->b, node, cmds, n, op);
}

int dl_conn_finish_node(dl_conn_t *c, int node, dl_cmd_t *cmds, int n, dl_link_op_t *op)
{
    return c->be->finish(c->b, node, cmds, n, op);
}

int dl_conn_wait(dl_conn_t *c, const char *key, size_t keylen, char *err, size_t errlen)
{
    const dl_config_t *cfg = c->cfg;
    char nbuf[16], msbuf[24];
    const char *argv[3] = { "WAIT", nbuf, msbuf };
    size_t argvlen[3] = { 4, (size_t)snprintf(nbuf, sizeof nbuf, "%u", cfg->wait_replicas),
                          (size_t)snprintf(msbuf, sizeof msbuf, "%lu", cfg->wait_ms) };
    int nodes = dl_conn_nodes(c), ok = 0, need = nodes / 2 + 1;
    long long least = -1;
    err[0] = 0;
    /* Every server's WAIT at once: a call waits wait_ms at most, not one
     * wait_ms per lagging server. */
    dl_cmd_t cmd[DL_MAX_ENDPOINTS];
    dl_link_op_t op[DL_MAX_ENDPOINTS];
    for (int i = 0; i < nodes; i++) {
        memset(&cmd[i], 0, sizeof cmd[i]);
        cmd[i].argc = 3;
        cmd[i].argv = argv;
        cmd[i].argvlen = argvlen;
        cmd[i].key = key;
        cmd[i].keylen = keylen;
        dl_conn_start_node(c, i, &cmd[i], 1, &op[i]);
    }
    for (int i = 0; i < nodes; i++) {
        if (dl_conn_finish_node(c, i, &cmd[i], 1, &op[i])) {
            snprintf(err, errlen, "%s", cmd[i].errmsg);
            continue;
        }
        redisReply *r = cmd[i].reply;
        if (r->type == REDIS_REPLY_INTEGER) {
            if (r->integer >= (long long)cfg->wait_replicas)
                ok++;
            if (least < 0 || r->integer < least)
                least = r->integer;
        } else {
            snprintf(err, errlen, "WAIT: %s", r->type == REDIS_REPLY_ERROR ? r->str : "unexpected reply");
        }
        freeReplyObject(r);
    }
    if (ok >= need)
        return 0;
    if (least >= 0)
        snprintf(err, errlen, "only %lld of the %u replicas asked for (?wait=) acknowledged "
                 "within %lu ms%s", least, cfg->wait_replicas, cfg->wait_ms,
                 nodes > 1 ? " on some servers" : "");
    return EIO;
}
