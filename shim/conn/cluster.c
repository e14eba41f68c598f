/* SPDX-License-Identifier: BSD-3-Clause */
/* cluster.c - redis-cluster://: slot routing and redirections (see
 * cluster.h). */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster.h"
#include "trust.h"
#include "cmdlink.h"
#include "dl.h"

#define DL_SLOTS 16384
#define DL_MAX_NODES 128

typedef struct dl_cluster {
    const dl_config_t *cfg;
    pthread_mutex_t mu;               /* nodes[] growth and slots[] */
    dl_link_t *nodes[DL_MAX_NODES];   /* never freed before exit: links stay valid */
    int nnodes;
    short slots[DL_SLOTS];            /* node index, -1 unknown */
} dl_cluster_t;

/* CRC16-CCITT (XMODEM), as Redis Cluster uses it. */
static unsigned crc16(const char *buf, size_t len)
{
    unsigned crc = 0;
    for (size_t i = 0; i < len; i++) {
        crc ^= (unsigned)(unsigned char)buf[i] << 8;
        for (int b = 0; b < 8; b++)
            crc = (crc & 0x8000) ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
    }
    return crc;
}

unsigned dl_key_slot(const char *key, size_t len)
{
    const char *open = memchr(key, '{', len);
    if (open) {
        size_t rest = len - (size_t)(open + 1 - key);
        const char *close = memchr(open + 1, '}', rest);
        if (close && close > open + 1)
            return crc16(open + 1, (size_t)(close - open - 1)) & (DL_SLOTS - 1);
    }
    return crc16(key, len) & (DL_SLOTS - 1);
}

/* The index of host:port's link, created if new; -1 if the table is full.
 * cl->mu held. */
static int node_index(dl_cluster_t *cl, const char *host, int port)
{
    for (int i = 0; i < cl->nnodes; i++) {
        const dl_endpoint_t *ep = dl_link_ep(cl->nodes[i]);
        if (ep->port == port && strcmp(ep->host, host) == 0)
            return i;
    }
    if (cl->nnodes == DL_MAX_NODES || strlen(host) >= sizeof ((dl_endpoint_t *)0)->host)
        return -1;
    /* Fail fast: this layer retries, after asking for a new slot map. */
    dl_link_conf_t conf = {
        .cfg = cl->cfg,
        .dial = dl_connect_ep,
        .fail_fast = 1,
        .timeout_ms = cl->cfg->io_timeout_ms,
    };
    snprintf(conf.ep.host, sizeof conf.ep.host, "%s", host);
    conf.ep.port = port;
    dl_ep_name(&conf.ep, 0, conf.name, sizeof conf.name);
    dl_link_t *k = dl_link_new(&conf);
    if (!k)
        return -1;
    cl->nodes[cl->nnodes] = k;
    return cl->nnodes++;
}

static void *cluster_open(const dl_config_t *cfg)
{
    dl_cluster_t *cl = calloc(1, sizeof *cl);
    if (!cl)
        return NULL;
    cl->cfg = cfg;
    pthread_mutex_init(&cl->mu, NULL);
    for (int s = 0; s < DL_SLOTS; s++)
        cl->slots[s] = -1;
    for (int i = 0; i < cfg->nep; i++)
        node_index(cl, cfg->ep[i].host, cfg->ep[i].port);
    return cl;
}

static void cluster_abandon(void *b)
{
    dl_cluster_t *cl = b;
    for (int i = 0; i < cl->nnodes; i++)
        dl_link_abandon(cl->nodes[i]);
}

static void cluster_free(void *b)
{
    dl_cluster_t *cl = b;
    for (int i = 0; i < cl->nnodes; i++)
        dl_link_free(cl->nodes[i]);
    pthread_mutex_destroy(&cl->mu);
    free(cl);
}

/* Applies a CLUSTER SLOTS reply from node `from`. */
static int apply_slots(dl_cluster_t *cl, const redisReply *r, int from)
{
    if (r->type != REDIS_REPLY_ARRAY)
        return EIO;
    pthread_mutex_lock(&cl->mu);
    const dl_endpoint_t *fep = dl_link_ep(cl->nodes[from]);
    for (size_t i = 0; i < r->elements; i++) {
        const redisReply *e = r->element[i];
        if (e->type != REDIS_REPLY_ARRAY || e->elements < 3 ||
            e->element[0]->type != REDIS_REPLY_INTEGER || e->element[1]->type != REDIS_REPLY_INTEGER ||
            e->element[2]->type != REDIS_REPLY_ARRAY || e->element[2]->elements < 2)
            continue;
        const redisReply *m = e->element[2];
        if (m->element[0]->type != REDIS_REPLY_STRING || m->element[1]->type != REDIS_REPLY_INTEGER)
            continue;
        /* An empty address means "the node you asked". */
        const char *host = m->element[0]->len ? m->element[0]->str : fep->host;
        int idx = node_index(cl, host, (int)m->element[1]->integer);
        if (idx < 0)
            continue;
        long long lo = e->element[0]->integer, hi = e->element[1]->integer;
        for (long long s = lo < 0 ? 0 : lo; s <= hi && s < DL_SLOTS; s++)
            cl->slots[s] = (short)idx;
    }
    pthread_mutex_unlock(&cl->mu);
    return 0;
}

