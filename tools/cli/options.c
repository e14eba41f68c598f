/* SPDX-License-Identifier: BSD-3-Clause */
/* options.c - the command line of every command -> cli_opts_t.
 *
 *   distlock [options] NAME -- COMMAND [ARG...]
 *   distlock -N COUNT [options] NAME -- COMMAND [ARG...]   (a semaphore's permit)
 *   distlock [options] NAME -c 'shell command'
 *   distlock [options] NAME COMMAND [ARG...]        (as flock(1) allows)
 *   distlock status NAME [--kind KIND] [--json]
 *   distlock list [PATTERN] [--kind KIND] [--json] [--all]
 *   distlock break NAME --force [--kind KIND] [--holder HOST:PID]
 *   distlock top [PATTERN] [-d SECONDS] [-n COUNT] [-b] [-o KEY] [-r] [--limit N]
 *   distlock metrics [PATTERN] [--names N] [--limit N] [--output FILE]
 *
 * One table of options says which commands each applies to; one loop reads
 * the words.  getopt is not used: options may come before or after NAME
 * (until the command starts), and the first word decides between running
 * a command and a subcommand.  A word is a subcommand only when no run
 * option came before it, so `distlock -x status -- cmd` runs cmd under a
 * lock named "status"; a word one letter away from a subcommand is taken
 * for a typo of it unless `--` follows.  The letters of top follow
 * top(1): -d delay, -n iterations, -b batch, -o sort field (top's -n is
 * not run's).
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli.h"
#include "config.h"           /* dl_parse_ulong: whole numbers as DISTLOCK_* are read */
#include "distlock.h"
#include "keys.h"
#include "options.h"
#include "output.h"
#include "snapshot.h"         /* the sort keys of top -o */

/* The commands an option applies to: a bit per enum cli_cmd. */
#define W(cmd) (1u << (cmd))
#define W_RUN W(CLI_RUN)
#define W_INSPECT (W(CLI_STATUS) | W(CLI_LIST) | W(CLI_BREAK))
#define W_VIEW (W(CLI_TOP) | W(CLI_METRICS))
#define W_ANY (W_RUN | W_INSPECT | W_VIEW)

typedef struct optdef {
    char short_name;          /* 0: long only */
    const char *long_name;    /* NULL: short only */
    int takes_arg;
    unsigned where;           /* W(...) of the commands it applies to */
    int id;
} optdef_t;

enum {
    O_SHARED, O_EXCLUSIVE, O_NONBLOCK, O_WAIT, O_CONFLICT, O_COMMAND, O_FAIR, O_LEASE,
    O_KILL, O_PERMITS, O_URL, O_VERBOSE, O_HELP, O_VERSION, O_JSON, O_ALL, O_FORCE, O_KIND,
    O_HOLDER, O_DELAY, O_ITER, O_BATCH, O_SORT, O_REV, O_LIMIT, O_NAMES, O_OUTPUT
};

/* flock(1)'s names are accepted too: -e, --nb, --timeout, --conflict-exit-code. */
static const optdef_t optdefs[] = {
    { 's', "shared", 0, W_RUN, O_SHARED },
    { 'x', "exclusive", 0, W_RUN, O_EXCLUSIVE },
    { 'e', NULL, 0, W_RUN, O_EXCLUSIVE },
    { 'n', "nonblock", 0, W_RUN, O_NONBLOCK },
    { 0, "nb", 0, W_RUN, O_NONBLOCK },
    { 'w', "wait", 1, W_RUN, O_WAIT },
    { 0, "timeout", 1, W_RUN, O_WAIT },
    { 'E', "conflict-exit-code", 1, W_RUN, O_CONFLICT },
    { 'c', "command", 1, W_RUN, O_COMMAND },
    { 0, "fair", 0, W_RUN, O_FAIR },
    { 0, "lease", 1, W_RUN, O_LEASE },
    { 0, "kill-on-loss", 0, W_RUN, O_KILL },
    { 'N', "permits", 1, W_RUN, O_PERMITS },
    { 0, "url", 1, W_ANY, O_URL },
    { 'v', "verbose", 0, W_ANY, O_VERBOSE },
    { 'h', "help", 0, W_ANY, O_HELP },
    { 'V', "version", 0, W_ANY, O_VERSION },
    { 0, "json", 0, W(CLI_STATUS) | W(CLI_LIST), O_JSON },
    { 0, "all", 0, W(CLI_LIST), O_ALL },
    { 0, "force", 0, W(CLI_BREAK), O_FORCE },
    { 0, "kind", 1, W_INSPECT, O_KIND },
    { 0, "holder", 1, W(CLI_BREAK), O_HOLDER },
    { 'd', "delay", 1, W(CLI_TOP), O_DELAY },
    { 0, "interval", 1, W(CLI_TOP), O_DELAY },
    { 'n', "iterations", 1, W(CLI_TOP), O_ITER },
    { 'b', "batch", 0, W(CLI_TOP), O_BATCH },
    { 'o', "sort", 1, W(CLI_TOP), O_SORT },
    { 'r', "reverse", 0, W(CLI_TOP), O_REV },
    { 0, "limit", 1, W_VIEW, O_LIMIT },
    { 0, "names", 1, W(CLI_METRICS), O_NAMES },
    { 0, "output", 1, W(CLI_METRICS), O_OUTPUT },
};
#define NOPTS (sizeof optdefs / sizeof optdefs[0])

