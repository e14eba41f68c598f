/* SPDX-License-Identifier: BSD-3-Clause */
/* proc.h - forked workers: shared memory, start gates, progress, waits
 * (proc.c). */
#ifndef BENCH_PROC_H
#define BENCH_PROC_H

#include <hiredis/hiredis.h>
#include <semaphore.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

/* Shared anonymous memory (visible to forked workers); zeroed. */
void *shm_alloc(size_t size);
void shm_free(void *p, size_t size);

/* What a workload's workers share with the parent for the progress line. */
typedef struct progress {
    unsigned long done, total;
} progress_t;

typedef struct gate {         /* a start gate for n workers */
    sem_t ready, go;
    int n;
} gate_t;
void gate_init(gate_t *g, int n);
void gate_destroy(gate_t *g);
/* worker side: says it is ready, waits for the start */
void gate_pass(gate_t *g);
/* parent side: waits for every worker to be ready */
int gate_wait_ready(gate_t *g, const pid_t *pids, int n);
void gate_open(gate_t *g);
/* Has any of pids exited (without reaping it)? */
int any_exited(const pid_t *pids, int n);

/* After the workers were forked: waits until every one passed gate g,
 * then measures from now (with c, *calls0 = the server's command count,
 * rc_cmd_calls; *t0 = now_ns) and opens the gate.  0, or -1 when a worker
 * ended first (the gate stays shut; *t0 is still set). */
int gate_start(gate_t *g, const pid_t *pids, int n, redisContext *c, long long *calls0,
               uint64_t *t0);
/* Forks pids[0..n), workers fn(arg, i) that pass gate g, and starts them
 * together (gate_start). */
int spawn_gated(int (*fn)(void *, int), void *arg, pid_t *pids, int n, gate_t *g,
                redisContext *c, long long *calls0, uint64_t *t0);
/* The first worker to finish copies count[0..n) into snap[0..n) (the
 * others do nothing): the shares while every worker still had work. */
void snap_first(volatile int *first_done, unsigned long *snap, const volatile unsigned long *count,
                int n);
/* Forks a child whose stdout is *out (read end, fdopen'd), and tracks it
 * (reap it with reap_tool).  In the child: 0 (it execs or _exits);
 * in the parent its pid; -1 on failure. */
pid_t fork_piped(FILE **out);

/* Forks a worker running fn(arg, idx); its exit status is fn's return.
 * The child's stdout is not flushed twice: the parent flushes first. */
pid_t spawn(int (*fn)(void *, int), void *arg, int idx);
/* Waits for pids[0..n), showing the progress line for `label` while they
 * run.  0 when all exited with 0, else -1 (message printed). */
int wait_workers(pid_t *pids, int n, const char *label, const progress_t *pr);
/* Progress line only (for the parent's own waits). */
void progress_show(const char *label, const progress_t *pr);
void progress_clear(void);

#endif
