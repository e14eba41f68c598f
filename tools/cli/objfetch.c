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
#include "view.h"

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

/* Reads objects (kinds[i], names[i]), i < m, into out[] in one pipelined
 * batch: 0, or -1 with r->err. */
static int read_batch(cli_redis_t *r, const int *kinds, char **names, const size_t *lens,
                      size_t m, cli_obj_t *out)
{
    dl_call_t *calls = calloc(m, sizeof *calls);
    cli_keys_t *k = calloc(m, sizeof *k);
    int rc = calls && k ? 0 : cli_redis_oom(r);
    size_t built = 0;
    for (; built < m && rc == 0; built++) {
        rc = cli_keys_make(r, kinds[built], &k[built], names[built], lens[built]);
        if (rc == 0) {
            dl_caller_t who = cli_caller(&k[built], NULL, NULL);
            cli_kind_view(kinds[built])->call(&calls[built], &who, names[built], lens[built]);
        }
    }
    if (rc == 0)
        cli_calls_run(r, -1, calls, (int)m);
    for (size_t i = 0; i < m && rc == 0; i++) {
        const cli_kind_view_t *kv = cli_kind_view(kinds[i]);
        char what[80];
        if (cli_call_reply(r, -1, &calls[i])) {
            rc = -1;
        } else if (kv->take(&calls[i], &out[i])) {
            snprintf(what, sizeof what, "unexpected reply to the %s's status script", kv->noun);
            rc = cli_redis_fail(r, -1, what);
        }
    }
    for (size_t i = 0; calls && i < m; i++)
        dl_call_free_reply(&calls[i]);
    for (size_t i = 0; k && i < built; i++)
        cli_keys_free(&k[i]);
    free(calls);
    free(k);
    return rc;
}

static int check_conn(cli_redis_t *r)
{
    if (r->conn)
        return 0;
    if (!r->err[0])
        cli_redis_fail(r, -1, "not connected");
    return -1;
}

int cli_objs_fetch(cli_redis_t *r, int kind, char **names, const size_t *lens, size_t n,
                   cli_obj_t *out)
{
    const cli_kind_view_t *kv = cli_kind_view(kind);
    memset(out, 0, n * sizeof *out);
    if (!n)
        return 0;
    if (check_conn(r))
        return -1;
    const char *why = kv->unread ? kv->unread(r) : NULL;
    int kinds[CHUNK];
    for (size_t i = 0; i < CHUNK; i++)
        kinds[i] = kind;
    /* Pipelined in chunks, so that a long list costs a few round trips. */
    int rc = 0;
    for (size_t at = 0; at < n && rc == 0; at += CHUNK) {
        size_t m = n - at < CHUNK ? n - at : CHUNK;
        rc = why ? named_only(r, kind, why, names + at, lens + at, m, out + at)
                 : read_batch(r, kinds, names + at, lens + at, m, out + at);
    }
    if (rc)
        for (size_t i = 0; i < n; i++)
            cli_obj_free(&out[i]);
    return rc;
}

int cli_obj_fetch_kinds(cli_redis_t *r, unsigned kinds, const char *name, size_t len,
                        cli_obj_t *out)
{
    int which[DL_KINDS];
    char *names[DL_KINDS];
    size_t lens[DL_KINDS], m = 0;
    cli_obj_t got[DL_KINDS];
    memset(out, 0, DL_KINDS * sizeof *out);
    if (check_conn(r))
        return -1;
    int rc = 0;
    for (int k = 0; k < DL_KINDS && rc == 0; k++) {
        const cli_kind_view_t *kv = cli_kind_view(k);
        if (!(kinds & (1u << k)) || !kv)
            continue;
        const char *why = kv->unread ? kv->unread(r) : NULL;
        if (why) {
            rc = named_only(r, k, why, (char **)&name, &len, 1, &out[k]);
            continue;
        }
        which[m] = k;
        names[m] = (char *)name;
        lens[m++] = len;
    }
    memset(got, 0, sizeof got);
    if (rc == 0 && m)
        rc = read_batch(r, which, names, lens, m, got);
    for (size_t i = 0; i < m; i++)
        out[which[i]] = got[i];
    if (rc)
        for (int k = 0; k < DL_KINDS; k++)
            cli_obj_free(&out[k]);
    return rc;
}
