/* SPDX-License-Identifier: BSD-3-Clause */
/* options.c - the command line -> cli_opts_t.
 *
 *   distlock [options] NAME -- COMMAND [ARG...]
 *   distlock -N COUNT [options] NAME -- COMMAND [ARG...]   (a semaphore's permit)
 *   distlock [options] NAME -c 'shell command'
 *   distlock [options] NAME COMMAND [ARG...]        (as flock(1) allows)
 *   distlock status NAME [--json]
 *   distlock list [PATTERN] [--json] [--all]
 *   distlock break NAME --force
 *   distlock top [PATTERN] [...], distlock metrics [PATTERN] [...]  (viewopts.c)
 *
 * getopt is not used: options may come before or after NAME (until the
 * command starts), and the first word decides between running a command
 * and a subcommand.  A word is a subcommand only when no run option came
 * before it, so `distlock -x status -- cmd` runs cmd under a lock named
 * "status".
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "config.h"           /* dl_parse_ulong: whole numbers as DISTLOCK_* are read */
#include "options.h"
#include "distlock.h"
#include "output.h"

/* Where an option may be used. */
enum { FOR_RUN = 1, FOR_SUB = 2, FOR_ALL = 3 };

typedef struct optdef {
    char short_name;          /* 0: long only */
    const char *long_name;    /* NULL: short only */
    int takes_arg;
    int where;
    int id;
} optdef_t;

enum {
    O_SHARED, O_EXCLUSIVE, O_NONBLOCK, O_WAIT, O_CONFLICT, O_COMMAND, O_FAIR, O_LEASE,
    O_KILL, O_PERMITS, O_URL, O_VERBOSE, O_HELP, O_VERSION, O_JSON, O_ALL, O_FORCE
};

/* flock(1)'s names are accepted too: -e, --nb, --timeout, --conflict-exit-code. */
static const optdef_t optdefs[] = {
    { 's', "shared", 0, FOR_RUN, O_SHARED },
    { 'x', "exclusive", 0, FOR_RUN, O_EXCLUSIVE },
    { 'e', NULL, 0, FOR_RUN, O_EXCLUSIVE },
    { 'n', "nonblock", 0, FOR_RUN, O_NONBLOCK },
    { 0, "nb", 0, FOR_RUN, O_NONBLOCK },
    { 'w', "wait", 1, FOR_RUN, O_WAIT },
    { 0, "timeout", 1, FOR_RUN, O_WAIT },
    { 'E', "conflict-exit-code", 1, FOR_RUN, O_CONFLICT },
    { 'c', "command", 1, FOR_RUN, O_COMMAND },
    { 0, "fair", 0, FOR_RUN, O_FAIR },
    { 0, "lease", 1, FOR_RUN, O_LEASE },
    { 0, "kill-on-loss", 0, FOR_RUN, O_KILL },
    { 'N', "permits", 1, FOR_RUN, O_PERMITS },
    { 0, "url", 1, FOR_ALL, O_URL },
    { 'v', "verbose", 0, FOR_ALL, O_VERBOSE },
    { 'h', "help", 0, FOR_ALL, O_HELP },
    { 'V', "version", 0, FOR_ALL, O_VERSION },
    { 0, "json", 0, FOR_SUB, O_JSON },
    { 0, "all", 0, FOR_SUB, O_ALL },
    { 0, "force", 0, FOR_SUB, O_FORCE },
};
#define NOPTS (sizeof optdefs / sizeof optdefs[0])

/* Same range as DISTLOCK_LEASE_MS, which --lease sets. */
#define LEASE_MIN 30UL
#define LEASE_MAX 86400000UL
#define WAIT_MAX 1e9

