/* SPDX-License-Identifier: BSD-3-Clause */
/* metrics.c - `distlock metrics` (metrics.h).
 *
 * The Prometheus text format (version 0.0.4): a family's samples are
 * together, after its HELP and TYPE lines; every value is a gauge, since
 * each run reads the state afresh.  Per-name series exist for the objects
 * that are held, waited on or (redlock) disputed, and for `--names` of
 * them at most, the busiest: the rest are summed under name="" (no object
 * has an empty name), so that sums over names stay exact and a key space
 * of 100,000 busy names does not give 100,000 series.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <unistd.h>

#include "metrics.h"
#include "output.h"
#include "redis.h"

/* A name as a label value.  The value is the name with a backslash
 * doubled and each byte that is not printable UTF-8 as \xNN (as distlock
 * status shows names, so the value says which bytes the name holds, one
 * way only); the text format then escapes the value's '\' and '"'. */
static void put_label(FILE *f, const char *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        unsigned char c = (unsigned char)s[i];
        size_t len = c < 0x80 ? 1 : c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3
                   : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
        int ok = len && i + len <= n && c >= 0x20 && c != 0x7f;
        for (size_t k = 1; ok && k < len; k++)
            ok = ((unsigned char)s[i + k] & 0xc0) == 0x80;
        /* No overlong 3-byte forms, no UTF-16 surrogates, nothing past
         * U+10FFFF: what a strict decoder refuses. */
        if (ok && len == 3) {
            unsigned char d = (unsigned char)s[i + 1];
            ok = !(c == 0xe0 && d < 0xa0) && !(c == 0xed && d >= 0xa0);
        }
        if (ok && len == 4) {
            unsigned char d = (unsigned char)s[i + 1];
            ok = !(c == 0xf0 && d < 0x90) && !(c == 0xf4 && d >= 0x90);
        }
        if (!ok) {
            fprintf(f, "\\\\x%02x", c);          /* the value's "\xNN" */
            i++;
        } else if (c == '\\') {
            fputs("\\\\\\\\", f);                /* the value's "\\" */
            i++;
        } else if (c == '"') {
            fputs("\\\"", f);
            i++;
        } else {
            fwrite(s + i, 1, len, f);
            i += len;
        }
    }
}

/* One sample's values, for an object or for the rest summed. */
typedef struct row {
    int kind;
    const char *name;         /* NULL: the rest, name="" */
    size_t namelen;
    size_t holders, waiters;
    long long hold_age_ms, longest_wait_ms, lease_left_ms;   /* -1: none */
    long long agree;          /* redlock: servers agreeing; -1 not redlock */
    long long incarn_age_ms;  /* a semaphore's incarnation's age; -1 none */
} row_t;

static void row_of(const cli_obj_t *o, row_t *r)
{
    memset(r, 0, sizeof *r);
    r->kind = o->kind;
    r->name = o->st.name;
    r->namelen = o->st.namelen;
    r->holders = o->st.nholders;
    r->waiters = o->st.nwaiters;
    r->hold_age_ms = o->hold_age_ms;
    r->longest_wait_ms = o->longest_wait_ms;
    r->lease_left_ms = -1;
    for (size_t i = 0; i < o->st.nholders; i++) {
        long long l = o->st.holders[i].lease_left_ms < 0 ? 0 : o->st.holders[i].lease_left_ms;
        if (r->lease_left_ms < 0 || l < r->lease_left_ms)
            r->lease_left_ms = l;
    }
    r->agree = o->st.nservers ? (long long)o->st.agree : -1;
    r->incarn_age_ms = o->incarn ? o->incarn_age_ms : -1;
}

/* Adds o into the sum r (name=""). */
static void row_add(row_t *r, const cli_obj_t *o)
{
    row_t x;
    row_of(o, &x);
    r->holders += x.holders;
    r->waiters += x.waiters;
    if (x.hold_age_ms > r->hold_age_ms)
        r->hold_age_ms = x.hold_age_ms;
    if (x.longest_wait_ms > r->longest_wait_ms)
        r->longest_wait_ms = x.longest_wait_ms;
    if (x.lease_left_ms >= 0 && (r->lease_left_ms < 0 || x.lease_left_ms < r->lease_left_ms))
        r->lease_left_ms = x.lease_left_ms;
}

static void labels(FILE *f, const row_t *r)
{
    fprintf(f, "{kind=\"%s\",name=\"", cli_kind_view(r->kind)->label);
    if (r->name)
        put_label(f, r->name, r->namelen);
    fputs("\"}", f);
}