/* The subcommands, by the word that names them. */
static const struct {
    const char *word;
    int cmd;
} subs[] = {
    { "status", CLI_STATUS }, { "list", CLI_LIST }, { "break", CLI_BREAK },
    { "top", CLI_TOP }, { "metrics", CLI_METRICS },
};
#define NSUBS (sizeof subs / sizeof subs[0])

/* Same range as DISTLOCK_LEASE_MS, which --lease sets. */
#define LEASE_MIN 30UL
#define LEASE_MAX 86400000UL
#define WAIT_MAX 1e9              /* -w: about 31 years */
#define DELAY_MIN 0.1             /* top -d: below it, top would mostly read Redis */
#define DELAY_MAX 86400.0
#define COUNT_MAX 1000000000UL    /* top -n, --limit, --names */

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    cli_verr(fmt, ap);
    va_end(ap);
    return CLI_EX_USAGE;
}

static const char *cmd_word(int cmd)
{
    for (size_t i = 0; i < NSUBS; i++)
        if (subs[i].cmd == cmd)
            return subs[i].word;
    return "run";
}

/* ---------------------------------------------------------------- numbers */

/* Seconds (-w, top -d): a decimal number, digits with an optional
 * fraction and exponent ("5", "0.5", "1e3"), as flock(1) reads them but
 * without signs, hex, inf or nan, which strtod would also take.  0,
 * EINVAL (not such a number) or ERANGE (outside [min, max]). */
static int parse_seconds(const char *s, double min, double max, double *out)
{
    const char *p = s;
    int digits = 0;
    for (; *p >= '0' && *p <= '9'; p++)
        digits++;
    if (*p == '.')
        for (p++; *p >= '0' && *p <= '9'; p++)
            digits++;
    if (!digits)
        return EINVAL;
    if (*p == 'e' || *p == 'E') {
        p++;
        if (*p == '+' || *p == '-')
            p++;
        if (!(*p >= '0' && *p <= '9'))
            return EINVAL;
        while (*p >= '0' && *p <= '9')
            p++;
    }
    if (*p)
        return EINVAL;
    double v = strtod(s, NULL);           /* HUGE_VAL past DBL_MAX: out of range */
    if (!isfinite(v) || v < min || v > max)
        return ERANGE;
    *out = v;
    return 0;
}

/* A count of 1 to COUNT_MAX: 0, or the usage error. */
static int parse_count(const char *shown, const char *arg, const char *what, unsigned long *out)
{
    if (dl_parse_ulong(arg, 1, COUNT_MAX, out))
        return usage_error("%s: '%s' is not a number of %s (1 to %lu)", shown, arg, what, COUNT_MAX);
    return 0;
}

/* ---------------------------------------------------------------- options */

static int parse_kind(const char *shown, const char *arg, int *kind)
{
    if (strcmp(arg, "lock") == 0)
        *kind = DL_KIND_LOCK;
    else if (strcmp(arg, "sem") == 0 || strcmp(arg, "semaphore") == 0)
        *kind = DL_KIND_SEM;
    else if (strcmp(arg, "cond") == 0 || strcmp(arg, "condition") == 0)
        *kind = DL_KIND_COND;
    else
        return usage_error("%s: '%s' is not a kind (lock, sem or cond)", shown, arg);
    return 0;
}

