/* SPDX-License-Identifier: BSD-3-Clause */
/* output.c - the RESULT lines (WORKLOADS.md):
 *   RESULT peer=<name> workload=<W> ops_per_s=<x> p50_us=<y> p99_us=<z> extra=<k=v,...>
 * printed as each result is known; with --json, one JSON document at the
 * end instead.  Then the TARGET lines: the targets of the issue, each a
 * ratio between figures of one run.  With --repeat N, each target is
 * checked in every repetition and its line gives the median repetition
 * (by how far it is from its limit) and how many repetitions met it: on a
 * shared VM one run's ratio moves with the host's load (PERFORMANCE.md). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

#define MAX_TARGETS 32

/* Each result on its own, so a pointer from result_new stays valid. */
static result_t **results;
static int nresults;
static target_t targets[MAX_TARGETS];   /* the running repetition's */
static int ntargets;

/* A target over the repetitions: each one's check, and its margin. */
typedef struct target_sum {
    target_t rep[BENCH_MAX_REPEAT];
    double margin[BENCH_MAX_REPEAT];
    int n;
} target_sum_t;
static target_sum_t *sums;
static int nsums;
static int nerrors;
static char errors[16][256];

result_t *result_new(const char *peer, const char *workload)
{
    static result_t spare;            /* out of memory: a result nobody sees */
    result_t **grown = realloc(results, (size_t)(nresults + 1) * sizeof *results);
    result_t *r = calloc(1, sizeof *r);
    if (grown)
        results = grown;
    if (!grown || !r) {
        free(r);
        memset(&spare, 0, sizeof spare);
        return &spare;
    }
    results[nresults++] = r;
    snprintf(r->peer, sizeof r->peer, "%s", peer);
    snprintf(r->workload, sizeof r->workload, "%s", workload);
    r->rep = g_rep;
    if (g_opt.repeat > 1)
        result_extra(r, "rep", "%d", g_rep);
    return r;
}

result_t *result_timed(const char *peer, const char *workload, double *lat, size_t n, uint64_t ns)
{
    sort_doubles(lat, n);
    result_t *r = result_new(peer, workload);
    r->ops_per_s = (double)n / ((double)ns / 1e9);
    r->p50_us = pct_sorted(lat, n, 0.5);
    r->p99_us = pct_sorted(lat, n, 0.99);
    return r;
}

void result_shares(result_t *r, long long lost, const unsigned long *snap, int n)
{
    double mn, mx;
    shares_of(snap, n, &mn, &mx);
    result_extra(r, "lost_updates", "%lld", lost);
    result_extra(r, "min_share", "%.3f", mn);
    result_extra(r, "max_share", "%.3f", mx);
    result_extra(r, "fairness", "%.3f", mx > 0 ? mn / mx : 0);
}

void result_extra(result_t *r, const char *key, const char *fmt, ...)
{
    size_t len = strlen(r->extra);
    if (len + strlen(key) + 3 >= sizeof r->extra)
        return;
    len += (size_t)snprintf(r->extra + len, sizeof r->extra - len, "%s%s=", len ? "," : "", key);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->extra + len, sizeof r->extra - len, fmt, ap);
    va_end(ap);
}

/* Numbers without exponents, with the digits that matter. */
static const char *num(double v, char *buf, size_t size)
{
    if (!isfinite(v))
        snprintf(buf, size, "0");
    else if (fabs(v) >= 1000)
        snprintf(buf, size, "%.0f", v);
    else if (fabs(v) >= 10)
        snprintf(buf, size, "%.1f", v);
    else if (fabs(v) >= 0.1 || v == 0)
        snprintf(buf, size, "%.2f", v);
    else
        snprintf(buf, size, "%.4f", v);
    return buf;
}

static void print_line(const result_t *r)
{
    char a[32], b[32], c[32];
    if (r->skipped)
        printf("RESULT peer=%s workload=%s ops_per_s=- p50_us=- p99_us=- extra=%s\n", r->peer,
               r->workload, r->extra);
    else
        printf("RESULT peer=%s workload=%s ops_per_s=%s p50_us=%s p99_us=%s extra=%s\n", r->peer,
               r->workload, num(r->ops_per_s, a, sizeof a), num(r->p50_us, b, sizeof b),
               num(r->p99_us, c, sizeof c), r->extra);
    fflush(stdout);
}

void result_emit(result_t *r)
{
    progress_clear();
    if (!g_opt.json)
        print_line(r);
}

result_t *result_find(const char *peer, const char *workload)
{
    for (int i = nresults - 1; i >= 0 && results[i]->rep == g_rep; i--)
        if (!strcmp(results[i]->peer, peer) && !strcmp(results[i]->workload, workload))
            return results[i];
    return NULL;
}

