/* SPDX-License-Identifier: BSD-3-Clause */
/* shardsub.c - redis-cluster://: the subscriber's connections, one per
 * node, each SSUBSCRIBEd to the process's channels of the slots it serves
 * (shardsub.h).
 *
 * Each slot's subscription moves through four states, under s->mu:
 *   OFF     none
 *   SENT    SSUBSCRIBE written (or, on a node without sharded pub/sub,
 *           the classic SUBSCRIBE it rides on), no answer yet
 *   ON      subscribed: its pushes reach us
 *   UNSENT  SUNSUBSCRIBE written, no answer yet
 * One thread (dl_shardsub_run) does all the I/O: a round of `reconcile`
 * (the slots wanted and OFF subscribed, those no longer wanted for a while
 * unsubscribed, idle connections closed), then a poll over every node's
 * connection and a pipe that dl_shardsub_want writes to.
 *
 * Replies: SSUBSCRIBE is answered `ssubscribe` or an error (MOVED; a node
 * that lacks the command; CLUSTERDOWN), in the order sent: each node keeps
 * the slots of its SSUBSCRIBEs awaiting an answer, and an error is the
 * oldest one's.  SUNSUBSCRIBE is always answered `sunsubscribe` (Redis
 * 7.0 checks no slot for it).  An `sunsubscribe` of a slot we did not
 * unsubscribe is Redis telling us the slot left the node (cluster.c's
 * removeChannelsInSlot, at CLUSTER SETSLOT ... NODE or when the node
 * becomes a replica).  A slot is never subscribed again while its
 * SUNSUBSCRIBE is unanswered, so the two are never confused.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "backoff.h"
#include "dl.h"
#include "fault.h"
#include "shardsub.h"
#include "trust.h"

#define SUB_MAX_NODES 128
#define SUB_CONNECT_MS 1000UL

enum { SL_OFF, SL_SENT, SL_ON, SL_UNSENT };

typedef struct sub_node {
    dl_endpoint_t ep;
    redisContext *c;          /* NULL: not connected (set under s->mu) */
    int old;                  /* answered SSUBSCRIBE "unknown command" */
    int classic;              /* the classic channel here: 0 no, 1 asked, 2 on */
    unsigned nsubs;           /* slots whose state here is not OFF */
    uint64_t empty_since;     /* when nsubs fell to 0 (ms); 0 */
    int dirty_out;            /* commands appended, not yet written */
    unsigned short *q;        /* slots whose SSUBSCRIBE awaits its answer */
    size_t qh, qn, qcap;
} sub_node_t;

struct dl_shardsub {
    dl_conn_t *conn;
    const dl_config_t *cfg;
    const dl_chans_t *ch;
    dl_shardsub_hooks_t hooks;
    pthread_mutex_t mu;
    pthread_cond_t cv;        /* a slot subscribed, or a try failed */
    int wake[2];              /* a byte written: the wants changed */
    unsigned char st[DL_SLOTS];
    unsigned char want[DL_SLOTS];
    unsigned char lost[DL_SLOTS];     /* was ON, lost since: tell when ON again */
    unsigned char idle[DL_SLOTS];     /* unwanted at the last sweep */
    unsigned char classic[DL_SLOTS];  /* rides on the classic subscription */
    short node[DL_SLOTS];     /* where its state is not OFF */
    short hint[DL_SLOTS];     /* the node a MOVED named; -1 */
    sub_node_t nodes[SUB_MAX_NODES];
    int nnodes;
    int classic_node;         /* the node of the classic SUBSCRIBE; -1 */
    int dirty;                /* some wanted slot may need a try */
    int remap;                /* reload the slot map before the next locate */
    uint64_t retry_at, next_sweep;
    dl_backoff_t backoff;
    char err[400];            /* the last failure; "" after a success */
    unsigned char back[DL_SLOTS / 8];  /* slots subscribed again */
    int nback;
    unsigned char told[DL_SLOTS / 8];  /* the loop's copy of back, for the hook */
    unsigned short todo[DL_SLOTS], undo[DL_SLOTS];   /* a round's, the loop's own */
};