/* Applies option d (with its argument, if any).  0 or CLI_EX_USAGE. */
static int apply(cli_opts_t *o, const optdef_t *d, const char *shown, const char *arg)
{
    cli_view_opts_t *v = &o->view;
    unsigned long n;
    int rc;
    switch (d->id) {
    case O_SHARED: o->mode = 'r'; break;
    case O_EXCLUSIVE: o->mode = 'w'; break;
    case O_NONBLOCK: o->nonblock = 1; break;
    case O_WAIT:
        if ((rc = parse_seconds(arg, 0, WAIT_MAX, &o->wait_s)) == ERANGE)
            return usage_error("%s: '%s' is out of range: at most %.0f seconds", shown, arg, WAIT_MAX);
        if (rc)
            return usage_error("%s: '%s' is not a number of seconds (like 5 or 0.5)", shown, arg);
        o->has_wait = 1;
        break;
    case O_CONFLICT:
        if (dl_parse_ulong(arg, 0, 255, &n))
            return usage_error("%s: '%s' is not an exit code (0 to 255)", shown, arg);
        o->conflict_code = (int)n;
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
    case O_KIND: return parse_kind(shown, arg, &o->kind);
    case O_HOLDER:
        if (!*arg)
            return usage_error("%s: the holder is empty (HOST:PID, as status shows it)", shown);
        o->holder = arg;
        break;
    case O_DELAY:
        if ((rc = parse_seconds(arg, DELAY_MIN, DELAY_MAX, &v->interval_s)) == ERANGE)
            return usage_error("%s: '%s' is out of range: 0.1 to 86400 seconds", shown, arg);
        if (rc)
            return usage_error("%s: '%s' is not an interval in seconds (like 2 or 0.5)", shown, arg);
        v->has_interval = 1;
        break;
    case O_ITER: return parse_count(shown, arg, "refreshes", &v->iterations);
    case O_BATCH: v->batch = 1; break;
    case O_SORT:
        if ((v->sort = cli_sort_of(arg)) < 0)
            return usage_error("%s: '%s' is not a sort key (waiters, age, wait or name)", shown, arg);
        break;
    case O_REV: v->reverse = 1; break;
    case O_LIMIT: return parse_count(shown, arg, "objects", &v->limit);
    case O_NAMES: return parse_count(shown, arg, "names", &v->names);
    case O_OUTPUT:
        if (!*arg)
            return usage_error("%s: the file name is empty", shown);
        v->output = arg;
        break;
    }
    return 0;
}

/* "'status' and 'list'": the commands of a `where`, for messages. */
static const char *where_words(unsigned where, char *buf, size_t size)
{
    size_t o = 0, k = 0, n = 0;
    for (size_t i = 0; i < NSUBS; i++)
        n += (where & W(subs[i].cmd)) != 0;
    buf[0] = 0;
    for (size_t i = 0; i < NSUBS && o < size; i++) {
        if (!(where & W(subs[i].cmd)))
            continue;
        k++;
        o += (size_t)snprintf(buf + o, size - o, "%s'%s'", k == 1 ? "" : k == n ? " and " : ", ",
                              subs[i].word);
    }
    return buf;
}

/* Option d, written `shown`, given to command cmd (CLI_RUN before the
 * first word too): 0 if it applies, else the usage error. */
static int check_where(const optdef_t *d, const char *shown, int cmd)
{
    char w[120];
    if (d->where & W(cmd))
        return 0;
    if (cmd == CLI_RUN)
        return usage_error("%s applies to %s only", shown, where_words(d->where, w, sizeof w));
    return usage_error("%s does not apply to '%s'", shown, cmd_word(cmd));
}

/* The option named `name` (n bytes: long) or `c` (short) for command cmd:
 * its entry for that command if it has one, else any (check_where then
 * says it does not apply), else NULL. */
static const optdef_t *find_option(const char *name, size_t n, char c, int cmd)
{
    const optdef_t *any = NULL;
    for (size_t k = 0; k < NOPTS; k++) {
        const optdef_t *d = &optdefs[k];
        int match = name ? d->long_name && strlen(d->long_name) == n && strncmp(d->long_name, name, n) == 0
                         : d->short_name == c;
        if (!match)
            continue;
        if (d->where & W(cmd))
            return d;
        any = d;
    }
    return any;
}

/* Parses the option at argv[*i] (which starts with '-') for command cmd
 * (CLI_RUN until a subcommand's word came); *run_opt is set when a
 * run-only option was seen.  Advances *i past the option and its
 * argument. */
