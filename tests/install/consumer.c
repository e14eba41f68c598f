/* SPDX-License-Identifier: BSD-3-Clause */
/* Uses an installed distlock: takes and releases one mutex.  Built by
 * tests/install/check.sh with pkg-config and with find_package(distlock). */
#include <distlock.h>

#include <inttypes.h>
#include <stdio.h>
#include <unistd.h>

int main(void)
{
    char name[64];
    dist_mutex_t m;
    uint64_t fence = 0;
    int rc;

    snprintf(name, sizeof name, "install-check:%d", (int)getpid());
    if ((rc = dist_mutex_init(&m, name, NULL)) != 0 ||
        (rc = dist_mutex_lock(&m)) != 0 ||
        (rc = dist_mutex_getfence(&m, &fence)) != 0 ||
        (rc = dist_mutex_unlock(&m)) != 0 ||
        (rc = dist_mutex_destroy(&m)) != 0) {
        fprintf(stderr, "consumer: %s (%s)\n", dist_strerror(rc), dist_lasterror());
        return 1;
    }
    printf("consumer: locked and unlocked %s, fence %" PRIu64 "\n", name, fence);
    return 0;
}
