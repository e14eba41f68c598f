/* SPDX-License-Identifier: BSD-3-Clause */
/* stats.c - samples and percentiles.  Latencies are CLOCK_MONOTONIC
 * (now_ns() in bench.h), kept as microseconds in doubles. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <time.h>

#include "bench.h"

void sleep_us(unsigned long us)
{
    struct timespec ts = { (time_t)(us / 1000000), (long)(us % 1000000) * 1000 };
    while (nanosleep(&ts, &ts) && errno == EINTR) {
    }
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

void sort_doubles(double *v, size_t n)
{
    qsort(v, n, sizeof *v, cmp_d);
}

double *spans_us(const uint64_t *from, const uint64_t *to, size_t n)
{
    double *v = malloc(n * sizeof *v);
    if (!v)
        return NULL;
    for (size_t i = 0; i < n; i++)
        v[i] = to[i] > from[i] ? (double)(to[i] - from[i]) / 1e3 : 0;
    sort_doubles(v, n);
    return v;
}

/* Nearest rank: the smallest sample with at least q of the samples at or
 * below it. */
double pct_sorted(const double *v, size_t n, double q)
{
    if (!n)
        return 0;
    size_t rank = (size_t)ceil(q * (double)n);
    if (rank < 1)
        rank = 1;
    if (rank > n)
        rank = n;
    return v[rank - 1];
}

double mean_of(const double *v, size_t n)
{
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += v[i];
    return n ? s / (double)n : 0;
}

double max_of(const double *v, size_t n)
{
    double m = 0;
    for (size_t i = 0; i < n; i++)
        if (v[i] > m)
            m = v[i];
    return m;
}

void shares_of(const unsigned long *snap, int n, double *mn, double *mx)
{
    double sum = 0;
    for (int i = 0; i < n; i++)
        sum += (double)snap[i];
    double mean = sum / n;
    *mn = 1e9;
    *mx = 0;
    for (int i = 0; i < n; i++) {
        double s = mean > 0 ? (double)snap[i] / mean : 0;
        if (s < *mn)
            *mn = s;
        if (s > *mx)
            *mx = s;
    }
}
