/* SPDX-License-Identifier: BSD-3-Clause */
/* fenced_write: a lock alone cannot stop a holder that stalled past its
 * lease from writing late.  The store must check the fencing token: it
 * keeps the highest token it has seen and refuses writes below it.
 *
 *   ./fenced_write STOREFILE
 * A takes the lock (fixed lease 500 ms) and stalls; B takes the lock
 * when A's lease lapses, writes with its larger token; A wakes up and
 * writes with its old token: the store refuses it.
 */
#include <distlock.h>

#include <stdio.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

/* The store's conditional write, atomic on its side (here a file under
 * flock; in a database: UPDATE ... WHERE fence <= ?).  0: written. */
static int store_write(const char *path, uint64_t fence, const char *value)
{
    unsigned long long seen = 0;
    FILE *f = fopen(path, "a+");
    if (!f) return -1;
    flock(fileno(f), LOCK_EX);
    rewind(f);
    if (fscanf(f, "%llu", &seen) != 1) seen = 0;
    int ok = fence >= seen;
    if (ok && ftruncate(fileno(f), 0) == 0)
        fprintf(f, "%llu %s\n", (unsigned long long)fence, value);
    fclose(f);                                    /* unlocks */
    printf("%s: fence %llu %s\n", value, (unsigned long long)fence,
           ok ? "written" : "REFUSED (stale)");
    return ok ? 0 : -1;
}

int main(int argc, char **argv)
{
    dist_mutexattr_t a;
    dist_mutex_t m;
    uint64_t fence;

    if (argc != 2) { fprintf(stderr, "usage: %s STOREFILE\n", argv[0]); return 2; }
    dist_mutexattr_init(&a);
    dist_mutexattr_setlease(&a, 500);            /* fixed: not renewed */
    dist_mutex_init(&m, "example:store", &a);

    int rc = dist_mutex_lock(&m);
    if (rc != 0 && rc != EOWNERDEAD) {
        fprintf(stderr, "lock: %s (%s)\n", dist_strerror(rc), dist_lasterror());
        return 1;
    }
    dist_mutex_getfence(&m, &fence);

    pid_t b = fork();
    if (b == 0) {                                 /* B, another process */
        rc = dist_mutex_lock(&m);                 /* waits for A's lease */
        if (rc != 0 && rc != EOWNERDEAD) return 1;
        uint64_t fb;
        dist_mutex_getfence(&m, &fb);
        rc = store_write(argv[1], fb, "B");
        dist_mutex_unlock(&m);
        fflush(stdout);                           /* _exit does not */
        _exit(rc == 0 ? 0 : 1);
    }
    int st;
    waitpid(b, &st, 0);                           /* A "stalls" meanwhile */
    int late = store_write(argv[1], fence, "A");  /* must be refused */
    rc = dist_mutex_unlock(&m);                   /* ENOLCK: lapsed */
    printf("A's unlock: %s\n", dist_strerror(rc));
    dist_mutex_destroy(&m);
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 && late != 0 && rc == ENOLCK ? 0 : 1;
}
