/* SPDX-License-Identifier: BSD-3-Clause */
/* stats.h - clock, samples, percentiles, shares (stats.c). */
#ifndef BENCH_STATS_H
#define BENCH_STATS_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

static inline uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
void sleep_us(unsigned long us);
/* Sorts v[0..n) and returns the nearest-rank q-quantile (q in (0,1]). */
double pct_sorted(const double *v, size_t n, double q);
void sort_doubles(double *v, size_t n);
double mean_of(const double *v, size_t n);
/* The spans to[i] - from[i] (ns) of n samples, in us, sorted (0 where to
 * is not after from): malloc'ed, NULL when out of memory. */
double *spans_us(const uint64_t *from, const uint64_t *to, size_t n);
double max_of(const double *v, size_t n);
/* The smallest and largest of snap[0..n) relative to their mean (0 when
 * the mean is 0): each worker's share of the work done. */
void shares_of(const unsigned long *snap, int n, double *mn, double *mx);

#endif