dl_shardsub_t *dl_shardsub_new(dl_conn_t *conn, const dl_config_t *cfg, const dl_chans_t *ch,
                               const dl_shardsub_hooks_t *hooks)
{
    dl_shardsub_t *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    if (pipe2(s->wake, O_NONBLOCK | O_CLOEXEC)) {
        free(s);
        return NULL;
    }
    s->conn = conn;
    s->cfg = cfg;
    s->ch = ch;
    s->hooks = *hooks;
    pthread_mutex_init(&s->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&s->cv, &ca);
    pthread_condattr_destroy(&ca);
    for (int i = 0; i < DL_SLOTS; i++)
        s->node[i] = s->hint[i] = -1;
    s->classic_node = -1;
    dl_backoff_init(&s->backoff, 20, 500);
    return s;
}

static void poke(dl_shardsub_t *s)
{
    ssize_t n = write(s->wake[1], "w", 1);      /* full: it is awake anyway */
    (void)n;
}

void dl_shardsub_want(dl_shardsub_t *s, unsigned slot, int on)
{
    slot &= DL_SLOTS - 1;
    int wake = 0;
    pthread_mutex_lock(&s->mu);
    if (on) {
        s->idle[slot] = 0;
        if (!s->want[slot] && s->st[slot] != SL_ON)
            wake = s->dirty = 1;
        s->want[slot] = 1;
    } else {
        s->want[slot] = 0;        /* unsubscribed at the sweeps' pace */
    }
    pthread_mutex_unlock(&s->mu);
    if (wake)
        poke(s);
}

int dl_shardsub_wait(dl_shardsub_t *s, unsigned slot, uint64_t until, char *err, size_t errlen)
{
    slot &= DL_SLOTS - 1;
    int rc = 0;
    pthread_mutex_lock(&s->mu);
    while (s->st[slot] != SL_ON) {
        if (dl_now_ms() >= until) {
            /* The caller registers without it: when the slot is
             * subscribed, its waiters ask Redis (what was pushed meanwhile
             * is lost). */
            rc = EAGAIN;
            s->lost[slot] = s->want[slot];
            snprintf(err, errlen, "%s", s->err);
            break;
        }
        struct timespec ts;
        dl_timespec_at(until, &ts);
        pthread_cond_timedwait(&s->cv, &s->mu, &ts);
    }
    pthread_mutex_unlock(&s->mu);
    return rc;
}

void dl_shardsub_count(dl_shardsub_t *s, int *nodes, int *slots)
{
    int n = 0, k = 0;
    pthread_mutex_lock(&s->mu);
    for (int i = 0; i < s->nnodes; i++)
        n += s->nodes[i].c != NULL;
    for (int i = 0; i < DL_SLOTS; i++)
        k += s->st[i] == SL_ON;
    pthread_mutex_unlock(&s->mu);
    *nodes = n;
    *slots = k;
}

void dl_shardsub_abandon(dl_shardsub_t *s)
{
    for (int i = 0; i < s->nnodes; i++)
        if (s->nodes[i].c && s->nodes[i].c->fd >= 0)
            close(s->nodes[i].c->fd);
    close(s->wake[0]);
    close(s->wake[1]);
}

/* --- the nodes --- */

/* host:port's index, added if new; -1 if the table is full. */
static int node_index(dl_shardsub_t *s, const char *host, int port)
{
    for (int i = 0; i < s->nnodes; i++)
        if (s->nodes[i].ep.port == port && strcmp(s->nodes[i].ep.host, host) == 0)
            return i;
    if (s->nnodes == SUB_MAX_NODES || strlen(host) >= sizeof s->nodes[0].ep.host)
        return -1;
    sub_node_t *nd = &s->nodes[s->nnodes];
    memset(nd, 0, sizeof *nd);
    snprintf(nd->ep.host, sizeof nd->ep.host, "%s", host);
    nd->ep.port = port;
    pthread_mutex_lock(&s->mu);
    int i = s->nnodes++;
    pthread_mutex_unlock(&s->mu);
    return i;
}