static void family(FILE *f, const char *name, const char *help)
{
    fprintf(f, "# HELP %s %s\n# TYPE %s gauge\n", name, help, name);
}

static double secs(long long ms)
{
    return ms < 0 ? 0.0 : (double)ms / 1000.0;
}

enum { F_HOLDERS, F_WAITERS, F_WAIT, F_AGE, F_LEASE, F_AGREE, F_INCARN, F_COUNT };

static const struct {
    const char *name, *help;
} fams[F_COUNT] = {
    [F_HOLDERS] = { "distlock_holders",
                    "Holds of the object now (a shared lock: one per reader process)." },
    [F_WAITERS] = { "distlock_waiters", "Waiters queued for the object." },
    [F_WAIT] = { "distlock_longest_wait_seconds",
                 "How long the longest waiter of the object has waited (0: none waits)." },
    [F_AGE] = { "distlock_hold_age_seconds",
                "How long the oldest hold of the object has been held (0: not held)." },
    [F_LEASE] = { "distlock_lease_left_seconds",
                  "The least lease left among the object's holds (only while held)." },
    [F_AGREE] = { "distlock_servers_agreeing",
                  "redlock: the servers that show the holders a majority shows." },
    [F_INCARN] = { "distlock_incarnation_age_seconds",
                   "A semaphore: how long ago Redis made the one it has (its first use, or "
                   "after a restart, flush or eviction lost the one before)." },
};

/* One family's sample for row r, if it has one. */
static void sample(FILE *f, int fam, const row_t *r)
{
    double v;
    switch (fam) {
    case F_HOLDERS: v = (double)r->holders; break;
    case F_WAITERS: v = (double)r->waiters; break;
    case F_WAIT: v = secs(r->longest_wait_ms); break;
    case F_AGE: v = secs(r->hold_age_ms); break;
    case F_LEASE:
        if (r->lease_left_ms < 0)
            return;
        v = secs(r->lease_left_ms);
        break;
    case F_INCARN:
        if (r->incarn_age_ms < 0 || !r->name)
            return;
        v = secs(r->incarn_age_ms);
        break;
    default:
        if (r->agree < 0 || !r->name)
            return;
        v = (double)r->agree;
        break;
    }
    fputs(fams[fam].name, f);
    labels(f, r);
    if (fam == F_HOLDERS || fam == F_WAITERS || fam == F_AGREE)
        fprintf(f, " %.0f\n", v);
    else
        fprintf(f, " %.3f\n", v);
}

static int cmp_by_name(const void *pa, const void *pb)
{
    const cli_obj_t *a = pa, *b = pb;
    if (a->kind != b->kind)
        return a->kind < b->kind ? -1 : 1;
    size_t n = a->st.namelen < b->st.namelen ? a->st.namelen : b->st.namelen;
    int c = memcmp(a->st.name, b->st.name, n);
    return c ? c : a->st.namelen < b->st.namelen ? -1 : a->st.namelen > b->st.namelen;
}

