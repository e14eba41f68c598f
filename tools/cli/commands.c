/* SPDX-License-Identifier: BSD-3-Clause */
/* commands.c - distlock status, list and break: read (or break) the lock
 * state in Redis, print it, and say by the exit code whether it is held. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "cli.h"
#include "commands.h"
#include "break.h"
#include "lockstat.h"
#include "scan.h"
#include "output.h"

static int open_or_fail(cli_redis_t *r)
{
    int rc = cli_redis_open(r, 0);
    if (rc) {
        cli_err("%s", r->err);
        cli_redis_close(r);
    }
    return rc;
}

/* Opens r and reads the state of lock NAME into st: 0, or the exit code
 * after saying why (r is then closed). */
static int open_and_fetch(cli_redis_t *r, const cli_opts_t *o, cli_lockstat_t *st)
{
    int rc = open_or_fail(r);
    if (rc)
        return rc;
    if (cli_lockstat_fetch(r, o->name, o->namelen, st)) {
        cli_err("%s", r->err);
        cli_redis_close(r);
        return CLI_EX_UNAVAILABLE;
    }
    return 0;
}

/* stdout could not be written (a full disk, a closed pipe under SIG_IGN):
 * the output is incomplete, so say so rather than exit 0. */
static int flush_stdout(int rc)
{
    if (fflush(stdout) != 0 || ferror(stdout)) {
        cli_err("cannot write the output");
        return CLI_EX_OSERR;
    }
    return rc;
}

int cli_status(const cli_opts_t *o)
{
    cli_redis_t r;
    cli_lockstat_t st;
    int rc = open_and_fetch(&r, o, &st);
    if (rc)
        return rc;
    cli_redis_close(&r);
    if (o->json) {
        cli_print_status_json(stdout, &st);
        fputc('\n', stdout);
    } else {
        cli_print_status(stdout, &st);
    }
    rc = st.nholders ? 0 : CLI_EX_FREE;
    cli_lockstat_free(&st);
    return flush_stdout(rc);
}

int cli_list(const cli_opts_t *o)
{
    cli_redis_t r;
    int rc = open_or_fail(&r);
    if (rc)
        return rc;
    char **names = NULL;
    size_t *lens = NULL, n = 0;
    if (cli_scan_names(&r, o->pattern, o->all, &names, &lens, &n)) {
        cli_err("%s", r.err);
        cli_redis_close(&r);
        return CLI_EX_UNAVAILABLE;
    }
    cli_lockstat_t *st = calloc(n ? n : 1, sizeof *st);
    if (!st) {
        cli_err("out of memory");
        cli_names_free(names, lens, n);
        cli_redis_close(&r);
        return CLI_EX_OSERR;
    }
    if (n && cli_lockstat_fetch_many(&r, names, lens, n, st)) {
        cli_err("%s", r.err);
        free(st);
        cli_names_free(names, lens, n);
        cli_redis_close(&r);
        return CLI_EX_UNAVAILABLE;
    }
    cli_redis_close(&r);
    cli_names_free(names, lens, n);

    /* Keys linger a moment after a release (a waiter's registration, the
     * meta hash for 7 days): without --all, show what is held or waited on
     * (with redlock, also what a minority of the servers shows held). */
    size_t shown = 0;
    for (size_t i = 0; i < n; i++) {
        if (o->all || st[i].nholders || st[i].nwaiters || st[i].disputed)
            st[shown++] = st[i];
        else
            cli_lockstat_free(&st[i]);
    }
    if (o->json)
        cli_print_list_json(stdout, st, shown);
    else if (shown)
        cli_print_list(stdout, st, shown);
    else if (isatty(STDOUT_FILENO))
        printf("no locks %s\n", o->all ? "known" : "held");
    for (size_t i = 0; i < shown; i++)
        cli_lockstat_free(&st[i]);
    free(st);
    return flush_stdout(0);
}

int cli_break(const cli_opts_t *o)
{
    cli_redis_t r;
    char q[1200], who[600];
    /* Who held it, for the report; the break itself is one atomic script. */
    cli_lockstat_t st;
    int rc = open_and_fetch(&r, o, &st);
    if (rc)
        return rc;
    long long removed = 0;
    if (cli_break_lock(&r, o->name, o->namelen, &removed)) {
        cli_err("%s", r.err);
        cli_lockstat_free(&st);
        cli_redis_close(&r);
        return CLI_EX_UNAVAILABLE;
    }
    cli_redis_close(&r);
    cli_quote(o->name, o->namelen, q, sizeof q);
    if (removed == 0) {
        cli_err("%s is not held; nothing to break", q);
        cli_lockstat_free(&st);
        return CLI_EX_FREE;
    }
    if (st.nholders == 1)
        printf("broke %s: removed the hold of %s", q, cli_who(&st.holders[0].who, who, sizeof who));
    else
        printf("broke %s: removed %lld hold%s", q, removed, removed == 1 ? "" : "s");
    if (st.nwaiters)
        printf("; handed it to the waiters (%zu)", st.nwaiters);
    printf("; the next holder gets EOWNERDEAD\n");
    cli_lockstat_free(&st);
    return flush_stdout(0);
}
