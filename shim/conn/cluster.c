/* SPDX-License-Identifier: BSD-3-Clause */
/* cluster.c - redis-cluster://: slot routing and redirections (see
 * cluster.h).
 *
 * A lock's script names its six keys, some of them usually absent.  While
 * its slot migrates, Redis 7.0 (getNodeByQuery) runs a command on the
 * source node only if every key it declares is there, redirects it (ASK)
 * only if none is, and replies TRYAGAIN otherwise; on the importing node
 * (after ASKING) it runs a command naming several keys only if all of
 * them are there.  Inside a script, each command is checked the same way
 * (scriptVerifyClusterState): on the source, one that touches a key it
 * lacks (never created, deleted a moment ago by the script itself, or
 * moved) fails the script half-way, its earlier writes kept.  So, while a
 * slot migrates:
 *  - a lock's script is never run on the source: beside its six keys it
 *    declares a seventh that never exists (keys.h, DL_KEY_GUARD), so the
 *    source always has one missing: TRYAGAIN or ASK, never a run;
 *  - on TRYAGAIN (the source still has some of the lock's keys) the client
 *    moves all of them to the importing node in one MIGRATE ... KEYS (the
 *    source runs it alone, and deletes its copies once the target has
 *    them), then asks again;
 *  - on ASK (the source has none of the lock's keys: they are all on the
 *    importing node, or do not exist) it sends ASKING and the script with
 *    only the lock's first key declared (the script derives the others,
 *    lua/common.lua): one declared key runs there whatever exists, and so
 *    does each command of the script, naming one key each.
 * Once the source had none of a lock's keys, no script of the lock runs
 * there again (the guard), so no key of it comes back: a script on the
 * importing node always sees every key of the lock, never a part. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "backoff.h"
#include "channel.h"
#include "cluster.h"
#include "cmdlink.h"
#include "dl.h"
#include "fault.h"
#include "lockform.h"
#include "migrate.h"

#define DL_MAX_NODES 128

typedef struct dl_cluster {
    const dl_config_t *cfg;
    pthread_mutex_t mu;               /* nodes[] growth and slots[] */
    dl_link_t *nodes[DL_MAX_NODES];   /* never freed before exit: links stay valid */
    int nnodes;
    short slots[DL_SLOTS];            /* node index, -1 unknown */
    short asked[DL_SLOTS];            /* the node an ASK last sent a lock's script
                                         to, while its slot migrates; -1 none */
} dl_cluster_t;

/* CRC16-CCITT (XMODEM), as Redis Cluster uses it, a byte at a time from
 * a table made once (every command routed, every call's channel prefix
 * and every object of a cluster's subscriber hash a key). */