int results_count(void)
{
    return nresults;
}

result_t *result_at(int i)
{
    return i >= 0 && i < nresults ? results[i] : NULL;
}

int result_get(const result_t *r, const char *key, double *out)
{
    if (!r)
        return -1;
    size_t kl = strlen(key);
    for (const char *p = r->extra; *p;) {
        const char *end = strchr(p, ',');
        if (!end)
            end = p + strlen(p);
        if ((size_t)(end - p) > kl && !strncmp(p, key, kl) && p[kl] == '=') {
            char *e;
            double v = strtod(p + kl + 1, &e);
            if (e != p + kl + 1) {
                *out = v;
                return 0;
            }
            return -1;
        }
        p = *end ? end + 1 : end;
    }
    return -1;
}


void target_add(const char *workload, const char *check, double value, double limit, int met,
                const char *note)
{
    if (ntargets == MAX_TARGETS)
        return;
    target_t *t = &targets[ntargets++];
    snprintf(t->workload, sizeof t->workload, "%s", workload);
    snprintf(t->check, sizeof t->check, "%s", check);
    t->value = value;
    t->limit = limit;
    t->met = met;
    snprintf(t->note, sizeof t->note, "%s", note ? note : "");
}

/* How far a repetition is on the good side of its limit: value/limit for
 * ">=", limit/value for "<=" (1 = on the limit, more is better); 1 or 0
 * for an exact check. */
static double margin_of(const target_t *t)
{
    if (strstr(t->check, ">="))
        return t->limit > 0 ? t->value / t->limit : (t->value > 0 ? 1e9 : 0);
    if (strstr(t->check, "<="))
        return t->value > 0 ? t->limit / t->value : 1e9;
    return t->met > 0 ? 1 : 0;
}

void targets_end_rep(void)
{
    for (int i = 0; i < ntargets; i++) {
        const target_t *t = &targets[i];
        target_sum_t *s = NULL;
        for (int k = 0; k < nsums && !s; k++)
            if (!strcmp(sums[k].rep[0].workload, t->workload) &&
                !strcmp(sums[k].rep[0].check, t->check))
                s = &sums[k];
        if (!s) {
            target_sum_t *grown = realloc(sums, (size_t)(nsums + 1) * sizeof *sums);
            if (!grown)
                continue;
            sums = grown;
            s = &sums[nsums++];
            memset(s, 0, sizeof *s);
        }
        if (s->n == BENCH_MAX_REPEAT)
            continue;
        s->rep[s->n] = *t;
        s->margin[s->n++] = margin_of(t);
    }
    ntargets = 0;
}

/* The repetition in the middle by margin (of an even count, the lower of
 * the two: the summary never flatters), and how many met the target. */
static int median_rep(const target_sum_t *s, int *met_reps)
{
    int order[BENCH_MAX_REPEAT];
    for (int i = 0; i < s->n; i++)
        order[i] = i;
    for (int i = 1; i < s->n; i++)          /* insertion sort: n <= 100 */
        for (int j = i; j > 0 && s->margin[order[j]] < s->margin[order[j - 1]]; j--) {
            int x = order[j];
            order[j] = order[j - 1];
            order[j - 1] = x;
        }
    *met_reps = 0;
    for (int i = 0; i < s->n; i++)
        *met_reps += s->rep[i].met > 0;
    return s->n ? order[(s->n - 1) / 2] : 0;
}

void output_error(const char *workload, const char *fmt, ...)
{
    progress_clear();
    char msg[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "distlock-bench: %s: %s\n", workload, msg);
    if (nerrors < 16)
        snprintf(errors[nerrors], sizeof errors[nerrors], "%s: %s", workload, msg);
    nerrors++;
}

int output_errors(void) { return nerrors; }

static void json_str(const char *s)
{
    putchar('"');
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            printf("\\%c", ch);
        else if (ch < 0x20)
            printf("\\u%04x", ch);
        else
            putchar(ch);
    }
    putchar('"');
}

/* A value of an extra field: a JSON number when it is one. */
static void json_val(const char *s, size_t n)
{
    char buf[256];
    if (n >= sizeof buf)
        n = sizeof buf - 1;
    memcpy(buf, s, n);
    buf[n] = 0;
    char *e;
    strtod(buf, &e);
    if (n && *e == 0 && strspn(buf, "0123456789.-+eE") == n && strcmp(buf, "-")) {
        if (buf[0] == '.' || (buf[0] == '-' && buf[1] == '.'))
            printf("0");
        fputs(buf, stdout);
    } else {
        json_str(buf);
    }
}

static void json_num(double v)
{
    char b[32];
    fputs(num(v, b, sizeof b), stdout);
}

