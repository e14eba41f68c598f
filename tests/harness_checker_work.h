/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * harness_checker_work.h - internal to the exclusion checker: the memory
 * its processes share (the hold records, the counters, what is running
 * now) and the workload each forked process runs (harness_checker_work.c);
 * harness_checker.c starts, watches and stops them.
 */
#ifndef TH_HARNESS_CHECKER_WORK_H
#define TH_HARNESS_CHECKER_WORK_H

#include "harness.h"
#include "harness_checker.h"

/* mmap MAP_SHARED|MAP_ANONYMOUS: children write into the parent's view. */
struct chk_shared {
    size_t map_len;
    uint64_t cap;
    uint64_t next;              /* slots handed out */
    uint64_t counter[CHK_MAX_NAMES];    /* incremented non-atomically under write holds */
    uint64_t lock_eio, lock_timedout, lock_other, ownerdead;
    int64_t max_call_us;        /* longest lock call */
    uint64_t redirects, reconnects;     /* the children's dl_stats */
    int32_t writer;             /* pid inside a write hold now, 0 none */
    int stop;                   /* chk_stop(): threads end after their hold */
    int32_t inside[CHK_MAX_PROCS];  /* threads of process i inside a hold now */
    int error_taken;
    char first_error[256];
    chk_hold_t holds[];
};

/* One process of the workload (the parent fills cfg, sh, index). */
struct chk_proc {
    const chk_cfg_t *cfg;
    chk_shared_t *sh;
    int index;                  /* process number */
    int nnames;
    union { dist_mutex_t m; dist_rwlock_t rw; } u[CHK_MAX_NAMES];
    char key[CHK_MAX_NAMES][DIST_NAME_MAX + 64];
};

/* The body of each forked process: the threads, their holds, then exit
 * status 0 or TH_CHILD_FAIL. */
int chk_child(void *arg);

#endif