static int parse_option(int argc, char **argv, int *i, cli_opts_t *o, int cmd, int *run_opt)
{
    const char *a = argv[*i];
    char shown[64];
    if (a[1] == '-') {                               /* --long[=value] */
        const char *name = a + 2, *eq = strchr(name, '=');
        size_t n = eq ? (size_t)(eq - name) : strlen(name);
        const optdef_t *d = find_option(name, n, 0, cmd);
        snprintf(shown, sizeof shown, "--%.*s", (int)(n < 40 ? n : 40), name);
        if (!d)
            return usage_error("unknown option '%s' (see distlock --help)", shown);
        int rc = check_where(d, shown, cmd);
        if (rc)
            return rc;
        const char *arg = NULL;
        if (d->takes_arg) {
            if (eq)
                arg = eq + 1;
            else if (*i + 1 < argc)
                arg = argv[++*i];
            else
                return usage_error("%s needs a value", shown);
        } else if (eq) {
            return usage_error("%s takes no value", shown);
        }
        if (d->where == W_RUN)
            *run_opt = 1;
        (*i)++;
        return apply(o, d, shown, arg);
    }
    for (const char *p = a + 1; *p; p++) {           /* -abc, -w5, -w 5 */
        const optdef_t *d = find_option(NULL, 0, *p, cmd);
        if ((unsigned char)*p < 0x20 || (unsigned char)*p >= 0x7f)
            snprintf(shown, sizeof shown, "-\\x%02x", (unsigned char)*p);
        else
            snprintf(shown, sizeof shown, "-%c", *p);
        if (!d)
            return usage_error("unknown option '%s' (see distlock --help)", shown);
        int rc = check_where(d, shown, cmd);
        if (rc)
            return rc;
        if (d->where == W_RUN)
            *run_opt = 1;
        if (d->takes_arg) {
            const char *arg;
            if (p[1])
                arg = p + 1;
            else if (*i + 1 < argc)
                arg = argv[++*i];
            else
                return usage_error("%s needs a value", shown);
            (*i)++;
            return apply(o, d, shown, arg);
        }
        if ((rc = apply(o, d, shown, NULL)))
            return rc;
    }
    (*i)++;
    return 0;
}

/* ---------------------------------------------------------------- words */

static int sub_of(const char *w)
{
    for (size_t i = 0; i < NSUBS; i++)
        if (strcmp(w, subs[i].word) == 0)
            return subs[i].cmd;
    return -1;
}

/* The edit distance of a and b, a letter's case aside, counting a swap of
 * two neighbours as one edit (optimal string alignment); 2 means 2 or
 * more. */
static int distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 16 || lb > 16 || (la > lb ? la - lb : lb - la) > 1)
        return 2;
    int d[17][17];
    for (size_t i = 0; i <= la; i++)
        for (size_t j = 0; j <= lb; j++) {
            if (!i || !j) {
                d[i][j] = (int)(i + j);
                continue;
            }
            int same = tolower((unsigned char)a[i - 1]) == tolower((unsigned char)b[j - 1]);
            int v = d[i - 1][j - 1] + !same;
            if (d[i - 1][j] + 1 < v)
                v = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < v)
                v = d[i][j - 1] + 1;
            if (i > 1 && j > 1 && tolower((unsigned char)a[i - 1]) == tolower((unsigned char)b[j - 2]) &&
                tolower((unsigned char)a[i - 2]) == tolower((unsigned char)b[j - 1]) &&
                d[i - 2][j - 2] + 1 < v)
                v = d[i - 2][j - 2] + 1;
            d[i][j] = v;
        }
    return d[la][lb] > 2 ? 2 : d[la][lb];
}

/* w and s differ only by two neighbouring letters swapped ("tpo"), a
 * letter's case aside. */
static int swapped(const char *w, const char *s)
{
    size_t n = strlen(s), i = 0;
    if (strlen(w) != n)
        return 0;
    while (i < n && tolower((unsigned char)w[i]) == tolower((unsigned char)s[i]))
        i++;
    if (i == n)
        return 1;                     /* the case alone */
    return i + 1 < n && tolower((unsigned char)w[i]) == s[i + 1] &&
           tolower((unsigned char)w[i + 1]) == s[i] && strcasecmp(w + i + 2, s + i + 2) == 0;
}

/* The subcommand w is a typo of ("stauts", "lsit", "brake", "Status"),
 * or NULL: one edit away, a letter's case aside.  A three-letter one is
 * too close to other words ("tip", "to" may well name a lock): only a
 * swap or the case. */
static const char *near_miss(const char *w)
{
    for (size_t i = 0; i < NSUBS; i++) {
        const char *s = subs[i].word;
        if (strcmp(w, s) == 0)
            return NULL;
        if (strlen(s) <= 3 ? swapped(w, s) : distance(w, s) <= 1)
            return s;
    }
    return NULL;
}

static int has_dashdash(int argc, char **argv, int from)
{
    for (int i = from; i < argc; i++)
        if (strcmp(argv[i], "--") == 0)
            return 1;
    return 0;
}

