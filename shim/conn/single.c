/* SPDX-License-Identifier: BSD-3-Clause */
/* single.c - one server, one link (see single.h). */
#include "single.h"
#include "cmdlink.h"

static void *single_open(const dl_config_t *cfg)
{
    dl_link_conf_t conf = {
        .cfg = cfg,
        .ep = cfg->ep[0],
        .dial = dl_connect_ep,
        .timeout_ms = cfg->io_timeout_ms,
        .may_post = 1,        /* the process's one connection */
    };
    dl_ep_name(&cfg->ep[0], cfg->scheme == DL_SCHEME_UNIX, conf.name, sizeof conf.name);
    return dl_link_new(&conf);
}

int dl_single_nodes(const void *b)
{
    (void)b;
    return 1;
}

int dl_single_exec(void *b, int node, dl_cmd_t *cmds, int n)
{
    (void)node;
    return dl_link_exec(b, cmds, n);
}

void dl_single_start(void *b, int node, dl_cmd_t *cmds, int n, dl_link_op_t *op)
{
    (void)node;
    dl_link_start(b, cmds, n, op);
}

int dl_single_finish(void *b, int node, dl_cmd_t *cmds, int n, dl_link_op_t *op)
{
    (void)node;
    return dl_link_finish(b, cmds, n, op);
}

int dl_single_post(void *b, int argc, const char **argv, const size_t *argvlen)
{
    return dl_link_post(b, argc, argv, argvlen);
}

void dl_single_abandon(void *b)
{
    dl_link_abandon(b);
}

void dl_single_free(void *b)
{
    dl_link_free(b);
}

static redisContext *single_connect_any(const dl_config_t *cfg, unsigned long timeout_ms,
                                        char *err, size_t errlen)
{
    return dl_connect_ep(cfg, &cfg->ep[0], timeout_ms, err, errlen);
}

const dl_backend_t dl_backend_single = {
    .caps = { .queue = 1, .quorum = 0, .post = 1 },
    .open = single_open,
    .nodes = dl_single_nodes,
    .exec = dl_single_exec,
    .start = dl_single_start,
    .finish = dl_single_finish,
    .post = dl_single_post,
    .connect_any = single_connect_any,
    .abandon = dl_single_abandon,
    .free = dl_single_free,
};
