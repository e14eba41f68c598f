/* SPDX-License-Identifier: BSD-3-Clause */
/* w_many.h - W9L (many locks in one process) and W9W (a process that only
 * waits), and what a process costs, read from /proc (w_many.c). */
#ifndef BENCH_W_MANY_H
#define BENCH_W_MANY_H

#include <sys/types.h>

/* A process's CPU (all its threads, user + system) and its threads'
 * context switches: a voluntary one is a thread that slept, and was then
 * woken. */
typedef struct pcost {
    double cpu_s;
    unsigned long voluntary, involuntary, threads;
} pcost_t;
/* 0, or -1 when /proc cannot say. */
int proc_cost(pid_t pid, pcost_t *c);
/* VmRSS of a process (kB), -1 when unknown. */
long proc_rss_kb(pid_t pid);

int run_w9l(void);
int run_w9w(void);

#endif