void cli_usage(void)
{
    fputs("usage: distlock [options] NAME -- COMMAND [ARG...]\n"
          "       distlock [options] NAME -c 'SHELL COMMAND'\n"
          "       distlock -N COUNT [options] NAME -- COMMAND [ARG...]\n"
          "       distlock status NAME [--json]\n"
          "       distlock list [PATTERN] [--json] [--all]\n"
          "       distlock break NAME --force\n"
          "       distlock top [PATTERN] [-d SECONDS] [-n COUNT] [-b] [-o KEY] [-r]\n"
          "       distlock metrics [PATTERN] [--names N] [--output FILE]\n"
          "\n"
          "Runs COMMAND while holding the distributed lock NAME (kept in Redis),\n"
          "renewing it until COMMAND ends, and exits with COMMAND's status.\n"
          "\n"
          "  -x, --exclusive       exclusive lock (default)\n"
          "  -s, --shared          shared lock: any number of -s holders at once\n"
          "  -n, --nonblock        fail at once if the lock is held (exit 1, or -E's code)\n"
          "  -w, --wait SECONDS    wait at most SECONDS (fractions allowed; 0 is -n)\n"
          "  -E, --conflict-exit-code N\n"
          "                        exit code on conflict or time-out (default 1)\n"
          "  -c, --command CMD     run CMD with /bin/sh -c\n"
          "      --fair            strict arrival order across processes (exclusive only)\n"
          "      --lease MS        if distlock dies, the lock frees within MS (default\n"
          "                        30000; renewed every MS/3 while COMMAND runs)\n"
          "      --kill-on-loss    send COMMAND SIGTERM if the hold is lost while it runs\n"
          "  -N, --permits COUNT   hold one of COUNT leased permits of the semaphore NAME\n"
          "                        (at most COUNT commands at once; -n, -w, -E, --lease,\n"
          "                        --kill-on-loss apply; -s and --fair do not)\n"
          "      --url URL         Redis (default $DISTLOCK_URL or redis://127.0.0.1:6379)\n"
          "  -v, --verbose         say what happens\n"
          "  -h, --help            this text\n"
          "  -V, --version         the version\n"
          "\n"
          "  status NAME           mode, holders, waiters, lease left, fence;\n"
          "                        exit 0 if held, 1 if free\n"
          "  list [PATTERN]        held (or waited on) locks whose names match PATTERN;\n"
          "                        --all: also free locks used in the last 7 days\n"
          "  break NAME --force    delete a stuck lock's holds and wake its waiters\n"
          "  --json                machine-readable output for status and list\n"
          "  top [PATTERN]         the held and waited-on locks, live like top(1), with\n"
          "                        holders, waiters and how long; keys w a t n sort (by\n"
          "                        waiters, hold age, wait, name), r reverses, q quits;\n"
          "                        -d SECONDS between refreshes (1), -n COUNT refreshes,\n"
          "                        -o KEY sort by waiters, age, wait or name, -r reversed,\n"
          "                        -b plain text (as when not on a terminal: one snapshot)\n"
          "  metrics [PATTERN]     the same in the Prometheus text format; --names N:\n"
          "                        series for the N busiest names (100), the rest summed\n"
          "                        under name=\"\"; --output FILE: written atomically\n"
          "  --limit N             top, metrics: read at most N objects (10000)\n"
          "\n"
          "Exit codes: COMMAND's status (128+N if killed by signal N); 1 (or -E's)\n"
          "conflict or time-out; 64 usage; 69 Redis unreachable; 73 metrics --output\n"
          "not written; 78 bad DISTLOCK_* variable; 126 COMMAND not executable; 127\n"
          "COMMAND not found.  See distlock(1).\n",
          stdout);
}

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    cli_verr(fmt, ap);
    va_end(ap);
    return CLI_EX_USAGE;
}

/* Seconds for -w: digits with an optional fraction, nothing else (no
 * signs, exponents, hex, inf or nan, which strtod would take). */
static int parse_seconds(const char *s, double *out)
{
    const char *p = s;
    int digits = 0;
    while (*p >= '0' && *p <= '9') {
        p++;
        digits++;
    }
    if (*p == '.') {
        p++;
        while (*p >= '0' && *p <= '9') {
            p++;
            digits++;
        }
    }
    if (!digits || *p)
        return EINVAL;
    errno = 0;
    double v = strtod(s, NULL);
    if (errno || v > WAIT_MAX)
        return EINVAL;
    *out = v;
    return 0;
}

static int is_subcommand(const char *w)
{
    return strcmp(w, "status") == 0 || strcmp(w, "list") == 0 || strcmp(w, "break") == 0;
}

