/* SPDX-License-Identifier: BSD-3-Clause */
/* real.c - the real libc functions behind the wrappers (real.h), and the
 * guard.
 *
 * Every real function is declared with DLP_REAL_FN where it is called,
 * which also puts its row in the linker section dlp_reals: the first call
 * of any of them (or the constructor, before main) resolves all the rows
 * of the section at once, whichever file declared them.  dlsym may
 * allocate, and an allocator may lock a mutex: a wrapper re-entered while
 * its own thread resolves gets its row's fallback instead of recursing. */
#include <dlfcn.h>
#include <errno.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "preload.h"

__thread int dlp_in __attribute__((tls_model("initial-exec")));

int dlp_real_missing(void)
{
    return ENOSYS;
}

static int sys_close(int fd)
{
    return (int)syscall(SYS_close, fd);
}

/* The interposer's own (real.h). */
DLP_REAL_FN_AS(, int, pthread_mutex_lock, (pthread_mutex_t *m), (m), NULL, dlp_real_missing, 0)
DLP_REAL_FN_AS(, int, pthread_mutex_trylock, (pthread_mutex_t *m), (m), NULL, dlp_real_missing, 0)
DLP_REAL_FN_AS(, int, pthread_mutex_unlock, (pthread_mutex_t *m), (m), NULL, dlp_real_missing, 0)
DLP_REAL_FN_AS(, int, pthread_cond_wait, (pthread_cond_t *c, pthread_mutex_t *m), (c, m),
               "GLIBC_2.3.2", dlp_real_missing, 0)
DLP_REAL_FN_AS(, int, pthread_cond_timedwait,
               (pthread_cond_t *c, pthread_mutex_t *m, const struct timespec *t), (c, m, t),
               "GLIBC_2.3.2", dlp_real_missing, 0)
DLP_REAL_FN_AS(, int, close, (int fd), (fd), NULL, sys_close, sys_close(fd))

/* The section's bounds, which the linker defines. */
extern const dlp_realfn_t *const __start_dlp_reals[] __attribute__((visibility("hidden")));
extern const dlp_realfn_t *const __stop_dlp_reals[] __attribute__((visibility("hidden")));

static int boot_state;                 /* 0: not yet, 1: resolving, 2: done */
static __thread int boot_self __attribute__((tls_model("initial-exec")));

static void resolve_all(void)
{
    int saved = errno;
    for (const dlp_realfn_t *const *r = __start_dlp_reals; r < __stop_dlp_reals; r++) {
        void *p = (*r)->version ? dlvsym(RTLD_NEXT, (*r)->name, (*r)->version) : NULL;
        if (!p)
            p = dlsym(RTLD_NEXT, (*r)->name);
        __atomic_store_n((*r)->slot, p ? p : (*r)->missing, __ATOMIC_RELAXED);
    }
    errno = saved;
}

int dlp_real_resolve(void)
{
    if (DLP_LIKELY(__atomic_load_n(&boot_state, __ATOMIC_ACQUIRE) == 2))
        return 1;
    if (boot_self)
        return 0;
    int zero = 0;
    if (__atomic_compare_exchange_n(&boot_state, &zero, 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
        boot_self = 1;
        resolve_all();
        boot_self = 0;
        __atomic_store_n(&boot_state, 2, __ATOMIC_RELEASE);
        return 1;
    }
    while (__atomic_load_n(&boot_state, __ATOMIC_ACQUIRE) != 2)
        sched_yield();
    return 1;
}
