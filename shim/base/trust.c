/* SPDX-License-Identifier: BSD-3-Clause */
/* trust.c - the epoch that every sign of lost state moves on (trust.h). */
#include "dl.h"
#include "trust.h"

static unsigned long dl_epoch = 1;
static void (*dl_hook_fn)(void *);
static void *dl_hook_arg;

unsigned long dl_trust_epoch(void)
{
    return __atomic_load_n(&dl_epoch, __ATOMIC_ACQUIRE);
}

void dl_trust_end(const char *why)
{
    __atomic_add_fetch(&dl_epoch, 1, __ATOMIC_ACQ_REL);
    DL_STAT_ADD(trust_ends, 1);
    /* A sign that persists (a server answering READONLY to every call)
     * would fill the log: one line a second. */
    static uint64_t last;
    uint64_t now = dl_now_ms(), prev = __atomic_load_n(&last, __ATOMIC_RELAXED);
    if (!prev || now - prev >= 1000) {
        __atomic_store_n(&last, now, __ATOMIC_RELAXED);
        dl_log(DL_LOG_INFO, "%s: every hold of this process is confirmed with Redis "
               "before it serves another thread", why);
    }
    void (*fn)(void *) = __atomic_load_n(&dl_hook_fn, __ATOMIC_ACQUIRE);
    if (fn)
        fn(__atomic_load_n(&dl_hook_arg, __ATOMIC_ACQUIRE));
}

void dl_trust_hook(void (*fn)(void *arg), void *arg)
{
    __atomic_store_n(&dl_hook_fn, (void (*)(void *))0, __ATOMIC_RELEASE);
    __atomic_store_n(&dl_hook_arg, arg, __ATOMIC_RELEASE);
    __atomic_store_n(&dl_hook_fn, fn, __ATOMIC_RELEASE);
}