/* Applies option d (with its argument, if any).  0 or CLI_EX_USAGE. */
static int apply(cli_opts_t *o, const optdef_t *d, const char *shown, const char *arg)
{
    unsigned long v;
    switch (d->id) {
    case O_SHARED: o->mode = 'r'; break;
    case O_EXCLUSIVE: o->mode = 'w'; break;
    case O_NONBLOCK: o->nonblock = 1; break;
    case O_WAIT:
        if (parse_seconds(arg, &o->wait_s))
            return usage_error("%s: '%s' is not a number of seconds (like 5 or 0.5)", shown, arg);
        o->has_wait = 1;
        break;
    case O_CONFLICT:
        if (dl_parse_ulong(arg, 0, 255, &v))
            return usage_error("%s: '%s' is not an exit code (0 to 255)", shown, arg);
        o->conflict_code = (int)v;
        break;
    case O_COMMAND:
        if (o->shell_cmd)
            return usage_error("%s given twice", shown);
        o->shell_cmd = arg;
        break;
    case O_FAIR: o->fair = 1; break;
    case O_LEASE:
        if (dl_parse_ulong(arg, LEASE_MIN, LEASE_MAX, &o->lease_ms))
            return usage_error("%s: '%s' is not a lease in ms (30 to 86400000)", shown, arg);
        break;
    case O_KILL: o->kill_on_loss = 1; break;
    case O_PERMITS:
        if (dl_parse_ulong(arg, 1, 2147483647UL, &o->permits))
            return usage_error("%s: '%s' is not a number of permits (1 to 2147483647)", shown, arg);
        break;
    case O_URL: o->url = arg; break;
    case O_VERBOSE: o->verbose = 1; break;
    case O_HELP: o->cmd = CLI_HELP; break;
    case O_VERSION: o->cmd = CLI_VERSION; break;
    case O_JSON: o->json = 1; break;
    case O_ALL: o->all = 1; break;
    case O_FORCE: o->force = 1; break;
    }
    return 0;
}

static const char *cmd_word(int cmd)
{
    return cmd == CLI_STATUS ? "status" : cmd == CLI_LIST ? "list" : "break";
}

/* Parses the option at argv[*i] (which starts with '-').  *sub is the
 * subcommand, or CLI_RUN; *run_opt is set when a run-only option was seen.
 * Advances *i past the option and its argument. */
static int parse_option(int argc, char **argv, int *i, cli_opts_t *o, int sub, int *run_opt)
{
    const char *a = argv[*i];
    char shown[64];
    if (a[1] == '-') {                               /* --long[=value] */
        const char *name = a + 2, *eq = strchr(name, '=');
        size_t n = eq ? (size_t)(eq - name) : strlen(name);
        const optdef_t *d = NULL;
        for (size_t k = 0; k < NOPTS; k++)
            if (optdefs[k].long_name && strlen(optdefs[k].long_name) == n &&
                strncmp(optdefs[k].long_name, name, n) == 0)
                d = &optdefs[k];
        snprintf(shown, sizeof shown, "--%.*s", (int)(n < 40 ? n : 40), name);
        if (!d)
            return usage_error("unknown option '%s' (see distlock --help)", shown);
        if (sub != CLI_RUN && !(d->where & FOR_SUB))
            return usage_error("%s does not apply to '%s'", shown, cmd_word(sub));
        if (sub == CLI_RUN && !(d->where & FOR_RUN))
            return usage_error("%s applies only to the status, list and break subcommands",
                               shown);
        const char *arg = NULL;
        if (d->takes_arg) {
            if (eq) {
                arg = eq + 1;
            } else if (*i + 1 < argc) {
                arg = argv[++*i];
            } else {
                return usage_error("%s needs a value", shown);
            }
        } else if (eq) {
            return usage_error("%s takes no value", shown);
        }
        if (d->where == FOR_RUN)
            *run_opt = 1;
        (*i)++;
        return apply(o, d, shown, arg);
    }
    for (const char *p = a + 1; *p; p++) {           /* -abc, -w5, -w 5 */
        const optdef_t *d = NULL;
        for (size_t k = 0; k < NOPTS; k++)
            if (optdefs[k].short_name == *p)
                d = &optdefs[k];
        snprintf(shown, sizeof shown, "-%c", *p);
        if (!d) {
            if ((unsigned char)*p < 0x20 || (unsigned char)*p >= 0x7f)
                snprintf(shown, sizeof shown, "-\\x%02x", (unsigned char)*p);
            return usage_error("unknown option '%s' (see distlock --help)", shown);
        }
        if (sub != CLI_RUN && !(d->where & FOR_SUB))
            return usage_error("%s does not apply to '%s'", shown, cmd_word(sub));
        if (d->where == FOR_RUN)
            *run_opt = 1;
        if (d->takes_arg) {
            const char *arg;
            if (p[1]) {
                arg = p + 1;
            } else if (*i + 1 < argc) {
                arg = argv[++*i];
            } else {
                return usage_error("%s needs a value", shown);
            }
            (*i)++;
            return apply(o, d, shown, arg);
        }
        int rc = apply(o, d, shown, NULL);
        if (rc)
            return rc;
    }
    (*i)++;
    return 0;
}

static int check_name(const char *name, size_t *len)
{
    size_t n = strlen(name);
    if (n == 0) {
        cli_err("the lock name is empty");
        return CLI_EX_USAGE;
    }
    if (n > DIST_NAME_MAX) {
        cli_err("the lock name is %zu bytes long; the limit is %d", n, DIST_NAME_MAX);
        return CLI_EX_USAGE;
    }
    *len = n;
    return 0;
}

