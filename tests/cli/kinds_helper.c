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
 *   cli_kinds_helper semhold NAME VALUE FLAG takes a permit of it, makes
 *                                            FLAG.in, and when FLAG exists
 *                                            (60 s at most) posts it; says
 *                                            on stdout "post: RC" and
 *                                            "onlost: CALLS NAME" (its
 *                                            dist_onlost function's calls,
 *                                            0 after 10 s without one)
 *
 * Exit 2 on an error, said on stderr.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
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

static pthread_mutex_t lost_mu = PTHREAD_MUTEX_INITIALIZER;
static int lost_calls;
static char lost_name[256];

static void on_lost(const char *name, size_t len, uint64_t fence, void *arg)
{
    (void)fence;
    (void)arg;
    pthread_mutex_lock(&lost_mu);
    lost_calls++;
    snprintf(lost_name, sizeof lost_name, "%.*s", (int)len, name);
    pthread_mutex_unlock(&lost_mu);
}

static int exists(const char *path)
{
    return access(path, F_OK) == 0;
}

/* Inside a section a counting semaphore gates, until told to leave. */
static int semhold(const char *name, unsigned value, const char *flag)
{
    dist_sem_t s;
    char in[4096];
    int rc;
    dist_onlost(on_lost, NULL);
    if ((rc = dist_sem_init(&s, name, value, 0)) || (rc = dist_sem_wait(&s)))
        return fail("take", rc);
    snprintf(in, sizeof in, "%s.in", flag);
    FILE *f = fopen(in, "w");
    if (!f || fclose(f))
        return fail("create FLAG.in", EIO);
    for (int i = 0; i < 1200 && !exists(flag); i++)
        nanosleep(&(struct timespec){ 0, 50000000 }, NULL);
    rc = dist_sem_post(&s);
    printf("post: %s\n", rc == 0 ? "0" : rc == ENOLCK ? "ENOLCK" : dist_strerror(rc));
    /* dist_onlost's function is called by a thread of the library: a
     * little later, perhaps (10 s at most; then 200 ms for a second). */
    for (int i = 0, calls = 0; i < 200 && !calls; i++) {
        pthread_mutex_lock(&lost_mu);
        calls = lost_calls;
        pthread_mutex_unlock(&lost_mu);
        if (!calls)
            nanosleep(&(struct timespec){ 0, 50000000 }, NULL);
    }
    nanosleep(&(struct timespec){ 0, 200000000 }, NULL);
    pthread_mutex_lock(&lost_mu);
    printf("onlost: %d %s\n", lost_calls, lost_name);
    pthread_mutex_unlock(&lost_mu);
    if (rc)
        fprintf(stderr, "kinds_helper: post: %s\n", dist_lasterror());
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
    if (argc == 5 && strcmp(argv[1], "semhold") == 0)
        return semhold(argv[2], (unsigned)atoi(argv[3]), argv[4]);
    fprintf(stderr, "usage: %s condwait NAME SECONDS FLAG | broadcast NAME | semtake NAME VALUE N | "
            "semwait NAME VALUE | semhold NAME VALUE FLAG\n", argv[0]);
    return 2;
}
