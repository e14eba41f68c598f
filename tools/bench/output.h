/* SPDX-License-Identifier: BSD-3-Clause */
/* output.h - RESULT and TARGET lines, --json (output.c). */
#ifndef BENCH_OUTPUT_H
#define BENCH_OUTPUT_H

#include <stddef.h>
#include <stdint.h>

#define RES_EXTRA_MAX 1536
typedef struct result {
    char peer[16], workload[16];
    double ops_per_s, p50_us, p99_us;
    int skipped;
    int rep;                  /* the repetition it belongs to */
    char extra[RES_EXTRA_MAX];
} result_t;

result_t *result_new(const char *peer, const char *workload);
void result_extra(result_t *r, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* A result of n operations that took ns nanoseconds, lat[0..n) their
 * latencies (us, sorted here): its ops_per_s, p50_us and p99_us set. */
result_t *result_timed(const char *peer, const char *workload, double *lat, size_t n, uint64_t ns);
/* The extra fields of a counter workload: lost_updates, and each worker's
 * share of the work while all still had some (snap[0..n), shares_of):
 * min_share, max_share, fairness. */
void result_shares(result_t *r, long long lost, const unsigned long *snap, int n);
/* Prints the RESULT line now (unless --json, which prints at the end). */
void result_emit(result_t *r);
/* The result of the running repetition, or NULL. */
result_t *result_find(const char *peer, const char *workload);
/* A numeric extra field; 0 when found. */
int result_get(const result_t *r, const char *key, double *out);
int results_count(void);
result_t *result_at(int i);

typedef struct target {
    char workload[16];
    char check[160];
    double value, limit;
    int met;                  /* 1, 0, or -1: not measured */
    char note[160];
} target_t;
void target_add(const char *workload, const char *check, double value, double limit, int met,
                const char *note);
/* After each repetition's target_add calls: files them under their check,
 * for the summary that output_finish prints when --repeat is above 1. */
void targets_end_rep(void);
/* Prints the TARGET lines (or the JSON document). */
void output_finish(void);
void output_error(const char *workload, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int output_errors(void);

#endif
