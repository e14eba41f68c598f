/* SPDX-License-Identifier: BSD-3-Clause */
/* w_basic.h - W1, W2 and its serial ceiling, W3, W3b (w_basic.c). */
#ifndef BENCH_W_BASIC_H
#define BENCH_W_BASIC_H

#include <stddef.h>

int run_w1(int peer);
/* W1 with the link's reply spin off (cmdlink_io.h: dl_link_spin_us). */
int run_w1_nospin(void);
/* W2's serial ceiling: peer=floor workload=W2serial. */
int run_w2_serial(void);
int run_w2(int peer);
int run_w3(int peer);
/* W3 with the holder relocking at once, then holding 2 ms. */
int run_w3b(int peer);

/* W3 samples kept for the chart (microseconds, sorted). */
typedef struct w3_samples {
    double *v;
    size_t n;
} w3_samples_t;
extern w3_samples_t g_w3[2];

#endif