/* Checks that finish the run form: a name, exactly one command, and
 * options that go together. */
static int finish_run(cli_opts_t *o)
{
    if (!o->name)
        return usage_error("no lock name given (see distlock --help)");
    int rc = check_name(o->name, &o->namelen);
    if (rc)
        return rc;
    if (o->shell_cmd && o->argv_cmd)
        return usage_error("give either -c 'COMMAND' or -- COMMAND, not both");
    if (!o->shell_cmd && !o->argv_cmd)
        return usage_error("no command given: distlock NAME -- COMMAND, or NAME -c 'COMMAND'");
    if (o->permits && o->mode == 'r')
        return usage_error("-N takes a semaphore's permit; -s (a shared lock) does not apply");
    if (o->permits && o->fair)
        return usage_error("-N takes a semaphore's permit, whose waiters are served in arrival "
                           "order anyway; --fair does not apply");
    if (o->fair && o->mode == 'r')
        return usage_error("--fair applies to exclusive locks only (there is no fair shared lock)");
    if (o->has_wait && o->wait_s == 0)
        o->nonblock = 1;                             /* -w 0 is -n, as in flock(1) */
    if (o->nonblock)
        o->has_wait = 0;                             /* and -n wins over -w */
    return 0;
}

int cli_parse(int argc, char **argv, cli_opts_t *o)
{
    memset(o, 0, sizeof *o);
    o->cmd = CLI_RUN;
    o->mode = 'w';
    o->conflict_code = 1;

    int sub = CLI_RUN;      /* the subcommand, once its word was seen */
    int run_opt = 0;        /* a run-only option came before the first word */
    int words = 0;          /* words after the subcommand (or the name) */
    int i = 1;
    while (i < argc) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0) {
            if (sub != CLI_RUN)
                return usage_error("'%s' is a subcommand; to run a command under a lock named "
                                   "%s, put an option first: distlock -x %s -- COMMAND",
                                   cmd_word(sub), cmd_word(sub), cmd_word(sub));
            if (!o->name)
                return usage_error("no lock name given before '--' (see distlock --help)");
            if (i + 1 < argc)
                o->argv_cmd = &argv[i + 1];
            i = argc;
            break;
        }
        if (a[0] == '-' && a[1]) {
            int rc = parse_option(argc, argv, &i, o, sub, &run_opt);
            if (rc)
                return rc;
            if (o->cmd == CLI_HELP || o->cmd == CLI_VERSION)
                return 0;
            continue;
        }
        /* A word. */
        if (sub == CLI_RUN && !o->name && !run_opt && cli_view_word(a) >= 0)
            return cli_view_parse(argc, argv, i, o);     /* top, metrics */
        if (sub == CLI_RUN && !o->name && !run_opt && is_subcommand(a)) {
            sub = strcmp(a, "status") == 0 ? CLI_STATUS : strcmp(a, "list") == 0 ? CLI_LIST : CLI_BREAK;
            i++;
            continue;
        }
        if (sub != CLI_RUN) {
            if (words++)                   /* each takes one word at most */
                return usage_error("%s: unexpected argument '%s'", cmd_word(sub), a);
            if (sub == CLI_LIST)
                o->pattern = a;
            else
                o->name = a;
            i++;
            continue;
        }
        if (!o->name) {
            o->name = a;
            i++;
            continue;
        }
        /* flock(1) style: the command starts at the first word after NAME. */
        if (o->shell_cmd)
            return usage_error("-c takes the whole command as one argument; unexpected '%s'", a);
        o->argv_cmd = &argv[i];
        break;
    }

    if (sub == CLI_RUN) {
        o->cmd = CLI_RUN;
        return finish_run(o);
    }
    o->cmd = sub;
    if (sub != CLI_LIST) {
        if (!o->name)
            return usage_error("%s: no lock name given (distlock %s NAME)", cmd_word(sub), cmd_word(sub));
        int rc = check_name(o->name, &o->namelen);
        if (rc)
            return rc;
    }
    if (sub == CLI_BREAK && !o->force)
        return usage_error("break deletes the lock under its holders; add --force to do it");
    if (sub == CLI_BREAK && o->json)
        return usage_error("--json does not apply to 'break'");
    if (sub != CLI_LIST && o->all)
        return usage_error("--all applies to 'list' only");
    if (sub != CLI_BREAK && o->force)
        return usage_error("--force applies to 'break' only");
    return 0;
}
