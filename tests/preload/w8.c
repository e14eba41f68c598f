/* SPDX-License-Identifier: BSD-3-Clause */
/* w8.c - W8 of bench/WORKLOADS.md, one side: 10^7 pthread_mutex_lock/unlock
 * pairs on an unmapped mutex.  Run once plain and once with the interposer
 * preloaded (test_w8.sh); prints `ns_per_pair=X p50_ns=Y p99_ns=Z` over
 * batches of 10^5 pairs.
 *
 *   w8 [PAIRS]       default 10000000
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define BATCH 100000L

static pthread_mutex_t unmapped = PTHREAD_MUTEX_INITIALIZER;
pthread_mutex_t g_mapped = PTHREAD_MUTEX_INITIALIZER;   /* what the map names */

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    long pairs = argc > 1 ? atol(argv[1]) : 10000000L;
    long nb = pairs / BATCH;
    if (nb < 1)
        nb = 1;
    double *per = calloc((size_t)nb, sizeof *per);
    /* warm-up */
    for (long i = 0; i < BATCH; i++) {
        pthread_mutex_lock(&unmapped);
        pthread_mutex_unlock(&unmapped);
    }
    double t0 = now_ns();
    for (long b = 0; b < nb; b++) {
        double s = now_ns();
        for (long i = 0; i < BATCH; i++) {
            pthread_mutex_lock(&unmapped);
            pthread_mutex_unlock(&unmapped);
        }
        per[b] = (now_ns() - s) / (double)BATCH;
    }
    double total = now_ns() - t0;
    qsort(per, (size_t)nb, sizeof *per, cmp);
    printf("ns_per_pair=%.2f p50_ns=%.2f p99_ns=%.2f\n", total / (double)(nb * BATCH),
           per[nb / 2], per[(nb * 99) / 100 < nb ? (nb * 99) / 100 : nb - 1]);
    free(per);
    return 0;
}
