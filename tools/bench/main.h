/* SPDX-License-Identifier: BSD-3-Clause */
/* main.h - the options of the run and its globals (main.c). */
#ifndef BENCH_MAIN_H
#define BENCH_MAIN_H

#define BENCH_MAX_REPEAT 100
typedef struct bench_opts {
    int quick;                /* smoke-test sizes */
    int json;                 /* JSON document instead of RESULT lines */
    int no_floor, no_naive;
    int tls;                  /* --tls: the library over TLS (the bench's own server) */
    int progress;             /* progress line on stderr (a terminal) */
    int pin;                  /* redis-server on the last CPU, the bench on the others */
    unsigned long lease_ms;   /* W6 lease (0: the library default) */
    unsigned long w6_locks;
    unsigned long w7_iters;
    double w5_seconds;
    unsigned long repeat;     /* --repeat: runs of the selected workloads (1) */
    const char *url;          /* --url, or the server we started */
    const char *svg;          /* W3 chart file */
    const char *redis_server, *redis_benchmark;
    const char *preload;      /* libdistlock_preload.so, or NULL */
    const char *self;         /* our own executable, for W8's child */
    int wanted[32];           /* workload selection, by index of bench_workloads */
} bench_opts_t;

extern bench_opts_t g_opt;
extern char g_run_id[32];     /* makes lock names unique per run */
extern int g_rep;             /* which repetition is running (1..repeat) */

#endif
