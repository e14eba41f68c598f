/* SPDX-License-Identifier: BSD-3-Clause */
/* main.c - distlock: run a command under a distributed lock, or look at
 * and break locks.  See distlock(1) and cli.h for how the parts fit.
 *
 * The library reads its configuration from the environment on first use,
 * so the options that configure it (--url, --lease) and the log level are
 * put in the environment here, before any library call.  The child gets the
 * environment distlock was started with, plus DISTLOCK_FENCE and, with
 * --url, DISTLOCK_URL (so a nested distlock talks to the same Redis).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "main.h"
#include "metrics.h"
#include "options.h"
#include "run.h"
#include "top.h"
#include "config.h"
#include "distlock.h"
#include "output.h"

#ifndef DISTLOCK_VERSION
#define DISTLOCK_VERSION "unknown"
#endif

extern char **environ;

/* "VAR=value" entries as distlock found them (NULL: unset), given back to
 * the child. */
static char *orig_lease, *orig_log;

static char *entry_of(const char *var)
{
    const char *v = getenv(var);
    if (!v)
        return NULL;
    size_t n = strlen(var) + strlen(v) + 2;
    char *e = malloc(n);
    if (e)
        snprintf(e, n, "%s=%s", var, v);
    return e;
}

static int is_var(const char *entry, const char *var)
{
    size_t n = strlen(var);
    return strncmp(entry, var, n) == 0 && entry[n] == '=';
}

char **cli_child_env(const char *fence)
{
    size_t n = 0;
    while (environ[n])
        n++;
    char **env = malloc((n + 4) * sizeof *env);
    static char fence_entry[64];
    if (!env)
        return NULL;
    size_t o = 0;
    for (size_t i = 0; i < n; i++)
        if (!is_var(environ[i], "DISTLOCK_LEASE_MS") && !is_var(environ[i], "DISTLOCK_LOG") &&
            !is_var(environ[i], "DISTLOCK_FENCE"))
            env[o++] = environ[i];
    if (orig_lease)
        env[o++] = orig_lease;
    if (orig_log)
        env[o++] = orig_log;
    snprintf(fence_entry, sizeof fence_entry, "DISTLOCK_FENCE=%s", fence);
    env[o++] = fence_entry;
    env[o] = NULL;
    return env;
}

/* Puts --url, --lease and the log level where the library looks, and checks
 * the whole configuration once, so a bad value is one clear message. */
static int setup_env(const cli_opts_t *o)
{
    if (o->url) {
        dl_config_t c;
        char err[200];
        if (dl_url_parse(o->url, &c, err, sizeof err)) {
            cli_err("--url: %s", err);         /* never echo the URL: it may hold a password */
            return CLI_EX_USAGE;
        }
        setenv("DISTLOCK_URL", o->url, 1);
    }
    orig_lease = entry_of("DISTLOCK_LEASE_MS");
    orig_log = entry_of("DISTLOCK_LOG");
    if (o->lease_ms) {
        char v[32];
        snprintf(v, sizeof v, "%lu", o->lease_ms);
        setenv("DISTLOCK_LEASE_MS", v, 1);
    }
    /* distlock reports what matters itself, in one line each; the library's
     * own warnings (retries, lost holds) would say it twice.  An explicit
     * DISTLOCK_LOG is respected. */
    if (!orig_log)
        setenv("DISTLOCK_LOG", o->verbose ? "warn" : "error", 1);

    dl_config_t c;
    if (dl_config_load(&c)) {
        cli_err("%s", dist_lasterror());
        return CLI_EX_CONFIG;
    }
    return 0;
}

int main(int argc, char **argv)
{
    cli_opts_t o;
    int rc = cli_parse(argc, argv, &o);
    if (rc)
        return rc;
    switch (o.cmd) {
    case CLI_HELP:
        cli_usage();
        return 0;
    case CLI_VERSION:
        printf("distlock %s\n", DISTLOCK_VERSION);
        return 0;
    }
    cli_verbose = o.verbose;
    if ((rc = setup_env(&o)))
        return rc;
    switch (o.cmd) {
    case CLI_STATUS:
        return cli_status(&o);
    case CLI_LIST:
        return cli_list(&o);
    case CLI_BREAK:
        return cli_break(&o);
    case CLI_TOP:
        return cli_top(&o);
    case CLI_METRICS:
        return cli_metrics(&o);
    default:
        return cli_run(&o);
    }
}
