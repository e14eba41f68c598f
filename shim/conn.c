/* SPDX-License-Identifier: BSD-3-Clause */
/* conn.c - the process's command connections: one link, a cluster's links,
 * or redlock's independent servers (see conn.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dl.h"
#include "dl_link.h"

struct dl_conn {
    const dl_config_t *cfg;
    dl_link_t *links[DL_MAX_ENDPOINTS];   /* 1, or redlock's servers */
    int nlinks;
    dl_cluster_t *cluster;                /* redis-cluster:// */
};

/* A redlock server that failed is skipped this long, so a dead one costs
 * one timeout per second, not one per lock call. */
#define DL_REDLOCK_DOWN_MS 1000

dl_conn_t *dl_conn_new(const dl_config_t *c)
{
    dl_conn_t *conn = calloc(1, sizeof *conn);
    if (!conn)
        return NULL;
    conn->cfg = c;
    if (c->scheme == DL_SCHEME_CLUSTER) {
        if (!(conn->cluster = dl_cluster_new(c)))
            goto nomem;
        return conn;
    }
    if (c->scheme == DL_SCHEME_REDLOCK) {
        /* Each server answers within a tenth of the lease, or the quorum
         * goes on without it: a slow server must not eat the validity. */
        unsigned long t = c->lease_ms / 10;
        if (t < 50)
            t = 50;
        if (t > c->io_timeout_ms)
            t = c->io_timeout_ms;
        for (int i = 0; i < c->nep; i++)
            if (!(conn->links[conn->nlinks++] = dl_link_new(c, &c->ep[i], 1, t, DL_REDLOCK_DOWN_MS)))
                goto nomem;
        return conn;
    }
    if (!(conn->links[conn->nlinks++] = dl_link_new(c, &c->ep[0], 0, c->io_timeout_ms, 0)))
        goto nomem;
    return conn;
nomem:
    dl_conn_free(conn);
    return NULL;
}

dl_caps_t dl_conn_caps(const dl_conn_t *c)
{
    dl_caps_t caps = { .queue = 1, .quorum = 0 };
    if (c->cfg->scheme == DL_SCHEME_REDLOCK) {
        caps.queue = 0;
        caps.quorum = 1;
    }
    return caps;
}

void dl_conn_abandon(dl_conn_t *c)
{
    if (!c)
        return;
    for (int i = 0; i < c->nlinks; i++)
        dl_link_abandon(c->links[i]);
    dl_cluster_abandon(c->cluster);
}

void dl_conn_free(dl_conn_t *c)
{
    if (!c)
        return;
    for (int i = 0; i < c->nlinks; i++)
        dl_link_free(c->links[i]);
    dl_cluster_free(c->cluster);
    free(c);
}

int dl_conn_exec(dl_conn_t *c, dl_cmd_t *cmds, int n)
{
    for (int i = 0; i < n; i++)
        cmds[i].retried = cmds[i].sent = 0;
    if (c->cluster)
        return dl_cluster_exec(c->cluster, cmds, n);
    return dl_link_exec(c->links[0], cmds, n);
}

int dl_conn_post(dl_conn_t *c, int argc, const char **argv, const size_t *argvlen)
{
    if (c->cluster || c->nlinks != 1)
        return ENOTSUP;
    return dl_link_post(c->links[0], argc, argv, argvlen);
}

int dl_conn_nodes(const dl_conn_t *c)
{
    return c->cluster ? 1 : c->nlinks;
}

int dl_conn_exec_node(dl_conn_t *c, int node, dl_cmd_t *cmds, int n)
{
    if (c->cluster)
        return dl_conn_exec(c, cmds, n);
    for (int i = 0; i < n; i++)
        cmds[i].retried = cmds[i].sent = 0;
    return dl_link_exec(c->links[node], cmds, n);
}

void dl_conn_start_node(dl_conn_t *c, int node, dl_cmd_t *cmds, int n, dl_link_op_t *op)
{
    for (int i = 0; i < n; i++)
        cmds[i].retried = cmds[i].sent = 0;
    if (c->cluster) {             /* one node: nothing to overlap */
        memset(op, 0, sizeof *op);
        return;
    }
    dl_link_start(c->links[node], cmds, n, op);
}

int dl_conn_finish_node(dl_conn_t *c, int node, dl_cmd_t *cmds, int n, dl_link_op_t *op)
{
    if (c->cluster)
        return dl_cluster_exec(c->cluster, cmds, n);
    return dl_link_finish(c->links[node], cmds, n, op);
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
