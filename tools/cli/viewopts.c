/* SPDX-License-Identifier: BSD-3-Clause */
/* viewopts.c - the command line of top and metrics (viewopts.h):
 *
 *   distlock top [PATTERN] [-d SECONDS] [-n COUNT] [-b] [-o KEY] [-r] [--limit N]
 *   distlock metrics [PATTERN] [--names N] [--limit N] [--output FILE]
 *
 * plus --url and -v anywhere, as for the other subcommands.  The option
 * letters of top follow top(1): -d delay, -n iterations, -b batch, -o sort
 * field.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "output.h"
#include "snapshot.h"
#include "viewopts.h"

enum { FOR_TOP = 1, FOR_METRICS = 2, FOR_BOTH = 3 };
enum { V_DELAY, V_ITER, V_BATCH, V_SORT, V_REV, V_LIMIT, V_NAMES, V_OUTPUT, V_URL, V_VERBOSE, V_HELP };

typedef struct vdef {
    char short_name;
    const char *long_name;
    int takes_arg;
    int where;
    int id;
} vdef_t;

static const vdef_t vdefs[] = {
    { 'd', "delay", 1, FOR_TOP, V_DELAY },
    { 0, "interval", 1, FOR_TOP, V_DELAY },
    { 'n', "iterations", 1, FOR_TOP, V_ITER },
    { 'b', "batch", 0, FOR_TOP, V_BATCH },
    { 'o', "sort", 1, FOR_TOP, V_SORT },
    { 'r', "reverse", 0, FOR_TOP, V_REV },
    { 0, "limit", 1, FOR_BOTH, V_LIMIT },
    { 0, "names", 1, FOR_METRICS, V_NAMES },
    { 0, "output", 1, FOR_METRICS, V_OUTPUT },
    { 0, "url", 1, FOR_BOTH, V_URL },
    { 'v', "verbose", 0, FOR_BOTH, V_VERBOSE },
    { 'h', "help", 0, FOR_BOTH, V_HELP },
};
#define NVDEFS (sizeof vdefs / sizeof vdefs[0])

#define DELAY_MIN 0.1             /* below it, top would mostly read Redis */
#define DELAY_MAX 86400.0
#define COUNT_MAX 1000000000UL

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    cli_verr(fmt, ap);
    va_end(ap);
    return CLI_EX_USAGE;
}

int cli_view_word(const char *w)
{
    return strcmp(w, "top") == 0 ? CLI_TOP : strcmp(w, "metrics") == 0 ? CLI_METRICS : -1;
}

/* Seconds: digits with an optional fraction (as -w takes them), in range. */
static int parse_delay(const char *s, double *out)
{
    const char *p = s;
    int digits = 0;
    while (*p >= '0' && *p <= '9')
        p++, digits++;
    if (*p == '.')
        for (p++; *p >= '0' && *p <= '9'; p++)
            digits++;
    if (!digits || *p || p - s > 20)
        return EINVAL;
    double v = strtod(s, NULL);
    if (v < DELAY_MIN || v > DELAY_MAX)
        return EINVAL;
    *out = v;
    return 0;
}

static int parse_count(const char *s, unsigned long *out)
{
    unsigned long v = 0;
    if (!*s)
        return EINVAL;
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9' || v > (COUNT_MAX - (unsigned long)(*p - '0')) / 10)
            return EINVAL;
        v = v * 10 + (unsigned long)(*p - '0');
    }
    if (v == 0)
        return EINVAL;
    *out = v;
    return 0;
}