static const char *node_name(const sub_node_t *nd, char *buf, size_t size)
{
    return dl_ep_name(&nd->ep, 0, buf, size);
}

/* A failure to tell the waiters (dl_shardsub_wait) and to retry after a
 * pause.  s->mu held. */
static void failed(dl_shardsub_t *s, const char *why)
{
    snprintf(s->err, sizeof s->err, "%s", why);
    s->dirty = 1;
    s->retry_at = dl_now_ms() + dl_backoff_next(&s->backoff);
    pthread_cond_broadcast(&s->cv);
}

/* slot's subscription is on.  s->mu held. */
static void slot_on(dl_shardsub_t *s, unsigned slot)
{
    s->st[slot] = SL_ON;
    if (s->lost[slot]) {
        s->lost[slot] = 0;
        s->back[slot / 8] |= (unsigned char)(1u << (slot % 8));
        s->nback++;
    }
    s->err[0] = 0;
    dl_backoff_reset(&s->backoff);
    pthread_cond_broadcast(&s->cv);
}

/* slot's subscription is off (its node lost it, or it was refused).
 * s->mu held. */
static void slot_off(dl_shardsub_t *s, unsigned slot)
{
    int i = s->node[slot];
    if (s->st[slot] == SL_ON && s->want[slot])
        s->lost[slot] = 1;
    if (i >= 0 && s->st[slot] != SL_OFF && s->nodes[i].nsubs)
        s->nodes[i].nsubs--;
    s->st[slot] = SL_OFF;
    s->node[slot] = -1;
    s->classic[slot] = 0;
    if (s->want[slot])
        s->dirty = 1;
}

/* Node i's connection is gone (or dropped by us after a protocol
 * surprise): its slots are subscribed again where the slot map, reloaded,
 * says.  A sign when a subscription was on there (a restart, a failover:
 * the node's pushes meanwhile are lost, and perhaps our holds). */
static void node_lost(dl_shardsub_t *s, int i, const char *what)
{
    sub_node_t *nd = &s->nodes[i];
    char name[300], why[400];
    snprintf(why, sizeof why, "redis: the subscriber's connection to %s %s",
             node_name(nd, name, sizeof name), what);
    int had = 0;
    pthread_mutex_lock(&s->mu);
    for (unsigned slot = 0; slot < DL_SLOTS; slot++) {
        if (s->hint[slot] == i)
            s->hint[slot] = -1;
        if (s->node[slot] == i) {
            had |= s->st[slot] == SL_ON;
            slot_off(s, slot);
        }
    }
    if (s->classic_node == i)
        s->classic_node = -1;
    redisContext *c = nd->c;
    nd->c = NULL;
    nd->classic = 0;
    nd->nsubs = 0;
    nd->qh = nd->qn = 0;
    nd->dirty_out = 0;
    nd->empty_since = 0;
    s->remap = 1;
    failed(s, why);
    pthread_mutex_unlock(&s->mu);
    if (c)
        redisFree(c);
    if (had)
        dl_trust_end(why);
    else
        dl_log(DL_LOG_INFO, "%s", why);
}

static int node_connect(dl_shardsub_t *s, int i)
{
    sub_node_t *nd = &s->nodes[i];
    char err[200];
    unsigned long ms = s->cfg->io_timeout_ms < SUB_CONNECT_MS ? s->cfg->io_timeout_ms : SUB_CONNECT_MS;
    redisContext *c = dl_connect_ep(s->cfg, &nd->ep, ms, err, sizeof err);
    if (!c) {
        char why[300];
        snprintf(why, sizeof why, "subscribe failed: %s", err);
        pthread_mutex_lock(&s->mu);
        failed(s, why);
        pthread_mutex_unlock(&s->mu);
        return -1;
    }
    pthread_mutex_lock(&s->mu);
    nd->c = c;
    nd->classic = 0;
    nd->nsubs = 0;
    nd->qh = nd->qn = 0;
    nd->empty_since = 0;
    pthread_mutex_unlock(&s->mu);
    return 0;
}

