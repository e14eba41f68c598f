/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * kinds_helper.c - the objects the distlock command cannot make itself,
 * for the CLI's tests (test_kinds.sh), on the public library:
 *
 *   cli_kinds_helper condwait NAME SECONDS FLAG
 *                                            waits on condition NAME (with
 *                                            mutex NAME) until the file FLAG
 *                                            exists (a wake-up without it
 *                                            is spurious), at most SECONDS:
 *                                            0 woken, 1 timed out
 *   cli_kinds_helper broadcast NAME          wakes every waiter of NAME
 *   cli_kinds_helper semtake NAME VALUE N    takes N permits of counting
 *                                            semaphore NAME (created with
 *                                            VALUE), none given back
 *   cli_kinds_helper semwait NAME VALUE      waits for a permit of it
 *
 * Exit 2 on an error, said on stderr.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <distlock.h>

static int fail(const char *what, int rc)
{
    fprintf(stderr, "kinds_helper: %s: %s: %s\n", what, dist_strerror(rc), dist_lasterror());
    return 2;
}

static int condwait(const char *name, int secs, const char *flag)
{
    dist_mutex_t m;
    dist_cond_t c;
    int rc;
    if ((rc = dist_mutex_init(&m, name, NULL)) || (rc = dist_cond_init(&c, name, NULL)) ||
        (rc = dist_mutex_lock(&m)))
        return fail("init", rc);
    struct timespec at;
    clock_gettime(CLOCK_REALTIME, &at);
    at.tv_sec += secs;
    do
        rc = dist_cond_timedwait(&c, &m, &at);
    while (rc == 0 && access(flag, F_OK) != 0);
    dist_mutex_unlock(&m);
    if (rc && rc != ETIMEDOUT)
        return fail("wait", rc);
    return rc == ETIMEDOUT;
}

static int broadcast(const char *name)
{
    dist_cond_t c;
    int rc;
    if ((rc = dist_cond_init(&c, name, NULL)) || (rc = dist_cond_broadcast(&c)))
        return fail("broadcast", rc);
    return 0;
}

static int sem(const char *name, unsigned value, int n, int wait)
{
    dist_sem_t s;
    int rc;
    if ((rc = dist_sem_init(&s, name, value, 0)))
        return fail("init", rc);
    for (int i = 0; i < n; i++)
        if ((rc = wait ? dist_sem_wait(&s) : dist_sem_trywait(&s)))
            return fail(wait ? "wait" : "trywait", rc);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 5 && strcmp(argv[1], "condwait") == 0)
        return condwait(argv[2], atoi(argv[3]), argv[4]);
    if (argc == 3 && strcmp(argv[1], "broadcast") == 0)
        return broadcast(argv[2]);
    if (argc == 5 && strcmp(argv[1], "semtake") == 0)
        return sem(argv[2], (unsigned)atoi(argv[3]), atoi(argv[4]), 0);
    if (argc == 4 && strcmp(argv[1], "semwait") == 0)
        return sem(argv[2], (unsigned)atoi(argv[3]), 1, 1);
    fprintf(stderr, "usage: %s condwait NAME SECONDS FLAG | broadcast NAME | semtake NAME VALUE N | "
            "semwait NAME VALUE\n", argv[0]);
    return 2;
}