static int apply(cli_opts_t *o, const vdef_t *d, const char *shown, const char *arg)
{
    cli_view_opts_t *v = &o->view;
    switch (d->id) {
    case V_DELAY:
        if (parse_delay(arg, &v->interval_s))
            return usage_error("%s: '%s' is not an interval (0.1 to 86400 seconds, like 2 or 0.5)",
                               shown, arg);
        v->has_interval = 1;
        break;
    case V_ITER:
        if (parse_count(arg, &v->iterations))
            return usage_error("%s: '%s' is not a number of refreshes (1 or more)", shown, arg);
        break;
    case V_BATCH: v->batch = 1; break;
    case V_SORT:
        if ((v->sort = cli_sort_of(arg)) < 0)
            return usage_error("%s: '%s' is not a sort key (waiters, age, wait or name)", shown, arg);
        break;
    case V_REV: v->reverse = 1; break;
    case V_LIMIT:
        if (parse_count(arg, &v->limit))
            return usage_error("%s: '%s' is not a number of objects (1 or more)", shown, arg);
        break;
    case V_NAMES:
        if (parse_count(arg, &v->names))
            return usage_error("%s: '%s' is not a number of names (1 or more)", shown, arg);
        break;
    case V_OUTPUT:
        if (!*arg)
            return usage_error("%s: the file name is empty", shown);
        v->output = arg;
        break;
    case V_URL: o->url = arg; break;
    case V_VERBOSE: o->verbose = 1; break;
    case V_HELP: o->cmd = CLI_HELP; break;
    }
    return 0;
}

/* The option at argv[*i] (it starts with '-'); advances *i past it and its
 * argument. */
static int parse_option(int argc, char **argv, int *i, cli_opts_t *o, int where, const char *word)
{
    const char *a = argv[*i];
    char shown[64];
    if (a[1] == '-') {                               /* --long[=value] */
        const char *name = a + 2, *eq = strchr(name, '=');
        size_t n = eq ? (size_t)(eq - name) : strlen(name);
        const vdef_t *d = NULL;
        for (size_t k = 0; k < NVDEFS; k++)
            if (vdefs[k].long_name && strlen(vdefs[k].long_name) == n &&
                strncmp(vdefs[k].long_name, name, n) == 0)
                d = &vdefs[k];
        snprintf(shown, sizeof shown, "--%.*s", (int)(n < 40 ? n : 40), name);
        if (!d)
            return usage_error("%s: unknown option '%s' (see distlock --help)", word, shown);
        if (!(d->where & where))
            return usage_error("%s does not apply to '%s'", shown, word);
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
        (*i)++;
        return apply(o, d, shown, arg);
    }
    for (const char *p = a + 1; *p; p++) {           /* -br, -d2, -d 2 */
        const vdef_t *d = NULL;
        for (size_t k = 0; k < NVDEFS; k++)
            if (vdefs[k].short_name == *p)
                d = &vdefs[k];
        if ((unsigned char)*p < 0x20 || (unsigned char)*p >= 0x7f)
            snprintf(shown, sizeof shown, "-\\x%02x", (unsigned char)*p);
        else
            snprintf(shown, sizeof shown, "-%c", *p);
        if (!d)
            return usage_error("%s: unknown option '%s' (see distlock --help)", word, shown);
        if (!(d->where & where))
            return usage_error("%s does not apply to '%s'", shown, word);
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
        int rc = apply(o, d, shown, NULL);
        if (rc)
            return rc;
    }
    (*i)++;
    return 0;
}

int cli_view_parse(int argc, char **argv, int i, cli_opts_t *o)
{
    const char *word = argv[i];
    int cmd = cli_view_word(word);
    int where = cmd == CLI_TOP ? FOR_TOP : FOR_METRICS;
    cli_view_opts_t *v = &o->view;
    v->interval_s = 1.0;
    v->sort = CLI_SORT_WAITERS;
    v->limit = CLI_VIEW_LIMIT;
    v->names = CLI_VIEW_NAMES;
    o->cmd = cmd;
    int words = 0, dashdash = 0;
    for (i++; i < argc;) {
        const char *a = argv[i];
        if (!dashdash && strcmp(a, "--") == 0) {
            dashdash = 1;
            i++;
            continue;
        }
        if (!dashdash && a[0] == '-' && a[1]) {
            int rc = parse_option(argc, argv, &i, o, where, word);
            if (rc)
                return rc;
            if (o->cmd == CLI_HELP)
                return 0;
            continue;
        }
        if (words++)
            return usage_error("%s: unexpected argument '%s' (one PATTERN at most)", word, a);
        v->pattern = a;
        i++;
    }
    o->cmd = cmd;
    return 0;
}
