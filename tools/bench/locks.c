/* SPDX-License-Identifier: BSD-3-Clause */
/* locks.c - the library as the workloads use it, through its own
 * interfaces rather than copies: lock names and their Redis keys (the
 * library's prefix, shim/base/config.h, and key layout,
 * shim/base/keys.h), locks connected before anything is measured, failed
 * lock calls said on stderr, and the library's counters
 * (shim/base/status.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "config.h"
#include "distlock.h"
#include "keys.h"

const char *peer_name(int peer)
{
    return peer == PEER_NAIVE ? "naive" : peer == PEER_SCRIPTS ? "floor" : "distlock";
}

void lock_name(char *buf, size_t size, const char *workload, const char *suffix)
{
    snprintf(buf, size, "bench:%s:%s%s%s", g_run_id, workload, suffix ? ":" : "",
             suffix ? suffix : "");
}

int lock_key(char *buf, size_t size, const char *name, int which)
{
    char prefix[256];
    if (dl_config_prefix(prefix, sizeof prefix)) {
        fprintf(stderr, "distlock-bench: %s\n", dist_lasterror());
        return -1;
    }
    size_t len = strlen(name);
    char *keys = malloc(dl_keys_size(prefix, len));
    if (!keys)
        return -1;
    const char *k[DL_KEYS_N];
    size_t kl[DL_KEYS_N];
    dl_keys_write(keys, prefix, name, len, k, kl);
    int rc = kl[which] < size ? 0 : -1;
    if (rc == 0)
        snprintf(buf, size, "%s", k[which]);
    free(keys);
    return rc;
}

int lock_err(const char *what, int rc)
{
    if (rc)
        fprintf(stderr, "distlock-bench: %s: %s (%s)\n", what, dist_strerror(rc), dist_lasterror());
    return rc;
}

int mutex_connect(dist_mutex_t *m)
{
    /* One trylock, given back at once if it succeeded: connects (and loads
     * the scripts); EBUSY is another process of the workload ahead. */
    int rc = dist_mutex_trylock(m);
    if (rc == 0)
        rc = dist_mutex_unlock(m);
    return rc && rc != EBUSY ? lock_err("warm-up", rc) : 0;
}

int mutex_warm(dist_mutex_t *m, const char *name)
{
    int rc = dist_mutex_init(m, name, NULL);
    if (rc) {
        fprintf(stderr, "distlock-bench: dist_mutex_init: %s\n", dist_strerror(rc));
        return -1;
    }
    return mutex_connect(m) ? -1 : 0;
}

int rwlock_warm(dist_rwlock_t *rw, const char *name, char mode)
{
    int rc = dist_rwlock_init(rw, name, NULL);
    if (rc) {
        fprintf(stderr, "distlock-bench: dist_rwlock_init: %s\n", dist_strerror(rc));
        return -1;
    }
    rc = mode == 'r' ? dist_rwlock_tryrdlock(rw) : dist_rwlock_trywrlock(rw);
    if (rc == 0)
        rc = dist_rwlock_unlock(rw);
    return rc && rc != EBUSY ? (lock_err("warm-up", rc), -1) : 0;
}
