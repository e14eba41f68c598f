/* SPDX-License-Identifier: BSD-3-Clause */
/* config_swap: readers on many hosts read a configuration that a writer
 * replaces now and then.  The configuration is two files that must agree
 * (app.conf and app.conf.sum); readers take the read lock, the writer the
 * write lock, so nobody ever sees one file new and the other old.
 *
 *   ./config_swap DIR      forks 3 readers and 1 writer over DIR, checks
 *                          that no reader saw a torn configuration
 */
#include <distlock.h>

#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static dist_rwlock_t cfg_lock = DIST_RWLOCK_INITIALIZER("example:config");
static char conf[512], sum[512];

static long read_num(const char *path)
{
    long v = -1;
    FILE *f = fopen(path, "r");
    if (f) { if (fscanf(f, "%ld", &v) != 1) v = -1; fclose(f); }
    return v;
}

static void write_num(const char *path, long v)
{
    FILE *f = fopen(path, "w");
    if (f) { fprintf(f, "%ld\n", v); fclose(f); }
}

static int reader(void)               /* returns the number of torn reads */
{
    int torn = 0;
    for (int i = 0; i < 200; i++) {
        int rc = dist_rwlock_rdlock(&cfg_lock);
        if (rc != 0 && rc != EOWNERDEAD) {
            fprintf(stderr, "rdlock: %s (%s)\n", dist_strerror(rc), dist_lasterror());
            return 1;
        }
        long version = read_num(conf), check = read_num(sum);
        torn += check != version * 7;      /* the "checksum" of a version */
        dist_rwlock_unlock(&cfg_lock);
    }
    return torn;
}

static int writer(void)
{
    for (long version = 1; version <= 50; version++) {
        int rc = dist_rwlock_wrlock(&cfg_lock);
        if (rc != 0 && rc != EOWNERDEAD)
            return 1;
        write_num(conf, version);          /* two writes: torn in between */
        usleep(200);
        write_num(sum, version * 7);
        if (dist_rwlock_unlock(&cfg_lock) == ENOLCK)
            fprintf(stderr, "writer: the hold lapsed during the swap\n");
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 2) { fprintf(stderr, "usage: %s DIR\n", argv[0]); return 2; }
    snprintf(conf, sizeof conf, "%s/app.conf", argv[1]);
    snprintf(sum, sizeof sum, "%s/app.conf.sum", argv[1]);
    write_num(conf, 0);
    write_num(sum, 0);

    /* Children lock through their own connections (fork rules of SPEC). */
    for (int i = 0; i < 4; i++)
        if (fork() == 0)
            _exit(i == 0 ? writer() : reader());
    int bad = 0, st;
    while (wait(&st) > 0)
        bad += !WIFEXITED(st) || WEXITSTATUS(st) != 0;
    printf("config_swap: %s\n", bad ? "a reader saw a torn configuration" : "no torn reads");
    return bad != 0;
}