static unsigned short crc_table[256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void crc_make(void)
{
    for (unsigned i = 0; i < 256; i++) {
        unsigned crc = i << 8;
        for (int b = 0; b < 8; b++)
            crc = (crc & 0x8000) ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
        crc_table[i] = (unsigned short)crc;
    }
}

static unsigned crc16(const char *buf, size_t len)
{
    pthread_once(&crc_once, crc_make);
    unsigned crc = 0;
    for (size_t i = 0; i < len; i++)
        crc = ((crc << 8) ^ crc_table[((crc >> 8) ^ (unsigned char)buf[i]) & 0xff]) & 0xffff;
    return crc;
}

unsigned dl_cluster_slot(const char *key, size_t len)
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
        cl->slots[s] = cl->asked[s] = -1;
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
        for (long long s = lo < 0 ? 0 : lo; s <= hi && s < DL_SLOTS; s++) {
            if (cl->slots[s] != (short)idx)
                cl->asked[s] = -1;
            cl->slots[s] = (short)idx;
        }
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
        pthread_mutex_lock(&cl->mu);
        dl_link_t *k = cl->nodes[i];
        pthread_mutex_unlock(&cl->mu);
        redisReply *r = dl_link_ask(k, 2, argv, argvlen, err, errlen);
        if (!r)
            continue;
        int rc = r->type == REDIS_REPLY_ERROR ? EIO : apply_slots(cl, r, i);
        if (rc)
            snprintf(err, errlen, "redis cluster: CLUSTER SLOTS: %s",
                     r->type == REDIS_REPLY_ERROR ? r->str : "unexpected reply");
        freeReplyObject(r);
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

static int is_wait(const dl_cmd_t *c)
{
    return c->argc >= 1 && c->argvlen[0] == 4 && strncasecmp(c->argv[0], "WAIT", 4) == 0;
}

/* --- one call: its commands routed, sent per node, settled, in rounds --- */

/* One command of a call, across its rounds. */
typedef struct item {
    dl_cmd_t *cmd;            /* the caller's */
    dl_lockform_t form;       /* how a lock's script goes (lockform.h) */
    int pending;              /* no final answer yet */
    int ask;                  /* the node an ASK sent it to; -1 none */
    int node;                 /* where this round sends it; -1 nowhere */
    int sentto;               /* the slot's node it last went to (not an
                                 ASK's); -1 none */
} item_t;

/* What a round sends to one node, in order: each command, ASKING before
 * one under ASK. */
typedef struct node_batch {
    int node;
    int m;
    dl_cmd_t *cmds;           /* room for 2n */
    int *item;                /* which item each is; -1: an ASKING */
} node_batch_t;

typedef struct call {
    dl_cluster_t *cl;
    item_t *items;
    int n;
    node_batch_t batch;
    unsigned rounds;
    uint64_t give_up;
    dl_backoff_t backoff;
    char err[200];            /* why the last round failed */
} call_t;

/* What a round's answers ask of the next. */
typedef struct verdict {
    int again;                /* some command has no final answer */
    int pause;                /* wait before the next round */
    int remap;                /* ask for the slot map first */
} verdict_t;

static void call_end(call_t *call)
{
    for (int i = 0; call->items && i < call->n; i++)
        dl_lockform_free(&call->items[i].form);
    free(call->items);
    free(call->batch.cmds);
    free(call->batch.item);
}

/* Sets the call up; 0, or EIO with every command failed (no memory). */
static int call_begin(call_t *call, dl_cluster_t *cl, dl_cmd_t *cmds, int n)
{
    memset(call, 0, sizeof *call);
    call->cl = cl;
    call->n = n;
    call->items = calloc((size_t)n, sizeof *call->items);
    call->batch.cmds = malloc((size_t)n * 2 * sizeof *call->batch.cmds);
    call->batch.item = malloc((size_t)n * 2 * sizeof *call->batch.item);
    int nomem = !call->items || !call->batch.cmds || !call->batch.item;
    for (int i = 0; i < n && !nomem; i++)
        nomem = dl_lockform_make(&call->items[i].form, &cmds[i]) != 0;
    if (nomem) {
        call_end(call);
        for (int i = 0; i < n; i++) {
            cmds[i].err = EIO;
            snprintf(cmds[i].errmsg, sizeof cmds[i].errmsg, "out of memory");
        }
        return EIO;
    }
    snprintf(call->err, sizeof call->err, "redis cluster: no node answered");
    pthread_mutex_lock(&cl->mu);
    int mapped = cl->slots[0] >= 0 || cl->slots[DL_SLOTS - 1] >= 0;
    pthread_mutex_unlock(&cl->mu);
    if (!mapped)
        refresh(cl, call->err, sizeof call->err);
    for (int i = 0; i < n; i++) {
        item_t *it = &call->items[i];
        it->cmd = &cmds[i];
        it->pending = 1;
        it->ask = it->sentto = -1;
        cmds[i].reply = NULL;
        cmds[i].err = 0;
    }
    call->give_up = dl_now_ms() + cl->cfg->io_timeout_ms;
    dl_backoff_init(&call->backoff, DL_BACKOFF_RETRY_MS);
    return 0;
}

/* The node each pending command goes to this round: an ASK's, else its
 * slot's, else (no key, or a slot not mapped) any, in turn by round. */
static void route(call_t *call)
{
    dl_cluster_t *cl = call->cl;
    pthread_mutex_lock(&cl->mu);
    for (int i = 0; i < call->n; i++) {
        item_t *it = &call->items[i];
        if (!it->pending)
            continue;
        int d = it->ask;
        if (d < 0 && it->cmd->key) {
            unsigned s = dl_cluster_slot(it->cmd->key, it->cmd->keylen);
            d = cl->slots[s];
            /* ?wait=N: WAIT where the acquisition ran, the node an ASK
             * sent it to while the slot migrates. */
            if (cl->asked[s] >= 0 && is_wait(it->cmd))
                d = cl->asked[s];
        }
        it->node = d >= 0 ? d : (int)(call->rounds % (unsigned)cl->nnodes);
    }
    pthread_mutex_unlock(&cl->mu);
}

/* Gathers into call->batch every command routed to node d, from item
 * `from` on, in order; each is then routed nowhere (sent). */
static void batch_for(call_t *call, int d, int from)
{
    static const char *asking_argv[] = { "ASKING" };
    static const size_t asking_len[] = { 6 };
    node_batch_t *b = &call->batch;
    b->node = d;
    b->m = 0;
    for (int j = from; j < call->n; j++) {
        item_t *it = &call->items[j];
        if (!it->pending || it->node != d)
            continue;
        if (it->ask >= 0) {
            memset(&b->cmds[b->m], 0, sizeof b->cmds[b->m]);
            b->cmds[b->m].argc = 1;
            b->cmds[b->m].argv = asking_argv;
            b->cmds[b->m].argvlen = asking_len;
            b->item[b->m++] = -1;
        }
        b->cmds[b->m] = dl_lockform_cmd(&it->form, it->cmd, it->ask >= 0);
        b->item[b->m++] = j;
        it->sentto = it->ask >= 0 ? -1 : d;   /* (the slot's node, not an ASK) */
        it->node = -1;
    }
}

/* Runs call->batch on its node's link; each reply goes to its command. */
static void batch_run(call_t *call)
{
    dl_cluster_t *cl = call->cl;
    node_batch_t *b = &call->batch;
    pthread_mutex_lock(&cl->mu);
    dl_link_t *k = cl->nodes[b->node];
    pthread_mutex_unlock(&cl->mu);
    dl_link_exec(k, b->cmds, b->m);
    for (int t = 0; t < b->m; t++) {
        const dl_cmd_t *sent = &b->cmds[t];
        if (b->item[t] < 0) {
            if (sent->reply)
                freeReplyObject(sent->reply);
            continue;
        }
        dl_cmd_t *c = call->items[b->item[t]].cmd;
        c->reply = sent->reply;
        c->err = sent->err;
        c->retried |= sent->retried;
        c->sent |= sent->sent;
        memcpy(c->errmsg, sent->errmsg, sizeof c->errmsg);
    }
}

/* One batch per node, in turn. */
static void send_round(call_t *call)
{
    for (int i = 0; i < call->n; i++) {
        const item_t *it = &call->items[i];
        if (!it->pending || it->node < 0)
            continue;
        batch_for(call, it->node, i);
        batch_run(call);
    }
}

/* MOVED or ASK: the slot map learns the new owner, or the command goes to
 * the importing node this once.  0 when followed, -1 when the reply names
 * no usable node (then it is the command's answer). */
static int redirect(call_t *call, item_t *it, dl_fault_t f)
{
    dl_cluster_t *cl = call->cl;
    const redisReply *r = it->cmd->reply;
    int slot, to = redirect_target(cl, r->str, &slot);
    if (to < 0)
        return -1;
    pthread_mutex_lock(&cl->mu);
    if (f == DL_FAULT_MOVED) {
        cl->slots[slot] = (short)to;
        cl->asked[slot] = -1;
    } else {
        cl->asked[slot] = (short)to;
    }
    pthread_mutex_unlock(&cl->mu);
    it->ask = f == DL_FAULT_MOVED ? -1 : to;
    DL_STAT_ADD(redirects, 1);
    /* A slot that moved: after a failover, to a replica that may have
     * lacked our holds (fault.h). */
    dl_fault_note(f, r->str);
    return 0;
}

/* TRYAGAIN (a slot half migrated) or CLUSTERDOWN (the cluster voting a
 * failover).  A lock's keys are moved together to the importing node
 * (see the top of this file); else the round waits it out. */
static void wait_out(call_t *call, item_t *it, dl_fault_t f, verdict_t *v)
{
    dl_cluster_t *cl = call->cl;
    const redisReply *r = it->cmd->reply;
    snprintf(call->err, sizeof call->err, "redis cluster: %s", r->str);
    int moved = 0;
    if (f == DL_FAULT_TRYAGAIN && it->form.lock && it->sentto >= 0) {
        pthread_mutex_lock(&cl->mu);
        dl_link_t *k = cl->nodes[it->sentto];
        pthread_mutex_unlock(&cl->mu);
        moved = dl_migrate_lock(k, cl->cfg, it->cmd, it->form.nkeys, call->err,
                                sizeof call->err) == 0;
    }
    it->ask = -1;
    v->pause |= !moved;
    v->remap |= f == DL_FAULT_CLUSTERDOWN;
    dl_fault_note(f, r->str);
}

/* A command answered by the slot's own node: its slot no longer migrates
 * (for WAIT's routing). */
static void answered(call_t *call, item_t *it)
{
    dl_cluster_t *cl = call->cl;
    const dl_cmd_t *c = it->cmd;
    if (it->form.lock && it->sentto >= 0) {
        pthread_mutex_lock(&cl->mu);
        cl->asked[dl_cluster_slot(c->argv[3], c->argvlen[3])] = -1;
        pthread_mutex_unlock(&cl->mu);
    }
    it->pending = 0;
}

/* One pending command after a round: its final answer, or what the
 * next round must do for it (fault.h says what each reply means). */
static void settle_one(call_t *call, item_t *it, verdict_t *v)
{
    dl_cmd_t *c = it->cmd;
    if (c->err && c->deadline && dl_now_ms() >= c->deadline) {
        it->pending = 0;              /* its caller's deadline ran out */
        return;
    }
    if (c->err == EAGAIN) {
        /* Never sent twice (dl_cmd_t.once): ended by the node's link with
         * its undo behind it; its caller asks again under a new id. */
        it->pending = 0;
        return;
    }
    if (c->err) {
        /* The node failed, perhaps mid-command: it may have run. */
        snprintf(call->err, sizeof call->err, "%s", c->errmsg);
        c->retried = 1;
        c->err = 0;
        it->ask = -1;
        v->pause = v->remap = v->again = 1;
        return;
    }
    dl_fault_t f = dl_fault_of(NULL, c->reply);
    switch (f) {
    case DL_FAULT_MOVED:
    case DL_FAULT_ASK:
        if (redirect(call, it, f) == 0)
            break;
        answered(call, it);           /* a redirection to nowhere: its answer */
        return;
    case DL_FAULT_TRYAGAIN:
    case DL_FAULT_CLUSTERDOWN:
        wait_out(call, it, f, v);
        break;
    default:
        answered(call, it);
        return;
    }
    freeReplyObject(c->reply);
    c->reply = NULL;
    v->again = 1;
}

static verdict_t settle(call_t *call)
{
    verdict_t v = { 0, 0, 0 };
    for (int i = 0; i < call->n; i++)
        if (call->items[i].pending)
            settle_one(call, &call->items[i], &v);
    return v;
}

/* Between two rounds: gives up at the I/O time-out (EIO: what is pending
 * fails with the last reason), pauses, reloads the slot map.  0 to go on. */
static int next_round(call_t *call, const verdict_t *v)
{
    call->rounds++;
    if (dl_now_ms() >= call->give_up) {
        for (int i = 0; i < call->n; i++) {
            dl_cmd_t *c = call->items[i].cmd;
            if (call->items[i].pending) {
                c->err = EIO;
                snprintf(c->errmsg, sizeof c->errmsg, "%s", call->err);
            }
        }
        return EIO;
    }
    if (v->pause || call->rounds > 8)
        dl_backoff_wait(&call->backoff, call->give_up);
    if (v->remap)
        refresh(call->cl, call->err, sizeof call->err);
    return 0;
}

/* Every command to the node of its slot, in one batch per node, in
 * rounds until each has its final answer. */
static int cluster_exec(dl_cluster_t *cl, dl_cmd_t *cmds, int n)
{
    call_t call;
    if (call_begin(&call, cl, cmds, n))
        return EIO;
    int rc = 0;
    for (;;) {
        route(&call);
        send_round(&call);
        verdict_t v = settle(&call);
        if (!v.again || (rc = next_round(&call, &v)))
            break;
    }
    call_end(&call);
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

/* The node serving slot (the map loaded first if it has none for it, or
 * reloaded when asked): for the subscriber's connections per node. */
static int cluster_locate(void *b, unsigned slot, int reload, dl_endpoint_t *ep, char *err,
                          size_t errlen)
{
    dl_cluster_t *cl = b;
    slot &= DL_SLOTS - 1;
    err[0] = 0;
    pthread_mutex_lock(&cl->mu);
    int at = cl->slots[slot];
    pthread_mutex_unlock(&cl->mu);
    if ((reload || at < 0) && refresh(cl, err, errlen) == 0) {
        pthread_mutex_lock(&cl->mu);
        at = cl->slots[slot];
        pthread_mutex_unlock(&cl->mu);
    }
    if (at < 0) {
        if (!err[0])
            snprintf(err, errlen, "redis cluster: no node serves slot %u", slot);
        return EIO;
    }
    pthread_mutex_lock(&cl->mu);
    *ep = *dl_link_ep(cl->nodes[at]);
    pthread_mutex_unlock(&cl->mu);
    return 0;
}

const dl_backend_t dl_backend_cluster = {
    .caps = { .queue = 1, .quorum = 0, .post = 0, .slots = 1 },
    .open = cluster_open,
    .nodes = cluster_nodes,
    .exec = cluster_exec_node,
    .start = cluster_start,
    .finish = cluster_finish,
    .connect_any = dl_connect_first,
    .locate = cluster_locate,
    .abandon = cluster_abandon,
    .free = cluster_free,
};