/* Appends a command on node i's connection (written by flush). */
static void node_append(dl_shardsub_t *s, int i, const char *cmd, const char *chan, size_t len)
{
    sub_node_t *nd = &s->nodes[i];
    redisAppendCommand(nd->c, "%s %b", cmd, chan, len);
    nd->dirty_out = 1;
}

static int queue_push(sub_node_t *nd, unsigned slot)
{
    if (nd->qh + nd->qn == nd->qcap) {
        if (nd->qh) {
            memmove(nd->q, nd->q + nd->qh, nd->qn * sizeof *nd->q);
            nd->qh = 0;
        } else {
            size_t cap = nd->qcap ? nd->qcap * 2 : 64;
            unsigned short *q = realloc(nd->q, cap * sizeof *q);
            if (!q)
                return -1;
            nd->q = q;
            nd->qcap = cap;
        }
    }
    nd->q[nd->qh + nd->qn++] = (unsigned short)slot;
    return 0;
}

/* The oldest SSUBSCRIBE awaiting its answer on nd; -1 none. */
static int queue_pop(sub_node_t *nd)
{
    if (!nd->qn)
        return -1;
    nd->qn--;
    return nd->q[nd->qh++];
}

/* Removes slot from nd's queue (its SSUBSCRIBE answered). */
static void queue_drop(sub_node_t *nd, unsigned slot)
{
    for (size_t k = 0; k < nd->qn; k++)
        if (nd->q[nd->qh + k] == slot) {
            if (k == 0) {
                nd->qh++;
            } else {
                memmove(nd->q + nd->qh + k, nd->q + nd->qh + k + 1,
                        (nd->qn - k - 1) * sizeof *nd->q);
            }
            nd->qn--;
            return;
        }
}

/* --- a round: the wanted slots subscribed, the unwanted unsubscribed --- */

/* The node to subscribe slot on: the one a MOVED named, else the slot
 * map's (reloaded first once per round after a sign that it changed).
 * -1 (s->err said why). */
static int locate(dl_shardsub_t *s, unsigned slot, int *reload)
{
    pthread_mutex_lock(&s->mu);
    int h = s->hint[slot];
    pthread_mutex_unlock(&s->mu);
    if (h >= 0)
        return h;
    dl_endpoint_t ep;
    char err[200];
    if (dl_conn_locate(s->conn, slot, *reload, &ep, err, sizeof err)) {
        char why[300];
        snprintf(why, sizeof why, "subscribe failed: %s", err);
        pthread_mutex_lock(&s->mu);
        failed(s, why);
        pthread_mutex_unlock(&s->mu);
        return -1;
    }
    *reload = 0;
    return node_index(s, ep.host, ep.port);
}

/* On a node without sharded pub/sub, slot rides on the process's one
 * classic subscription: node i's (asked for now) unless another node has
 * it already.  0, or -1. */
static int subscribe_classic(dl_shardsub_t *s, unsigned slot, int i)
{
    pthread_mutex_lock(&s->mu);
    int c = s->classic_node;
    if (c >= 0) {
        s->node[slot] = (short)c;
        s->classic[slot] = 1;
        s->nodes[c].nsubs++;
        s->st[slot] = SL_SENT;
        if (s->nodes[c].classic == 2)
            slot_on(s, slot);
        pthread_mutex_unlock(&s->mu);
        return 0;
    }
    pthread_mutex_unlock(&s->mu);
    char chan[400];
    size_t len = dl_chans_mine(s->ch, -1, chan, sizeof chan);
    node_append(s, i, "SUBSCRIBE", chan, len);
    pthread_mutex_lock(&s->mu);
    s->classic_node = i;
    s->nodes[i].classic = 1;
    s->node[slot] = (short)i;
    s->classic[slot] = 1;
    s->nodes[i].nsubs++;
    s->st[slot] = SL_SENT;
    pthread_mutex_unlock(&s->mu);
    return 0;
}

/* Subscribes slot (its SSUBSCRIBE appended).  0; -1 when its node could
 * not be found or reached (bad[] marks a node that failed this round). */
