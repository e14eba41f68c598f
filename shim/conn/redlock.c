/* SPDX-License-Identifier: BSD-3-Clause */
/* redlock.c - redlock://'s independent servers (see redlock.h). */
#include <stdlib.h>

#include "cmdlink.h"
#include "deferred.h"
#include "redlock.h"

typedef struct redlock {
    dl_link_t *links[DL_MAX_ENDPOINTS];
    int nlinks;
    dl_deferred_t *owed;      /* releases and withdrawals still owed to a server */
} redlock_t;

/* A server that failed is skipped this long, so a dead one costs one
 * timeout per second, not one per lock call. */
#define DL_REDLOCK_DOWN_MS 1000

static void redlock_free(void *b)
{
    redlock_t *rl = b;
    dl_deferred_free(rl->owed);   /* first: its thread uses the links */
    for (int i = 0; i < rl->nlinks; i++)
        dl_link_free(rl->links[i]);
    free(rl);
}

static void *redlock_open(const dl_config_t *c)
{
    redlock_t *rl = calloc(1, sizeof *rl);
    if (!rl)
        return NULL;
    /* Each server answers within a tenth of the lease, or the quorum goes
     * on without it: a slow server must not eat the validity. */
    unsigned long t = c->lease_ms / 10;
    if (t < 50)
        t = 50;
    if (t > c->io_timeout_ms)
        t = c->io_timeout_ms;
    for (int i = 0; i < c->nep; i++) {
        dl_link_conf_t conf = {
            .cfg = c,
            .ep = c->ep[i],
            .dial = dl_connect_ep,
            .fail_fast = 1,
            .timeout_ms = t,
            .down_ms = DL_REDLOCK_DOWN_MS,
        };
        dl_ep_name(&c->ep[i], 0, conf.name, sizeof conf.name);
        if (!(rl->links[rl->nlinks++] = dl_link_new(&conf))) {
            redlock_free(rl);
            return NULL;
        }
    }
    if (!(rl->owed = dl_deferred_new(rl->links, rl->nlinks))) {
        redlock_free(rl);
        return NULL;
    }
    return rl;
}

static int redlock_nodes(const void *b)
{
    return ((const redlock_t *)b)->nlinks;
}

/* node -1 (dl_conn_exec): the first server, as for a single one. */
static int redlock_exec(void *b, int node, dl_cmd_t *cmds, int n)
{
    redlock_t *rl = b;
    return dl_link_exec(rl->links[node < 0 ? 0 : node], cmds, n);
}

static void redlock_start(void *b, int node, dl_cmd_t *cmds, int n, dl_link_op_t *op)
{
    dl_link_start(((redlock_t *)b)->links[node], cmds, n, op);
}

static int redlock_finish(void *b, int node, dl_cmd_t *cmds, int n, dl_link_op_t *op)
{
    return dl_link_finish(((redlock_t *)b)->links[node], cmds, n, op);
}

static int redlock_defer(void *b, int node, const dl_cmd_t *cmd, int looks, uint64_t give_up)
{
    redlock_t *rl = b;
    return dl_deferred_add(rl->owed, node, cmd, looks, give_up);
}

/* (A forked child leaves the set alone: its thread is the parent's.) */
static void redlock_abandon(void *b)
{
    redlock_t *rl = b;
    for (int i = 0; i < rl->nlinks; i++)
        dl_link_abandon(rl->links[i]);
}

const dl_backend_t dl_backend_redlock = {
    .caps = { .queue = 0, .quorum = 1, .post = 0 },
    .open = redlock_open,
    .nodes = redlock_nodes,
    .exec = redlock_exec,
    .start = redlock_start,
    .finish = redlock_finish,
    .defer = redlock_defer,
    .connect_any = dl_connect_first,
    .abandon = redlock_abandon,
    .free = redlock_free,
};
