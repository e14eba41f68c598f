/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * drive.c - a fixed run of the public API for tools/wirecheck/wirecheck.sh:
 * every command it causes reaches Redis in the same order every time, so
 * that two builds' MONITOR captures can be compared line by line.
 *
 * One thread of the program's own, and a pause after each step long
 * enough for the library's threads to finish what the step started (a
 * linger's end, a pushed grant), so their commands never interleave with
 * the next step's.  Between phases a connection of the driver's own (its
 * commands left out of the comparison: its address goes to stdout) makes
 * the faults a link must handle: SCRIPT FLUSH (NOSCRIPT, then EVAL) and
 * CLIENT KILL of the library's connections (a dropped link, reconnected).
 * A forked child waits for a lock the parent holds (a queued waiter, a
 * pushed grant).  Uses distlock.h and hiredis only.
 *
 * usage: drive HOST PORT: the plain port of the node the driver's own
 * connection goes to (DISTLOCK_URL names the topology, perhaps over TLS).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include "distlock.h"

static redisContext *side;

static void settle(void)
{
    struct timespec ts = { 0, 150 * 1000000L };
    nanosleep(&ts, NULL);
}

static void check(const char *what, int rc, int want)
{
    if (rc != want) {
        fprintf(stderr, "drive: %s: %s (expected %s): %s\n", what, dist_strerror(rc),
                dist_strerror(want), dist_lasterror());
        exit(1);
    }
    settle();
}

static struct timespec in_ms(long ms)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += ms / 1000;
    ts.tv_nsec += (ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    return ts;
}

/* A command on the driver's own connection. */
static void side_cmd(const char *cmd)
{
    redisReply *r = redisCommand(side, cmd);
    if (!r) {
        fprintf(stderr, "drive: %s: %s\n", cmd, side->errstr);
        exit(1);
    }
    freeReplyObject(r);
    settle();
}

/* Closes every connection of the library's (the normal clients but the
 * driver's and the monitors'). */
static void kill_links(void)
{
    redisReply *id = redisCommand(side, "CLIENT ID");
    redisReply *l = redisCommand(side, "CLIENT LIST TYPE normal");
    if (!id || !l || l->type != REDIS_REPLY_STRING) {
        fprintf(stderr, "drive: CLIENT LIST failed\n");
        exit(1);
    }
    for (char *line = strtok(l->str, "\n"); line; line = strtok(NULL, "\n")) {
        long long cid = strtoll(line + 3, NULL, 10);
        if (cid == id->integer || strstr(line, "cmd=monitor"))
            continue;
        redisReply *k = redisCommand(side, "CLIENT KILL ID %lld", cid);
        if (k)
            freeReplyObject(k);
    }
    freeReplyObject(id);
    freeReplyObject(l);
    settle();
}

static void basics(void)
{
    dist_mutex_t m;
    uint64_t fence;
    struct timespec t;
    check("mutex_init", dist_mutex_init(&m, "w:m1", NULL), 0);
    check("lock", dist_mutex_lock(&m), 0);
    check("getfence", dist_mutex_getfence(&m, &fence), 0);
    check("unlock", dist_mutex_unlock(&m), 0);
    check("trylock", dist_mutex_trylock(&m), 0);
    check("unlock", dist_mutex_unlock(&m), 0);
    t = in_ms(2000);
    check("timedlock", dist_mutex_timedlock(&m, &t), 0);
    check("unlock", dist_mutex_unlock(&m), 0);
    check("mutex_destroy", dist_mutex_destroy(&m), 0);

    dist_rwlock_t rw;
    check("rwlock_init", dist_rwlock_init(&rw, "w:rw1", NULL), 0);
    check("rdlock", dist_rwlock_rdlock(&rw), 0);
    check("unlock", dist_rwlock_unlock(&rw), 0);
    check("wrlock", dist_rwlock_wrlock(&rw), 0);
    check("unlock", dist_rwlock_unlock(&rw), 0);
    check("tryrdlock", dist_rwlock_tryrdlock(&rw), 0);
    check("unlock", dist_rwlock_unlock(&rw), 0);
    check("rwlock_destroy", dist_rwlock_destroy(&rw), 0);

    /* one hash tag: one call for the set, whatever the topology */
    dist_mutex_t a, b, c;
    dist_mutex_t *const set[3] = { &a, &b, &c };
    check("init a", dist_mutex_init(&a, "w:{all}a", NULL), 0);
    check("init b", dist_mutex_init(&b, "w:{all}b", NULL), 0);
    check("init c", dist_mutex_init(&c, "w:{all}c", NULL), 0);
    check("lockall", dist_mutex_lockall(set, 3), 0);
    check("unlock c", dist_mutex_unlock(&c), 0);
    check("unlock b", dist_mutex_unlock(&b), 0);
    check("unlock a", dist_mutex_unlock(&a), 0);

    /* (redlock:// has no semaphores) */
    const char *url = getenv("DISTLOCK_URL");
    if (url && strncmp(url, "redlock://", 10) == 0)
        return;
    dist_sem_t s;
    int v;
    check("sem_init", dist_sem_init(&s, "w:s1", 2, 0), 0);
    check("sem_wait", dist_sem_wait(&s), 0);
    check("sem_trywait", dist_sem_trywait(&s), 0);
    check("sem_getvalue", dist_sem_getvalue(&s, &v), 0);
    check("sem_post", dist_sem_post(&s), 0);
    check("sem_post", dist_sem_post(&s), 0);
    check("sem_destroy", dist_sem_destroy(&s), 0);
}