/* Loads the slot map from the first node that answers. */
static int refresh(dl_cluster_t *cl, char *err, size_t errlen)
{
    pthread_mutex_lock(&cl->mu);
    int n = cl->nnodes;
    pthread_mutex_unlock(&cl->mu);
    for (int i = 0; i < n; i++) {
        static const char *argv[] = { "CLUSTER", "SLOTS" };
        static const size_t argvlen[] = { 7, 5 };
        dl_cmd_t cmd;
        memset(&cmd, 0, sizeof cmd);
        cmd.argc = 2;
        cmd.argv = argv;
        cmd.argvlen = argvlen;
        pthread_mutex_lock(&cl->mu);
        dl_link_t *k = cl->nodes[i];
        pthread_mutex_unlock(&cl->mu);
        if (dl_link_exec(k, &cmd, 1)) {
            snprintf(err, errlen, "%s", cmd.errmsg);
            continue;
        }
        int rc = cmd.reply->type == REDIS_REPLY_ERROR ? EIO : apply_slots(cl, cmd.reply, i);
        if (rc)
            snprintf(err, errlen, "redis cluster: CLUSTER SLOTS: %s",
                     cmd.reply->type == REDIS_REPLY_ERROR ? cmd.reply->str : "unexpected reply");
        freeReplyObject(cmd.reply);
        if (!rc)
            return 0;
    }
    return EIO;
}

/* "MOVED 3999 127.0.0.1:6381" / "ASK ...": the target's node index. */
static int redirect_target(dl_cluster_t *cl, const char *msg, int *slot)
{
    const char *sp = strchr(msg, ' ');
    if (!sp)
        return -1;
    char *end;
    long s = strtol(sp + 1, &end, 10);
    if (*end != ' ' || s < 0 || s >= DL_SLOTS)
        return -1;
    const char *addr = end + 1, *colon = strrchr(addr, ':');
    if (!colon || colon == addr || (size_t)(colon - addr) >= 256)
        return -1;
    char host[256];
    memcpy(host, addr, (size_t)(colon - addr));
    host[colon - addr] = 0;
    int port = atoi(colon + 1);
    if (port <= 0 || port > 65535)
        return -1;
    *slot = (int)s;
    pthread_mutex_lock(&cl->mu);
    int idx = node_index(cl, host, port);
    pthread_mutex_unlock(&cl->mu);
    return idx;
}

static int starts(const redisReply *r, const char *word)
{
    size_t n = strlen(word);
    return r && r->type == REDIS_REPLY_ERROR && strncmp(r->str, word, n) == 0 &&
           (r->str[n] == ' ' || r->str[n] == 0);
}

