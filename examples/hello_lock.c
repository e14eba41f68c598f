/* SPDX-License-Identifier: BSD-3-Clause */
/* hello_lock: the smallest complete use of a distributed mutex, with every
 * return code a real program should look at.
 *
 *   DISTLOCK_URL=redis://127.0.0.1:6379 ./hello_lock [NAME]
 */
#include <distlock.h>

#include <stdio.h>

int main(int argc, char **argv)
{
    dist_mutex_t m;
    uint64_t fence;
    int rc;

    printf("distlock %s\n", dist_version());
    /* init never talks to Redis; the first lock call connects. */
    rc = dist_mutex_init(&m, argc > 1 ? argv[1] : "hello", NULL);
    if (rc != 0) {
        fprintf(stderr, "init: %s\n", dist_strerror(rc));
        return 1;
    }

    rc = dist_mutex_lock(&m);
    if (rc == EOWNERDEAD) {
        /* We hold the lock, but its last holder died holding it. */
        printf("previous holder died; checking what it left\n");
    } else if (rc != 0) {
        /* EIO: Redis unreachable for DISTLOCK_IO_TIMEOUT_MS; nothing held. */
        fprintf(stderr, "lock: %s (%s)\n", dist_strerror(rc), dist_lasterror());
        dist_mutex_destroy(&m);
        return 1;
    }

    dist_mutex_getfence(&m, &fence);
    printf("holding \"%s\" with fence %llu\n", argc > 1 ? argv[1] : "hello",
           (unsigned long long)fence);
    /* ... the critical section: every process and host using this name
     * and this Redis waits here for us ... */

    rc = dist_mutex_unlock(&m);
    if (rc == ENOLCK)
        fprintf(stderr, "the hold lapsed before unlock: work was unprotected\n");
    dist_mutex_destroy(&m);
    return rc == 0 ? 0 : 1;
}