static void once_more(const char *name)
{
    dist_mutex_t m;
    check("mutex_init", dist_mutex_init(&m, name, NULL), 0);
    check("lock", dist_mutex_lock(&m), 0);
    check("unlock", dist_mutex_unlock(&m), 0);
    check("mutex_destroy", dist_mutex_destroy(&m), 0);
}

/* The parent holds w:m2; a child waits for it, queued in Redis; the
 * parent's unlock pushes it the grant. */
static void contended(void)
{
    dist_mutex_t m;
    check("mutex_init", dist_mutex_init(&m, "w:m2", NULL), 0);
    check("lock", dist_mutex_lock(&m), 0);
    int gate[2];
    if (pipe(gate))
        exit(1);
    pid_t pid = fork();
    if (pid == 0) {
        close(gate[0]);
        dist_mutex_t w;
        dist_mutex_init(&w, "w:m2", NULL);
        /* a second object: the child's own lock state */
        struct timespec t = in_ms(100);
        int rc = dist_mutex_timedlock(&w, &t);
        if (rc != ETIMEDOUT) {
            fprintf(stderr, "drive: child timedlock: %s\n", dist_strerror(rc));
            _exit(1);
        }
        settle();
        if (write(gate[1], "q", 1) != 1)
            _exit(1);
        rc = dist_mutex_lock(&w);
        if (rc) {
            fprintf(stderr, "drive: child lock: %s\n", dist_strerror(rc));
            _exit(1);
        }
        settle();
        rc = dist_mutex_unlock(&w);
        settle();
        _exit(rc ? 1 : 0);
    }
    close(gate[1]);
    char q;
    if (read(gate[0], &q, 1) != 1)
        exit(1);
    /* the child's lock call is queued in Redis by now */
    struct timespec ts = { 0, 500 * 1000000L };
    nanosleep(&ts, NULL);
    check("unlock", dist_mutex_unlock(&m), 0);
    int st;
    waitpid(pid, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st)) {
        fprintf(stderr, "drive: the child failed\n");
        exit(1);
    }
    settle();
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: drive HOST PORT\n");
        return 2;
    }
    side = redisConnect(argv[1], atoi(argv[2]));
    if (!side || side->err) {
        fprintf(stderr, "drive: cannot connect to %s:%s\n", argv[1], argv[2]);
        return 1;
    }
    redisReply *r = redisCommand(side, "CLIENT INFO");
    char *laddr = r && r->type == REDIS_REPLY_STRING ? strstr(r->str, " addr=") : NULL;
    if (!laddr)
        return 1;
    printf("side %.*s\n", (int)strcspn(laddr + 6, " "), laddr + 6);
    fflush(stdout);
    freeReplyObject(r);
    basics();
    side_cmd("SCRIPT FLUSH");
    once_more("w:m3");
    kill_links();
    once_more("w:m4");
    contended();
    return 0;
}
