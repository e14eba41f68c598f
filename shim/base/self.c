/* SPDX-License-Identifier: BSD-3-Clause */
/* self.c - who this process is: its tag, its forks and its ancestors
 * (self.h). */
#include <stdint.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "self.h"

/* Deeper fork chains than this (without an exec between) forget their
 * oldest ancestors: objects those initialized read as another process's. */
#define DL_ANCESTORS 32

typedef struct ancestor {
    uint64_t tag;
    uint64_t forks;           /* its fork count when it forked our line */
} ancestor_t;

static uint64_t tag;
static uint64_t forks;
static ancestor_t ancestors[DL_ANCESTORS];
static int nancestors;

/* 64 bits from the kernel's generator; should it fail (a seccomp filter,
 * an old kernel), the pid, two clocks and an address, mixed: unique among
 * the processes alive at once, which is what the tag must be. */
static uint64_t draw(void)
{
    uint64_t v = 0;
    if (getrandom(&v, sizeof v, GRND_NONBLOCK) != (ssize_t)sizeof v) {
        struct timespec a, b;
        clock_gettime(CLOCK_MONOTONIC, &a);
        clock_gettime(CLOCK_REALTIME, &b);
        v = ((uint64_t)getpid() << 40) ^ (uint64_t)a.tv_nsec ^ ((uint64_t)a.tv_sec << 20) ^
            ((uint64_t)b.tv_nsec << 32) ^ (uint64_t)(uintptr_t)&v;
        v ^= v >> 33;
        v *= 0xff51afd7ed558ccdULL;
        v ^= v >> 33;
    }
    return v ? v : 1;
}

uint64_t dl_self_tag(void)
{
    uint64_t t = __atomic_load_n(&tag, __ATOMIC_ACQUIRE);
    if (t)
        return t;
    uint64_t mine = draw(), none = 0;
    /* Two threads may draw at once: the first one's stands. */
    if (!__atomic_compare_exchange_n(&tag, &none, mine, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        return none;
    return mine;
}

uint64_t dl_self_forks(void)
{
    return __atomic_load_n(&forks, __ATOMIC_ACQUIRE);
}

int dl_self_inherited(uint64_t t, uint64_t f)
{
    if (t == dl_self_tag())
        return 1;
    for (int i = nancestors - 1; i >= 0; i--)
        if (ancestors[i].tag == t)
            return f < ancestors[i].forks;
    return 0;
}

void dl_self_before_fork(void)
{
    dl_self_tag();                 /* the child must know who its parent was */
    __atomic_add_fetch(&forks, 1, __ATOMIC_ACQ_REL);
}

void dl_self_after_fork(void)
{
    /* Only this thread exists now. */
    if (nancestors == DL_ANCESTORS) {
        for (int i = 1; i < DL_ANCESTORS; i++)
            ancestors[i - 1] = ancestors[i];
        nancestors--;
    }
    ancestors[nancestors].tag = tag;
    ancestors[nancestors].forks = forks;
    nancestors++;
    __atomic_store_n(&tag, draw(), __ATOMIC_RELEASE);
    __atomic_store_n(&forks, 0, __ATOMIC_RELEASE);
}