void cli_metrics_write(FILE *f, cli_snapshot_t *s, size_t names)
{
    family(f, "distlock_up",
           "1 if the objects were read from Redis (redlock: from a majority of the servers).");
    fprintf(f, "distlock_up %d\n", s ? 1 : 0);
    if (!s)
        return;
    family(f, "distlock_read_seconds", "How long reading the objects took.");
    fprintf(f, "distlock_read_seconds %.3f\n", secs(s->took_ms));
    family(f, "distlock_truncated",
           "1 if there were more objects under the prefix than --limit: some were not read.");
    fprintf(f, "distlock_truncated %d\n", s->truncated);

    /* The busiest first: they get series of their own, the rest are summed. */
    cli_snapshot_sort(s, CLI_SORT_WAITERS, 0);
    size_t shown = s->n < names ? s->n : names;
    if (shown > 1)      /* with no object, s->obj is NULL: qsort must not see it */
        qsort(s->obj, shown, sizeof *s->obj, cmp_by_name);
    row_t rest[DL_KINDS];
    size_t nrest[DL_KINDS] = { 0 };
    for (int k = 0; k < DL_KINDS; k++)
        rest[k] = (row_t){ k, NULL, 0, 0, 0, -1, -1, -1, -1, -1 };
    for (size_t i = shown; i < s->n; i++) {
        row_add(&rest[s->obj[i].kind], &s->obj[i]);
        nrest[s->obj[i].kind]++;
    }

    static const char *const kind_fams[][2] = {
        { "distlock_objects",
          "Objects read, by kind: busy, or with keys left from a recent use." },
        { "distlock_held_objects", "Objects with at least one hold, by kind." },
        { "distlock_other_names",
          "Busy objects beyond --names, whose values are summed under name=\"\"." },
    };
    for (size_t fm = 0; fm < 3; fm++) {
        family(f, kind_fams[fm][0], kind_fams[fm][1]);
        for (int k = 0; k < DL_KINDS; k++) {
            if (!cli_kind_view(k))
                continue;
            size_t v = fm == 0 ? s->read[k] : fm == 1 ? s->held[k] : nrest[k];
            fprintf(f, "%s{kind=\"%s\"} %zu\n", kind_fams[fm][0], cli_kind_view(k)->label, v);
        }
    }

    for (int fam = 0; fam < F_COUNT; fam++) {
        /* A family no object has a sample of is left out whole. */
        int any = 0;
        for (size_t i = 0; i < s->n && !any; i++)
            any = fam == F_AGREE ? s->obj[i].st.nservers > 0
                : fam == F_LEASE ? s->obj[i].st.nholders > 0
                : fam == F_INCARN ? i < shown && s->obj[i].incarn && s->obj[i].incarn_age_ms >= 0
                : 1;
        if (!any)
            continue;
        family(f, fams[fam].name, fams[fam].help);
        for (size_t i = 0; i < shown; i++) {
            row_t r;
            row_of(&s->obj[i], &r);
            sample(f, fam, &r);
        }
        for (int k = 0; k < DL_KINDS; k++)
            if (nrest[k])
                sample(f, fam, &rest[k]);
    }
}

/* ---------------------------------------------------------------- the command */

/* Writes the text to path atomically: a reader (node_exporter's textfile
 * collector) sees the old file or the new one, never half of one. */
static int write_file(const char *path, const char *text, size_t len)
{
    size_t n = strlen(path);
    char *tmp = malloc(n + 32);
    if (!tmp) {
        cli_err("out of memory");
        return CLI_EX_OSERR;
    }
    snprintf(tmp, n + 32, "%s.tmp.%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f) {
        cli_err("--output: cannot create %s: %s", tmp, strerror(errno));
        free(tmp);
        return EX_CANTCREAT;
    }
    int ok = fwrite(text, 1, len, f) == len;
    ok &= fflush(f) == 0;
    ok &= fsync(fileno(f)) == 0;
    int err = errno;
    ok &= fclose(f) == 0;
    if (!ok || rename(tmp, path) != 0) {
        if (ok)
            err = errno;
        cli_err("--output: cannot write %s: %s", path, strerror(err));
        unlink(tmp);
        free(tmp);
        return EX_CANTCREAT;
    }
    free(tmp);
    return 0;
}

int cli_metrics(const cli_opts_t *o)
{
    cli_redis_t r;
    cli_snapshot_t s;
    int rc = cli_redis_open(&r, 0), up = 0;
    char err[sizeof r.err] = "";
    if (rc) {
        snprintf(err, sizeof err, "%s", r.err);
    } else if (cli_snapshot_take(&r, o->view.pattern, o->view.limit, &s)) {
        snprintf(err, sizeof err, "%s", r.err);
        rc = cli_redis_exit_code(&r);
    } else {
        up = 1;
    }
    cli_redis_close(&r);

    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f) {
        cli_err("out of memory");
        if (up)
            cli_snapshot_free(&s);
        return CLI_EX_OSERR;
    }
    cli_metrics_write(f, up ? &s : NULL, o->view.names);
    fclose(f);
    if (up && s.truncated)
        cli_warn("more than %lu objects under the prefix: read %lu of them (see --limit); "
                 "distlock_truncated is 1", o->view.limit, o->view.limit);
    if (up)
        cli_snapshot_free(&s);
    if (!text) {
        cli_err("out of memory");
        return CLI_EX_OSERR;
    }
    if (err[0])
        cli_err("%s", err);

    int wrc;
    if (o->view.output) {
        wrc = write_file(o->view.output, text, len);
    } else {
        wrc = fwrite(text, 1, len, stdout) == len && fflush(stdout) == 0 ? 0 : CLI_EX_OSERR;
        if (wrc)
            cli_err("cannot write the output");
    }
    free(text);
    return rc ? rc : wrc;
}
