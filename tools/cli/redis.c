/* SPDX-License-Identifier: BSD-3-Clause */
/* redis.c - the distlock command's connection to Redis, through the
 * library's configuration, command layer, keys and script layer
 * (redis.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "distlock.h"
#include "dl.h"
#include "redis.h"

/* What a message names: redlock server `node`, or (node -1) where the conn
 * sends its commands. */
static const char *where(const cli_redis_t *r, int node, char *buf, size_t size)
{
    if (node >= 0)
        return dl_endpoint_name(&r->cfg, node, buf, size);
    if (r->cfg.scheme == DL_SCHEME_SENTINEL)
        snprintf(buf, size, "master \"%.100s\"", r->cfg.master);
    else if (r->cfg.scheme == DL_SCHEME_CLUSTER)
        snprintf(buf, size, "cluster");
    else
        dl_endpoint_name(&r->cfg, 0, buf, size);
    return buf;
}

int cli_redis_fail(cli_redis_t *r, int node, const char *what)
{
    char ep[300];
    snprintf(r->err, sizeof r->err, "redis %.200s: %.280s", where(r, node, ep, sizeof ep), what);
    return -1;
}

int cli_redis_exit_code(const cli_redis_t *r)
{
    (void)r;
    /* A server that refused the configuration (SELECT of a database it
     * has not) is no outage. */
    return dl_refused() ? CLI_EX_CONFIG : CLI_EX_UNAVAILABLE;
}

int cli_redis_oom(cli_redis_t *r)
{
    snprintf(r->err, sizeof r->err, "out of memory");
    return -1;
}

int cli_redis_open(cli_redis_t *r, unsigned long timeout_ms)
{
    memset(r, 0, sizeof *r);
    if (dl_config_load(&r->cfg)) {
        snprintf(r->err, sizeof r->err, "%s", dist_lasterror());
        return CLI_EX_CONFIG;
    }
    if (timeout_ms)
        r->cfg.io_timeout_ms = timeout_ms;
    /* The library sets its log level when a process first uses it; this
     * may come first (main.c chose DISTLOCK_LOG). */
    dl_log_set_level(r->cfg.log_level);
    if (!(r->conn = dl_conn_new(&r->cfg))) {
        cli_redis_oom(r);
        return CLI_EX_OSERR;
    }
    r->nodes = dl_conn_nodes(r->conn);
    return 0;
}

void cli_redis_close(cli_redis_t *r)
{
    if (r->conn)
        dl_conn_free(r->conn);
    r->conn = NULL;
}

int cli_redis_is_redlock(const cli_redis_t *r)
{
    return r->cfg.scheme == DL_SCHEME_REDLOCK && r->nodes > 1;
}

int cli_redis_need(const cli_redis_t *r)
{
    return cli_redis_is_redlock(r) ? r->nodes / 2 + 1 : 1;
}

void cli_redis_targets(const cli_redis_t *r, int *first, int *last)
{
    *first = cli_redis_is_redlock(r) ? 0 : -1;
    *last = cli_redis_is_redlock(r) ? r->nodes - 1 : -1;
}

int cli_redis_tally(cli_redis_t *r, int got, const char *last)
{
    int need = cli_redis_need(r);
    if (got >= need)
        return 0;
    if (cli_redis_is_redlock(r))
        snprintf(r->err, sizeof r->err, "redlock: %d of %d servers answered (need %d): %s", got,
                 r->nodes, need, last);
    return -1;
}

/* Sends cmds: node -1 through the conn (each routed by its key), else to
 * redlock server `node`.  Each ends with a reply (perhaps an error reply)
 * or err set. */
static void exec_on(cli_redis_t *r, int node, dl_cmd_t *cmds, int n)
{
    if (node < 0)
        dl_conn_exec(r->conn, cmds, n);
    else
        dl_conn_exec_node(r->conn, node, cmds, n);
}

redisReply *cli_redis_command(cli_redis_t *r, int node, int argc, const char **argv,
                              const size_t *lens, const char *key, size_t keylen)
{
    if (!r->conn) {
        if (!r->err[0])
            cli_redis_fail(r, node, "not connected");
        return NULL;
    }
    dl_cmd_t c;
    memset(&c, 0, sizeof c);
    c.argc = argc;
    c.argv = argv;
    c.argvlen = lens;
    c.key = key;
    c.keylen = keylen;
    exec_on(r, node, &c, 1);
    if (c.err || !c.reply) {
        if (c.err)
            snprintf(r->err, sizeof r->err, "%s", c.errmsg);
        else
            cli_redis_fail(r, node, "no reply");
        return NULL;
    }
    if (c.reply->type == REDIS_REPLY_ERROR) {
        cli_redis_fail(r, node, c.reply->str);
        freeReplyObject(c.reply);
        return NULL;
    }
    return c.reply;
}

/* ---------------------------------------------------------------- keys, scripts */

int cli_keys_make(cli_redis_t *r, int kind, cli_keys_t *lk, const char *name, size_t len)
{
    if (!(lk->buf = malloc(dl_kind_keys_size(kind, r->cfg.prefix, len))))
        return cli_redis_oom(r);
    dl_kind_keys_write(kind, lk->buf, r->cfg.prefix, name, len, lk->k, lk->len);
    return 0;
}

void cli_keys_free(cli_keys_t *lk)
{
    free(lk->buf);
    lk->buf = NULL;
}

dl_caller_t cli_caller(const cli_keys_t *lk, const char *chan, const char *token)
{
    return (dl_caller_t){ lk->k, lk->len, chan ? chan : "", chan ? strlen(chan) : 0, token };
}

void cli_calls_run(cli_redis_t *r, int node, dl_call_t *calls, int n)
{
    if (node < 0)
        dl_script_run(r->conn, calls, n);     /* redlock://: quorum.c, each script's merge */
    else
        dl_script_run_node(r->conn, node, calls, n);
}

int cli_call_reply(cli_redis_t *r, int node, dl_call_t *c)
{
    if (!c->cmd.err)
        return 0;
    /* The script layer words an error reply "redis: <the server's
     * message>"; this tool names the server, as for its other commands. */
    if (strncmp(c->cmd.errmsg, "redis: ", 7) == 0)
        cli_redis_fail(r, node, c->cmd.errmsg + 7);
    else
        snprintf(r->err, sizeof r->err, "%s", c->cmd.errmsg);
    return -1;
}

int cli_call(cli_redis_t *r, int node, dl_call_t *c)
{
    cli_calls_run(r, node, c, 1);
    return cli_call_reply(r, node, c);
}
