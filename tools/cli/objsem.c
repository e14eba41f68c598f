/* SPDX-License-Identifier: BSD-3-Clause */
/* objsem.c - the semaphore's decoder for top and metrics (objects.h): the
 * read-only script lua/sem_status.lua's view (shim/script/call_sem_status.h),
 * its leased permits' holders and its queue in a lock's shape, and its
 * incarnation with its age.
 *
 * The script runs through the library's script layer, routed by the
 * semaphore's first key (its keys share one hash slot), as the lock's
 * status does (lockstat.c): reconnects, cluster redirections, failovers
 * and an empty script cache are the library's.  Semaphores refuse
 * redlock:// (their count cannot be kept by independent servers), so
 * there they are counted (named, with no holder or waiter: never busy),
 * not read. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "objects.h"

#define CHUNK 256             /* script calls per pipelined batch */

/* One semaphore's keys (keys.h DL_KIND_SEM), in one allocation. */
typedef struct sem_keys {
    char *buf;
    const char *k[DL_KEYS_MAX];
    size_t len[DL_KEYS_MAX];
} sem_keys_t;

/* The STATE column: "2/5 permits" (held of all) for a leased semaphore,
 * "value 3" for a counting one. */
static void sem_state(const dl_sem_view_t *sv, char *buf, size_t size)
{
    if (sv->kind == 'l')
        snprintf(buf, size, "%lld/%lld permits", sv->held, sv->value);
    else if (sv->kind == 'c')
        snprintf(buf, size, "value %lld", sv->value);
    else
        snprintf(buf, size, "gone");   /* its keys expired between the scan and the read */
}

/* Reads names[at..at+m) into out[] with their keys k[]: 0, or -1 with r->err. */
static int fetch_chunk(cli_redis_t *r, dl_call_t *calls, const sem_keys_t *k, char **names,
                       const size_t *lens, size_t m, cli_obj_t *out)
{
    int rc = 0;
    for (size_t i = 0; i < m; i++) {
        dl_caller_t who = { k[i].k, k[i].len, "", 0, "" };
        dl_call_sem_status(&calls[i], &who, names[i], lens[i]);
    }
    cli_calls_run(r, -1, calls, (int)m);
    for (size_t i = 0; i < m; i++) {
        dl_sem_view_t *v = calls[i].reply.sem_status.view;
        if (rc == 0 && cli_call_reply(r, -1, &calls[i]))
            rc = -1;
        else if (rc == 0 && !v)
            rc = cli_redis_fail(r, -1, "unexpected reply to the semaphore's status script");
        else if (rc == 0) {
            out[i].kind = DL_KIND_SEM;
            out[i].st = v->v;                /* the view's parts are the caller's now */
            sem_state(v, out[i].state, sizeof out[i].state);
            out[i].incarn = v->incarn;
            out[i].incarn_age_ms = v->incarn ? v->age_ms : -1;
            free(v);
            calls[i].reply.sem_status.view = NULL;
        }
        dl_call_free_reply(&calls[i]);
    }
    return rc;
}

/* redlock://: named, not read (so never busy: counted, not shown). */
static int list_only(cli_redis_t *r, char **names, const size_t *lens, size_t n, cli_obj_t *out)
{
    for (size_t i = 0; i < n; i++) {
        out[i].kind = DL_KIND_SEM;
        if (!(out[i].st.name = malloc(lens[i] + 1)))
            return cli_redis_oom(r);
        memcpy(out[i].st.name, names[i], lens[i]);
        out[i].st.name[lens[i]] = 0;
        out[i].st.namelen = lens[i];
        snprintf(out[i].state, sizeof out[i].state, "not read (redlock)");
    }
    return 0;
}

static int fetch_sems(cli_redis_t *r, char **names, const size_t *lens, size_t n, cli_obj_t *out)
{
    memset(out, 0, n * sizeof *out);
    if (!n)
        return 0;
    if (!r->conn) {
        if (!r->err[0])
            cli_redis_fail(r, -1, "not connected");
        return -1;
    }
    size_t chunk = n < CHUNK ? n : CHUNK;
    dl_call_t *calls = calloc(chunk, sizeof *calls);
    sem_keys_t *k = calloc(chunk, sizeof *k);
    int rc = calls && k ? 0 : cli_redis_oom(r);
    if (rc == 0 && cli_redis_is_redlock(r))
        rc = list_only(r, names, lens, n, out);
    else
        /* Pipelined in chunks, so that a long list costs a few round trips. */
        for (size_t at = 0; at < n && rc == 0; at += chunk) {
            size_t m = n - at < chunk ? n - at : chunk, built = 0;
            for (; built < m; built++) {
                size_t len = lens[at + built];
                if (!(k[built].buf = malloc(dl_kind_keys_size(DL_KIND_SEM, r->cfg.prefix, len)))) {
                    rc = cli_redis_oom(r);
                    break;
                }
                dl_kind_keys_write(DL_KIND_SEM, k[built].buf, r->cfg.prefix, names[at + built], len,
                                   k[built].k, k[built].len);
            }
            if (rc == 0)
                rc = fetch_chunk(r, calls, k, names + at, lens + at, m, out + at);
            for (size_t i = 0; i < built; i++) {
                free(k[i].buf);
                k[i].buf = NULL;
            }
        }
    free(calls);
    free(k);
    if (rc)
        for (size_t i = 0; i < n; i++)
            cli_obj_free(&out[i]);
    return rc;
}

/* Every key but the hash: the queue, the deadlines, the registrations, the
 * leases, the holds.  The hash alone (a counting semaphore's value, kept 30
 * days past its last use) is not a sign of use. */
const cli_kind_view_t cli_sem_view = {
    .kind = DL_KIND_SEM,
    .label = "sem",
    .live_keys = 0x3eu,
    .fetch = fetch_sems,
};
