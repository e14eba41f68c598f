/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * nemesis_log.c - the record the clients write: one array per thread in
 * memory shared with the parent (MAP_SHARED, made before the fork), so a
 * client killed with SIGKILL leaves every call it made, including the one
 * it was in.  Each record is published before its call (state 1) and
 * completed after it (state 2); the parent reads the published count with
 * acquire order, so it never reads a record before its fields.
 */
#include "nemesis.h"

#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

int64_t nm_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int64_t nm_realtime_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

nm_shared_t *nm_shared_new(void)
{
    /* Most of it is never touched: pages come as a thread's log grows. */
    void *p = mmap(NULL, sizeof(nm_shared_t), PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

void nm_shared_free(nm_shared_t *sh)
{
    if (sh)
        munmap(sh, sizeof *sh);
}

nm_ev_t *nm_ev_begin(nm_thread_log_t *tl, int kind, int op, int name, int mode, int depth,
                     uint32_t hold)
{
    uint32_t i = tl->n;
    if (i >= NM_EV_PER_THREAD) {
        tl->full = 1;
        return NULL;
    }
    nm_ev_t *e = &tl->ev[i];
    memset(e, 0, sizeof *e);
    e->kind = (uint8_t)kind;
    e->op = (uint8_t)op;
    e->name = (uint8_t)name;
    e->mode = (uint8_t)mode;
    e->depth = (uint8_t)depth;
    e->hold = hold;
    e->rc = -1;
    e->state = 1;
    e->t0 = nm_now_us();
    __atomic_store_n(&tl->n, i + 1, __ATOMIC_RELEASE);
    return e;
}

void nm_ev_end(nm_ev_t *e, int rc, uint64_t fence)
{
    if (!e)
        return;
    e->t1 = nm_now_us();
    e->rc = (int16_t)rc;
    e->fence = fence;
    __atomic_store_n(&e->state, 2, __ATOMIC_RELEASE);
}