static int check_name(const char *name, size_t *len)
{
    size_t n = strlen(name);
    if (n == 0) {
        cli_err("the name is empty");
        return CLI_EX_USAGE;
    }
    if (n > DIST_NAME_MAX) {
        cli_err("the name is %zu bytes long; the limit is %d", n, DIST_NAME_MAX);
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

/* Checks that finish a subcommand. */
static int finish_sub(cli_opts_t *o)
{
    int cmd = o->cmd;
    if (cmd == CLI_STATUS || cmd == CLI_BREAK) {
        if (!o->name)
            return usage_error("%s: no name given (distlock %s NAME)", cmd_word(cmd), cmd_word(cmd));
        int rc = check_name(o->name, &o->namelen);
        if (rc)
            return rc;
    }
    if (cmd != CLI_BREAK)
        return 0;
    if (!o->force)
        return usage_error("break deletes holds under their holders; add --force to do it");
    if (o->kind == DL_KIND_COND)
        return usage_error("break: a condition holds nothing (its waiters leave on their own)");
    if (o->holder && o->kind >= 0 && o->kind != DL_KIND_SEM)
        return usage_error("--holder names a holder of a semaphore's permits (a lock's break "
                           "removes every hold)");
    if (o->holder)
        o->kind = DL_KIND_SEM;
    return 0;
}

/* The word argv[i] when no command was decided: a subcommand, a typo of
 * one, or the lock's name.  0 (o->cmd set when a subcommand), or the
 * usage error. */
static int first_word(int argc, char **argv, int i, cli_opts_t *o)
{
    const char *w = argv[i];
    int cmd = sub_of(w);
    if (cmd >= 0) {
        o->cmd = cmd;
        if (cmd == CLI_TOP || cmd == CLI_METRICS) {
            o->view.interval_s = 1.0;
            o->view.sort = CLI_SORT_WAITERS;
            o->view.limit = CLI_VIEW_LIMIT;
            o->view.names = CLI_VIEW_NAMES;
        }
        return 0;
    }
    const char *near = near_miss(w);
    if (near && !has_dashdash(argc, argv, i + 1))
        return usage_error("unknown command '%s'; did you mean '%s'? (a lock named so: "
                           "distlock %s -- COMMAND)", w, near, w);
    o->name = w;
    return 0;
}

int cli_parse(int argc, char **argv, cli_opts_t *o)
{
    memset(o, 0, sizeof *o);
    o->cmd = CLI_RUN;
    o->mode = 'w';
    o->conflict_code = 1;
    o->kind = -1;

    int decided = 0;        /* the first word was read: o->cmd is the command */
    int run_opt = 0;        /* a run-only option came before the first word */
    int words = 0;          /* a subcommand's words (its NAME or PATTERN) */
    int dashdash = 0;       /* top, metrics: `--` ended the options */
    int i = 1;
    while (i < argc) {
        const char *a = argv[i];
        int cmd = o->cmd;
        if (!dashdash && strcmp(a, "--") == 0) {
            if (cmd == CLI_TOP || cmd == CLI_METRICS) {
                dashdash = 1;
                i++;
                continue;
            }
            if (cmd != CLI_RUN)
                return usage_error("'%s' is a subcommand; to run a command under a lock named "
                                   "%s, put an option first: distlock -x %s -- COMMAND",
                                   cmd_word(cmd), cmd_word(cmd), cmd_word(cmd));
            if (!o->name)
                return usage_error("no lock name given before '--' (see distlock --help)");
            if (i + 1 < argc)
                o->argv_cmd = &argv[i + 1];
            break;
        }
        if (!dashdash && a[0] == '-' && a[1]) {
            int rc = parse_option(argc, argv, &i, o, cmd, &run_opt);
            if (rc)
                return rc;
            if (o->cmd == CLI_HELP || o->cmd == CLI_VERSION)
                return 0;
            continue;
        }
        /* A word. */
        if (!decided && !run_opt) {
            decided = 1;
            int rc = first_word(argc, argv, i, o);
            if (rc)
                return rc;
            i++;
            continue;
        }
        decided = 1;
        if (cmd != CLI_RUN) {
            if (words++)                   /* each takes one word at most */
                return usage_error("%s: unexpected argument '%s'%s", cmd_word(cmd), a,
                                   cmd == CLI_LIST || cmd == CLI_TOP || cmd == CLI_METRICS
                                       ? " (one PATTERN at most)" : "");
            if (cmd == CLI_STATUS || cmd == CLI_BREAK)
                o->name = a;
            else if (cmd == CLI_LIST)
                o->pattern = a;
            else
                o->view.pattern = a;
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
    return o->cmd == CLI_RUN ? finish_run(o) : finish_sub(o);
}
