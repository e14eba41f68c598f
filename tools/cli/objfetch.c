/* SPDX-License-Identifier: BSD-3-Clause */
/* objfetch.c - the state of named objects of one kind, each read by its
 * kind's status script (objects.h: the kind's view builds the call and
 * takes its reply).
 *
 * The scripts run through the library's script layer, each routed by its
 * object's first key (all its keys share one hash slot), so the library
 * handles reconnects, cluster redirections, sentinel failovers, a
 * server's empty script cache, and on redlock:// the asking of every
 * server and the merge of their views (the script's entry: a lock's,
 * shim/script/call_status.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "objects.h"

#define CHUNK 256             /* script calls per pipelined batch */

/* A kind that cannot be read here: each object named, with the reason
 * as its state (so never busy: counted, not shown). */
static int named_only(cli_redis_t *r, int kind, const char *why, char **names,
                      const size_t *lens, size_t n, cli_obj_t *out)
{
    for (size_t i = 0; i < n; i++) {
        out[i].kind = kind;
        if (dl_view_set_name(&out[i].st, names[i], lens[i]))
            return cli_redis_oom(r);
        snprintf(out[i].state, sizeof out[i].state, "%s", why);
    }
    return 0;
}

/* Reads names[0..m) (their keys k[]) into out[]: 0, or -1 with r->err. */
static int fetch_chunk(cli_redis_t *r, const cli_kind_view_t *kv, dl_call_t *calls,
                       const cli_keys_t *k, char **names, const size_t *lens, size_t m,
                       cli_obj_t *out)
{
    int rc = 0;
    for (size_t i = 0; i < m; i++) {
        dl_caller_t who = cli_caller(&k[i], NULL, NULL);
        kv->call(&calls[i], &who, names[i], lens[i]);
    }
    cli_calls_run(r, -1, calls, (int)m);
    for (size_t i = 0; i < m; i++) {
        char what[80];
        if (rc == 0 && cli_call_reply(r, -1, &calls[i]))
            rc = -1;
        else if (rc == 0 && kv->take(&calls[i], &out[i])) {
            snprintf(what, sizeof what, "unexpected reply to the %s's status script", kv->noun);
            rc = cli_redis_fail(r, -1, what);
        }
        dl_call_free_reply(&calls[i]);
    }
    return rc;
}

int cli_objs_fetch(cli_redis_t *r, int kind, char **names, const size_t *lens, size_t n,
                   cli_obj_t *out)
{
    const cli_kind_view_t *kv = cli_kind_view(kind);
    memset(out, 0, n * sizeof *out);
    if (!n)
        return 0;
    if (!r->conn) {
        if (!r->err[0])
            cli_redis_fail(r, -1, "not connected");
        return -1;
    }
    const char *why = kv->unread ? kv->unread(r) : NULL;
    if (why) {
        if (named_only(r, kind, why, names, lens, n, out)) {
            for (size_t i = 0; i < n; i++)
                cli_obj_free(&out[i]);
            return -1;
        }
        return 0;
    }
    size_t chunk = n < CHUNK ? n : CHUNK;
    dl_call_t *calls = calloc(chunk, sizeof *calls);
    cli_keys_t *k = calloc(chunk, sizeof *k);
    int rc = calls && k ? 0 : cli_redis_oom(r);
    /* Pipelined in chunks, so that a long list costs a few round trips. */
    for (size_t at = 0; at < n && rc == 0; at += chunk) {
        size_t m = n - at < chunk ? n - at : chunk, built = 0;
        for (; built < m && rc == 0; built++)
            rc = cli_keys_make(r, kind, &k[built], names[at + built], lens[at + built]);
        if (rc == 0)
            rc = fetch_chunk(r, kv, calls, k, names + at, lens + at, m, out + at);
        for (size_t i = 0; i < built; i++)
            cli_keys_free(&k[i]);
    }
    free(calls);
    free(k);
    if (rc)
        for (size_t i = 0; i < n; i++)
            cli_obj_free(&out[i]);
    return rc;
}
