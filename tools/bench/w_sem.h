/* SPDX-License-Identifier: BSD-3-Clause */
/* w_sem.h - S1 and S1l: a semaphore's permits contended (w_sem.c). */
#ifndef BENCH_W_SEM_H
#define BENCH_W_SEM_H

/* leased: DIST_SEM_LEASED (S1l) or counting (S1). */
int run_s1(int leased);

#endif