/* Every command to the node of its slot, in one batch per node. */
static int cluster_exec(dl_cluster_t *cl, dl_cmd_t *cmds, int n)
{
    static const char *asking_argv[] = { "ASKING" };
    static const size_t asking_len[] = { 6 };
    int *node = malloc((size_t)n * sizeof *node), *ask = malloc((size_t)n * sizeof *ask);
    char *pending = malloc((size_t)n);
    dl_cmd_t *tmp = malloc((size_t)n * 2 * sizeof *tmp);
    int *idx = malloc((size_t)n * 2 * sizeof *idx);
    if (!node || !ask || !pending || !tmp || !idx) {
        free(node), free(ask), free(pending), free(tmp), free(idx);
        for (int i = 0; i < n; i++) {
            cmds[i].err = EIO;
            snprintf(cmds[i].errmsg, sizeof cmds[i].errmsg, "out of memory");
        }
        return EIO;
    }
    char err[200] = "redis cluster: no node answered";
    int mapped;
    pthread_mutex_lock(&cl->mu);
    mapped = cl->slots[0] >= 0 || cl->slots[DL_SLOTS - 1] >= 0;
    pthread_mutex_unlock(&cl->mu);
    if (!mapped)
        refresh(cl, err, sizeof err);
    for (int i = 0; i < n; i++) {
        pending[i] = 1;
        ask[i] = -1;
        cmds[i].reply = NULL;
        cmds[i].err = 0;
    }
    uint64_t give_up = dl_now_ms() + cl->cfg->io_timeout_ms;
    unsigned backoff = 10, rounds = 0;
    int rc = 0;
    for (;;) {
        /* Route what is pending. */
        pthread_mutex_lock(&cl->mu);
        for (int i = 0; i < n; i++) {
            if (!pending[i])
                continue;
            int d = ask[i];
            if (d < 0 && cmds[i].key)
                d = cl->slots[dl_key_slot(cmds[i].key, cmds[i].keylen)];
            node[i] = d >= 0 ? d : (int)(rounds % (unsigned)cl->nnodes);
        }
        pthread_mutex_unlock(&cl->mu);

        /* One batch per node, in turn. */
        for (int i = 0; i < n; i++) {
            if (!pending[i] || node[i] < 0)
                continue;
            int d = node[i], m = 0;
            for (int j = i; j < n; j++) {
                if (!pending[j] || node[j] != d)
                    continue;
                if (ask[j] >= 0) {
                    memset(&tmp[m], 0, sizeof tmp[m]);
                    tmp[m].argc = 1;
                    tmp[m].argv = asking_argv;
                    tmp[m].argvlen = asking_len;
                    idx[m++] = -1;
                }
                tmp[m] = cmds[j];
                idx[m++] = j;
                node[j] = -1;         /* sent */
            }
            pthread_mutex_lock(&cl->mu);
            dl_link_t *k = cl->nodes[d];
            pthread_mutex_unlock(&cl->mu);
            dl_link_exec(k, tmp, m);
            for (int t = 0; t < m; t++) {
                if (idx[t] < 0) {
                    if (tmp[t].reply)
                        freeReplyObject(tmp[t].reply);
                    continue;
                }
                dl_cmd_t *c = &cmds[idx[t]];
                c->reply = tmp[t].reply;
                c->err = tmp[t].err;
                c->retried |= tmp[t].retried;
                c->sent |= tmp[t].sent;
                memcpy(c->errmsg, tmp[t].errmsg, sizeof c->errmsg);
            }
        }

        /* Settle what has a final answer; redirect the rest. */
        int again = 0, pause = 0, remap = 0;
        for (int i = 0; i < n; i++) {
            if (!pending[i])
                continue;
            dl_cmd_t *c = &cmds[i];
            redisReply *r = c->reply;
            int slot, to;
            if (c->err && c->deadline && dl_now_ms() >= c->deadline) {
                pending[i] = 0;           /* its caller's deadline ran out */
                continue;
            }
            if (c->err) {
                /* The node failed, perhaps mid-command: it may have run. */
                snprintf(err, sizeof err, "%s", c->errmsg);
                c->retried = 1;
                c->err = 0;
                ask[i] = -1;
                pause = remap = again = 1;
                continue;
            }
            if (starts(r, "MOVED") && (to = redirect_target(cl, r->str, &slot)) >= 0) {
                pthread_mutex_lock(&cl->mu);
                cl->slots[slot] = (short)to;
                pthread_mutex_unlock(&cl->mu);
                ask[i] = -1;
                DL_STAT_ADD(redirects, 1);
                /* The slot moved: after a failover, to a replica that may
                 * have lacked our holds (trust.h). */
                dl_trust_end(r->str);
            } else if (starts(r, "ASK") && (to = redirect_target(cl, r->str, &slot)) >= 0) {
                ask[i] = to;
                DL_STAT_ADD(redirects, 1);
            } else if (starts(r, "TRYAGAIN") || starts(r, "CLUSTERDOWN")) {
                /* A slot half-migrated, or the cluster voting a failover. */
                snprintf(err, sizeof err, "redis cluster: %s", r->str);
                ask[i] = -1;
                pause = 1;
                remap |= starts(r, "CLUSTERDOWN");
                if (starts(r, "CLUSTERDOWN"))
                    dl_trust_end(r->str);
            } else {
                pending[i] = 0;
                continue;
            }
            freeReplyObject(r);
            c->reply = NULL;
            again = 1;
        }
        if (!again)
            break;
        rounds++;
        uint64_t now = dl_now_ms();
        if (now >= give_up) {
            for (int i = 0; i < n; i++)
                if (pending[i]) {
                    cmds[i].err = EIO;
                    snprintf(cmds[i].errmsg, sizeof cmds[i].errmsg, "%s", err);
                }
            rc = EIO;
            break;
        }
        if (pause || rounds > 8) {
            uint64_t left = give_up - now;
            dl_sleep_ms((unsigned)(backoff < left ? backoff : left));
            backoff = backoff * 2 > 200 ? 200 : backoff * 2;
        }
        if (remap)
            refresh(cl, err, sizeof err);
    }
    free(node), free(ask), free(pending), free(tmp), free(idx);
    return rc;
}

static int cluster_nodes(const void *b)
{
    (void)b;
    return 1;                 /* one keyspace, whatever the number of nodes */
}

static int cluster_exec_node(void *b, int node, dl_cmd_t *cmds, int n)
{
    (void)node;
    return cluster_exec(b, cmds, n);
}

static void cluster_start(void *b, int node, dl_cmd_t *cmds, int n, dl_link_op_t *op)
{
    (void)b, (void)node, (void)cmds, (void)n;
    memset(op, 0, sizeof *op);    /* one node: nothing to overlap */
}

static int cluster_finish(void *b, int node, dl_cmd_t *cmds, int n, dl_link_op_t *op)
{
    (void)node, (void)op;
    return cluster_exec(b, cmds, n);
}

const dl_backend_t dl_backend_cluster = {
    .caps = { .queue = 1, .quorum = 0, .post = 0 },
    .open = cluster_open,
    .nodes = cluster_nodes,
    .exec = cluster_exec_node,
    .start = cluster_start,
    .finish = cluster_finish,
    .connect_any = dl_connect_first,
    .abandon = cluster_abandon,
    .free = cluster_free,
};