static int subscribe_one(dl_shardsub_t *s, unsigned slot, int *reload, unsigned char *bad)
{
    int i = locate(s, slot, reload);
    if (i < 0 || bad[i])
        return -1;
    sub_node_t *nd = &s->nodes[i];
    if (!nd->c && node_connect(s, i)) {
        bad[i] = 1;
        return -1;
    }
    if (nd->old)
        return subscribe_classic(s, slot, i);
    char chan[400];
    size_t len = dl_chans_mine(s->ch, (int)slot, chan, sizeof chan);
    if (queue_push(nd, slot))
        return -1;
    node_append(s, i, "SSUBSCRIBE", chan, len);
    pthread_mutex_lock(&s->mu);
    s->st[slot] = SL_SENT;
    s->node[slot] = (short)i;
    nd->nsubs++;
    nd->empty_since = 0;
    pthread_mutex_unlock(&s->mu);
    return 0;
}

static void unsubscribe_one(dl_shardsub_t *s, unsigned slot)
{
    pthread_mutex_lock(&s->mu);
    int i = s->node[slot];
    if (s->want[slot] || s->st[slot] != SL_ON || i < 0) {
        pthread_mutex_unlock(&s->mu);
        return;
    }
    if (s->classic[slot]) {       /* the classic subscription stays */
        slot_off(s, slot);
        pthread_mutex_unlock(&s->mu);
        return;
    }
    s->st[slot] = SL_UNSENT;
    pthread_mutex_unlock(&s->mu);
    char chan[400];
    size_t len = dl_chans_mine(s->ch, (int)slot, chan, sizeof chan);
    node_append(s, i, "SUNSUBSCRIBE", chan, len);
}

/* Writes what each node has appended; a node that fails is lost. */
static void flush_all(dl_shardsub_t *s)
{
    for (int i = 0; i < s->nnodes; i++) {
        sub_node_t *nd = &s->nodes[i];
        if (!nd->c || !nd->dirty_out)
            continue;
        nd->dirty_out = 0;
        int done = 0;
        while (!done)
            if (redisBufferWrite(nd->c, &done) != REDIS_OK) {
                node_lost(s, i, "failed");
                break;
            }
    }
}

/* Closes the connections with nothing subscribed for DL_SUB_IDLE_MS. */
static void close_idle(dl_shardsub_t *s, uint64_t now)
{
    for (int i = 0; i < s->nnodes; i++) {
        sub_node_t *nd = &s->nodes[i];
        redisContext *c = NULL;
        pthread_mutex_lock(&s->mu);
        if (nd->c && nd->nsubs == 0 && !nd->qn) {
            if (!nd->empty_since)
                nd->empty_since = now;
            else if (now - nd->empty_since >= DL_SUB_IDLE_MS) {
                c = nd->c;
                nd->c = NULL;
                nd->classic = 0;
                if (s->classic_node == i)
                    s->classic_node = -1;
            }
        }
        pthread_mutex_unlock(&s->mu);
        if (c)
            redisFree(c);
    }
}

static void reconcile(dl_shardsub_t *s)
{
    uint64_t now = dl_now_ms();
    int n = 0, m = 0;
    pthread_mutex_lock(&s->mu);
    int sweep = now >= s->next_sweep;
    if (!sweep && (!s->dirty || now < s->retry_at)) {
        pthread_mutex_unlock(&s->mu);
        return;
    }
    if (sweep)
        s->next_sweep = now + DL_SUB_IDLE_MS;
    int tries = now >= s->retry_at;
    int reload = s->remap;
    s->remap = 0;
    if (tries)
        s->dirty = 0;
    for (unsigned slot = 0; slot < DL_SLOTS; slot++) {
        if (s->want[slot] && s->st[slot] == SL_OFF && tries) {
            s->todo[n++] = (unsigned short)slot;
        } else if (!s->want[slot] && s->st[slot] == SL_ON && sweep) {
            if (s->idle[slot])
                s->undo[m++] = (unsigned short)slot;
            else
                s->idle[slot] = 1;
        }
    }
    pthread_mutex_unlock(&s->mu);
    for (int k = 0; k < m; k++)
        unsubscribe_one(s, s->undo[k]);
    unsigned char bad[SUB_MAX_NODES] = { 0 };
    for (int k = 0; k < n; k++)
        if (subscribe_one(s, s->todo[k], &reload, bad)) {
            pthread_mutex_lock(&s->mu);
            s->dirty = 1;             /* the slots left: after the pause */
            if (s->retry_at <= now)
                s->retry_at = now + dl_backoff_next(&s->backoff);
            pthread_mutex_unlock(&s->mu);
        }
    if (reload) {
        pthread_mutex_lock(&s->mu);
        s->remap = 1;             /* not used this round: the next one */
        pthread_mutex_unlock(&s->mu);
    }
    flush_all(s);
    if (sweep)
        close_idle(s, now);
}

