/* SPDX-License-Identifier: BSD-3-Clause */
/* lockstat.c - a lock's state, read by lua/status.lua (lockstat.h).
 *
 * The script runs through the library's script layer, routed by the
 * lock's first key (all its keys share one hash slot), so the library
 * handles reconnects, cluster redirections, sentinel failovers, a
 * server's empty script cache, and on redlock:// the asking of every
 * server and the majority over their views (the status script's entry,
 * shim/script/call_status.c).
 */
#include <stdlib.h>
#include <string.h>

#include "lockstat.h"

void cli_lockstat_free(cli_lockstat_t *st)
{
    dl_view_clear(st);
}

#define CHUNK 256             /* script calls per pipelined batch */

/* The state of names[0..n) (their keys lk[0..n)): 0, or -1 with r->err
 * and st[] empty. */
static int fetch(cli_redis_t *r, const cli_keys_t *lk, char **names, const size_t *lens,
                 size_t n, cli_lockstat_t *st)
{
    if (!r->conn) {
        if (!r->err[0])
            cli_redis_fail(r, -1, "not connected");
        return -1;
    }
    size_t chunk = n < CHUNK ? n : CHUNK;
    dl_call_t *calls = calloc(chunk, sizeof *calls);
    int rc = calls ? 0 : cli_redis_oom(r);
    /* Pipelined in chunks, so that a long list costs a few round trips. */
    for (size_t at = 0; at < n && rc == 0; at += chunk) {
        size_t m = n - at < chunk ? n - at : chunk;
        for (size_t i = 0; i < m; i++) {
            dl_caller_t who = cli_caller(&lk[at + i], NULL, NULL);
            dl_call_status(&calls[i], &who, names[at + i], lens[at + i]);
        }
        cli_calls_run(r, -1, calls, (int)m);
        for (size_t i = 0; i < m; i++) {
            dl_view_t *v = calls[i].reply.status.view;
            if (rc == 0 && cli_call_reply(r, -1, &calls[i]))
                rc = -1;
            else if (rc == 0 && !v)
                rc = cli_redis_fail(r, -1, "unexpected reply to the status script");
            else if (rc == 0) {
                st[at + i] = *v;          /* the view's parts are the caller's now */
                free(v);
                calls[i].reply.status.view = NULL;
            }
            dl_call_free_reply(&calls[i]);
        }
    }
    free(calls);
    if (rc)
        for (size_t i = 0; i < n; i++)
            cli_lockstat_free(&st[i]);
    return rc;
}

int cli_lockstat_fetch_many(cli_redis_t *r, char **names, const size_t *lens, size_t n,
                            cli_lockstat_t *st)
{
    memset(st, 0, n * sizeof *st);
    if (!n)
        return 0;
    cli_keys_t *lk = calloc(n, sizeof *lk);
    if (!lk)
        return cli_redis_oom(r);
    int rc = 0;
    size_t built = 0;
    for (; built < n && rc == 0; built++)
        rc = cli_keys_make(r, &lk[built], names[built], lens[built]);
    if (rc == 0)
        rc = fetch(r, lk, names, lens, n, st);
    for (size_t i = 0; i < built; i++)
        cli_keys_free(&lk[i]);
    free(lk);
    return rc;
}

int cli_lockstat_fetch(cli_redis_t *r, const char *name, size_t len, cli_lockstat_t *st)
{
    char *names[1] = { (char *)name };
    size_t lens[1] = { len };
    return cli_lockstat_fetch_many(r, names, lens, 1, st);
}