static void print_json(void)
{
    printf("{\n  \"tool\": \"distlock-bench\",\n  \"quick\": %s,\n  \"results\": [\n",
           g_opt.quick ? "true" : "false");
    for (int i = 0; i < nresults; i++) {
        const result_t *r = results[i];
        printf("    {\"peer\": ");
        json_str(r->peer);
        printf(", \"workload\": ");
        json_str(r->workload);
        if (r->skipped) {
            printf(", \"skipped\": true");
        } else {
            printf(", \"ops_per_s\": ");
            json_num(r->ops_per_s);
            printf(", \"p50_us\": ");
            json_num(r->p50_us);
            printf(", \"p99_us\": ");
            json_num(r->p99_us);
        }
        printf(", \"extra\": {");
        int first = 1;
        for (const char *p = r->extra; *p;) {
            const char *end = strchr(p, ',');
            if (!end)
                end = p + strlen(p);
            const char *eq = memchr(p, '=', (size_t)(end - p));
            if (eq) {
                char key[128];
                size_t kl = (size_t)(eq - p) < sizeof key - 1 ? (size_t)(eq - p) : sizeof key - 1;
                memcpy(key, p, kl);
                key[kl] = 0;
                printf("%s", first ? "" : ", ");
                json_str(key);
                printf(": ");
                json_val(eq + 1, (size_t)(end - eq - 1));
                first = 0;
            }
            p = *end ? end + 1 : end;
        }
        printf("}}%s\n", i + 1 < nresults ? "," : "");
    }
    printf("  ],\n  \"targets\": [\n");
    for (int i = 0; i < nsums; i++) {
        const target_sum_t *s = &sums[i];
        int met_reps;
        const target_t *t = &s->rep[median_rep(s, &met_reps)];
        printf("    {\"workload\": ");
        json_str(t->workload);
        printf(", \"check\": ");
        json_str(t->check);
        if (t->met >= 0) {
            printf(", \"value\": ");
            json_num(t->value);
            printf(", \"limit\": ");
            json_num(t->limit);
            printf(", \"met\": %s", t->met ? "true" : "false");
        } else {
            printf(", \"met\": null");
        }
        printf(", \"note\": ");
        json_str(t->note);
        if (g_opt.repeat > 1) {
            printf(", \"reps\": %d, \"met_reps\": %d, \"per_rep\": [", s->n, met_reps);
            for (int k = 0; k < s->n; k++) {
                const target_t *r = &s->rep[k];
                printf("%s{\"value\": ", k ? ", " : "");
                json_num(r->value);
                printf(", \"limit\": ");
                json_num(r->limit);
                printf(", \"met\": %s}", r->met < 0 ? "null" : r->met ? "true" : "false");
            }
            printf("]");
        }
        printf("}%s\n", i + 1 < nsums ? "," : "");
    }
    printf("  ],\n  \"errors\": [");
    for (int i = 0; i < nerrors && i < 16; i++) {
        printf("%s", i ? ", " : "");
        json_str(errors[i]);
    }
    printf("]\n}\n");
}

void output_finish(void)
{
    progress_clear();
    if (g_opt.json) {
        print_json();
        fflush(stdout);
        return;
    }
    for (int i = 0; i < nsums; i++) {
        const target_sum_t *s = &sums[i];
        int met_reps;
        const target_t *t = &s->rep[median_rep(s, &met_reps)];
        char a[32], b[32], reps[64] = "", margins[BENCH_MAX_REPEAT * 12 + 16] = "";
        if (g_opt.repeat > 1 && t->met >= 0) {
            snprintf(reps, sizeof reps, " reps=%d met_reps=%d", s->n, met_reps);
            size_t len = (size_t)snprintf(margins, sizeof margins, " margins=");
            for (int k = 0; k < s->n && len < sizeof margins; k++)
                len += (size_t)snprintf(margins + len, sizeof margins - len, "%s%.2f", k ? "," : "",
                                        s->margin[k] > 999 ? 999 : s->margin[k]);
        } else if (g_opt.repeat > 1) {
            snprintf(reps, sizeof reps, " reps=%d", s->n);
        }
        if (t->met < 0)
            printf("TARGET workload=%s check=\"%s\" met=n/a%s note=\"%s\"\n", t->workload,
                   t->check, reps, t->note);
        else
            printf("TARGET workload=%s check=\"%s\" value=%s limit=%s met=%s%s%s%s%s%s\n",
                   t->workload, t->check, num(t->value, a, sizeof a), num(t->limit, b, sizeof b),
                   t->met ? "yes" : "no", reps, margins, t->note[0] ? " note=\"" : "", t->note,
                   t->note[0] ? "\"" : "");
    }
    fflush(stdout);
}