/* --- the answers --- */

/* "MOVED 3999 127.0.0.1:6381": the node it names; -1. */
static int moved_to(dl_shardsub_t *s, const char *msg)
{
    const char *sp = strchr(msg, ' ');
    const char *addr = sp ? strchr(sp + 1, ' ') : NULL;
    const char *colon = addr ? strrchr(addr + 1, ':') : NULL;
    if (!colon || colon == addr + 1 || (size_t)(colon - addr - 1) >= 256)
        return -1;
    char host[256];
    memcpy(host, addr + 1, (size_t)(colon - addr - 1));
    host[colon - addr - 1] = 0;
    int port = atoi(colon + 1);
    return port > 0 && port <= 65535 ? node_index(s, host, port) : -1;
}

/* An error answering node i's oldest SSUBSCRIBE. */
static void refused(dl_shardsub_t *s, int i, const redisReply *r)
{
    sub_node_t *nd = &s->nodes[i];
    int slot = queue_pop(nd);
    if (slot < 0)
        return;
    dl_fault_t f = dl_fault_of(NULL, r);
    int to = f == DL_FAULT_MOVED ? moved_to(s, r->str) : -1;
    char name[300], why[400];
    snprintf(why, sizeof why, "subscribe failed on %s: %s", node_name(nd, name, sizeof name), r->str);
    pthread_mutex_lock(&s->mu);
    if (s->node[slot] == i && s->st[slot] == SL_SENT)
        slot_off(s, (unsigned)slot);
    if (strcasestr(r->str, "unknown command")) {
        /* Before Redis 7: the scripts publish classic here. */
        if (!nd->old)
            dl_log(DL_LOG_INFO, "%s has no sharded pub/sub: its pushes come by the classic "
                   "channel", name);
        nd->old = 1;
        s->dirty = 1;
    } else if (to >= 0) {
        s->hint[slot] = (short)to;
        s->dirty = 1;
    } else {
        failed(s, why);
    }
    pthread_mutex_unlock(&s->mu);
    if (to >= 0 || f != DL_FAULT_MOVED)
        dl_fault_note(f, r->str);
}

/* An `sunsubscribe` of slot from node i: ours, or the slot left it. */
static void unsubscribed(dl_shardsub_t *s, int i, unsigned slot)
{
    int moved = 0;
    pthread_mutex_lock(&s->mu);
    if (s->node[slot] == i && !s->classic[slot]) {
        moved = s->st[slot] != SL_UNSENT;
        if (moved) {
            s->remap = 1;
            s->hint[slot] = -1;
        }
        slot_off(s, slot);
    }
    pthread_mutex_unlock(&s->mu);
    if (moved) {
        char name[300], why[400];
        snprintf(why, sizeof why, "redis cluster: slot %u left %s (the subscriber follows it)",
                 slot, node_name(&s->nodes[i], name, sizeof name));
        dl_fault_note(DL_FAULT_MOVED, why);
    }
}

