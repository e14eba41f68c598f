/* SPDX-License-Identifier: BSD-3-Clause */
/* sentinel.c - redis-sentinel://: finding the master, and leaving it when
 * it steps down (see sentinel.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cmdlink.h"
#include "dl.h"
#include "sentinel.h"
#include "single.h"

/* Asks one sentinel where the master is. */
static int ask_sentinel(const dl_config_t *c, int i, unsigned long timeout_ms,
                        dl_endpoint_t *master, char *err, size_t errlen)
{
    char name[300];
    dl_ep_name(&c->ep[i], 0, name, sizeof name);
    redisContext *s = dl_connect_socket(c, &c->ep[i], 0, timeout_ms, err, errlen);
    if (!s)
        return EIO;
    redisReply *r = redisCommand(s, "SENTINEL get-master-addr-by-name %s", c->master);
    int rc = EIO;
    if (r && r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
        r->element[0]->type == REDIS_REPLY_STRING && r->element[1]->type == REDIS_REPLY_STRING &&
        r->element[0]->len < sizeof master->host) {
        unsigned long port;
        if (dl_parse_ulong(r->element[1]->str, 1, 65535, &port) == 0) {
            snprintf(master->host, sizeof master->host, "%s", r->element[0]->str);
            master->port = (int)port;
            rc = 0;
        } else {
            snprintf(err, errlen, "sentinel %s: bad port for master \"%s\"", name, c->master);
        }
    } else if (r && r->type == REDIS_REPLY_NIL) {
        snprintf(err, errlen, "sentinel %s: no master named \"%s\"", name, c->master);
    } else {
        snprintf(err, errlen, "sentinel %s: %s", name,
                 r && r->type == REDIS_REPLY_ERROR ? r->str : s->errstr[0] ? s->errstr : "unexpected reply");
    }
    if (r)
        freeReplyObject(r);
    redisFree(s);
    return rc;
}

/* Which sentinel answered last: asked first next time. */
static int sentinel_first;

/* Confirmed by ROLE: in a failover the sentinels may still name the old
 * master, now a replica. */
redisContext *dl_sentinel_connect(const dl_config_t *c, const dl_endpoint_t *ep,
                                  unsigned long timeout_ms, char *err, size_t errlen)
{
    (void)ep;
    uint64_t end = dl_now_ms() + timeout_ms;
    int first = __atomic_load_n(&sentinel_first, __ATOMIC_RELAXED), i;
    unsigned long left;
    for (int k = 0; (i = dl_connect_round(c, first, k, end, &left)) >= 0; k++) {
        dl_endpoint_t m;
        if (ask_sentinel(c, i, left, &m, err, errlen))
            continue;
        __atomic_store_n(&sentinel_first, i, __ATOMIC_RELAXED);
        uint64_t now = dl_now_ms();
        left = end > now ? end - now : 1;
        redisContext *ctx = dl_connect_ep(c, &m, left, err, errlen);
        if (!ctx)
            return NULL;          /* the sentinels agree on it: no use asking the others */
        redisReply *r = redisCommand(ctx, "ROLE");
        int master = r && r->type == REDIS_REPLY_ARRAY && r->elements > 0 &&
                     r->element[0]->type == REDIS_REPLY_STRING &&
                     strcmp(r->element[0]->str, "master") == 0;
        if (!master) {
            char name[300];
            snprintf(err, errlen, "redis %s: named master \"%s\" by the sentinels, but %s",
                     dl_ep_name(&m, 0, name, sizeof name), c->master,
                     r && r->type == REDIS_REPLY_ERROR ? r->str : "it is not a master (failover under way)");
            if (r)
                freeReplyObject(r);
            redisFree(ctx);
            return NULL;
        }
        freeReplyObject(r);
        return ctx;
    }
    return NULL;
}

static void *sentinel_open(const dl_config_t *cfg)
{
    dl_link_conf_t conf = {
        .cfg = cfg,
        .ep = cfg->ep[0],     /* the first sentinel: unused by the dialer */
        .dial = dl_sentinel_connect,
        /* A server that says it is no longer the master (or not ready:
         * fault.h) is left for the one the sentinels name now; the
         * command did not run. */
        .leave_not_master = 1,
        .timeout_ms = cfg->io_timeout_ms,
        .may_post = 1,        /* the process's one connection */
    };
    snprintf(conf.name, sizeof conf.name, "master \"%.100s\"", cfg->master);
    return dl_link_new(&conf);
}

static redisContext *sentinel_connect_any(const dl_config_t *cfg, unsigned long timeout_ms,
                                          char *err, size_t errlen)
{
    return dl_sentinel_connect(cfg, NULL, timeout_ms, err, errlen);
}

const dl_backend_t dl_backend_sentinel = {
    .caps = { .queue = 1, .quorum = 0, .post = 1 },
    .open = sentinel_open,
    .nodes = dl_single_nodes,
    .exec = dl_single_exec,
    .start = dl_single_start,
    .finish = dl_single_finish,
    .post = dl_single_post,
    .connect_any = sentinel_connect_any,
    .abandon = dl_single_abandon,
    .free = dl_single_free,
};