/* One reply or push read from node i.  -1: drop the connection. */
static int answer(dl_shardsub_t *s, int i, const redisReply *r)
{
    if (r->type == REDIS_REPLY_ERROR) {
        refused(s, i, r);
        return 0;
    }
    if (r->type != REDIS_REPLY_ARRAY || r->elements < 3 ||
        r->element[0]->type != REDIS_REPLY_STRING || r->element[1]->type != REDIS_REPLY_STRING)
        return 0;
    const char *kind = r->element[0]->str;
    const redisReply *chan = r->element[1], *v = r->element[2];
    if (!strcmp(kind, "smessage") || !strcmp(kind, "message")) {
        if (v->type == REDIS_REPLY_STRING)
            s->hooks.message(s->hooks.arg, v->str, v->len);
        return 0;
    }
    if (!strcmp(kind, "subscribe")) {
        pthread_mutex_lock(&s->mu);
        s->nodes[i].classic = 2;
        for (unsigned slot = 0; slot < DL_SLOTS; slot++)
            if (s->classic[slot] && s->node[slot] == i && s->st[slot] == SL_SENT)
                slot_on(s, slot);
        pthread_mutex_unlock(&s->mu);
        return 0;
    }
    if (!strcmp(kind, "unsubscribe"))
        return -1;                /* nobody asked: start again */
    int slot = dl_chans_slot_of(s->ch, chan->str, chan->len);
    if (slot < 0)
        return 0;
    if (!strcmp(kind, "ssubscribe")) {
        queue_drop(&s->nodes[i], (unsigned)slot);
        pthread_mutex_lock(&s->mu);
        if (s->node[slot] == i && s->st[slot] == SL_SENT)
            slot_on(s, (unsigned)slot);
        pthread_mutex_unlock(&s->mu);
    } else if (!strcmp(kind, "sunsubscribe")) {
        unsubscribed(s, i, (unsigned)slot);
    }
    return 0;
}

static void read_node(dl_shardsub_t *s, int i)
{
    redisContext *c = s->nodes[i].c;
    if (redisBufferRead(c) != REDIS_OK) {
        node_lost(s, i, "was lost");
        return;
    }
    void *reply;
    int ok, drop = 0;
    while (!drop && (ok = redisGetReplyFromReader(c, &reply)) == REDIS_OK && reply) {
        drop = answer(s, i, reply) != 0;
        freeReplyObject(reply);
    }
    if (drop || ok != REDIS_OK)
        node_lost(s, i, drop ? "was unsubscribed unasked" : "sent what cannot be read");
}

/* Tells the hook of the slots subscribed again. */
static void tell_back(dl_shardsub_t *s)
{
    pthread_mutex_lock(&s->mu);
    int n = s->nback;
    if (n) {
        memcpy(s->told, s->back, sizeof s->told);
        memset(s->back, 0, sizeof s->back);
        s->nback = 0;
    }
    pthread_mutex_unlock(&s->mu);
    if (n)
        s->hooks.resubscribed(s->hooks.arg, s->told);
}

/* How long the loop may sleep in poll (ms). */
static int poll_ms(dl_shardsub_t *s)
{
    uint64_t now = dl_now_ms();
    pthread_mutex_lock(&s->mu);
    uint64_t at = s->next_sweep;
    if (s->dirty && s->retry_at < at)
        at = s->retry_at;
    pthread_mutex_unlock(&s->mu);
    uint64_t ms = at > now ? at - now : 0;
    return ms > 1000 ? 1000 : (int)ms;
}

void dl_shardsub_run(dl_shardsub_t *s)
{
    struct pollfd pfd[SUB_MAX_NODES + 1];
    int idx[SUB_MAX_NODES + 1];
    for (;;) {
        reconcile(s);
        tell_back(s);
        int n = 0;
        pfd[n++] = (struct pollfd){ s->wake[0], POLLIN, 0 };
        for (int i = 0; i < s->nnodes; i++)
            if (s->nodes[i].c) {
                pfd[n] = (struct pollfd){ s->nodes[i].c->fd, POLLIN, 0 };
                idx[n++] = i;
            }
        int k = poll(pfd, (nfds_t)n, poll_ms(s));
        if (k <= 0)
            continue;
        if (pfd[0].revents) {
            char buf[64];
            while (read(s->wake[0], buf, sizeof buf) > 0)
                ;
        }
        for (int j = 1; j < n; j++)
            if (pfd[j].revents && s->nodes[idx[j]].c)
                read_node(s, idx[j]);
        tell_back(s);
    }
}
