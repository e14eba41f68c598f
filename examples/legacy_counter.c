/* SPDX-License-Identifier: BSD-3-Clause */
/* legacy_counter: a program that knows nothing of distlock.  It guards a
 * counter file with a global pthread mutex, which protects it from its own
 * threads only; run on several hosts (or as several processes), updates
 * are lost.  preload_map.sh makes g_counter_lock a distributed lock with
 * LD_PRELOAD and DISTLOCK_MAP, without recompiling this file.
 *
 *   ./legacy_counter FILE N    adds 1 to the number in FILE, N times
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

pthread_mutex_t g_counter_lock = PTHREAD_MUTEX_INITIALIZER;

static void add_one(const char *path)
{
    long v = 0;
    pthread_mutex_lock(&g_counter_lock);
    FILE *f = fopen(path, "r");
    if (f) { if (fscanf(f, "%ld", &v) != 1) v = 0; fclose(f); }
    usleep(100);                          /* read, think, write: racy */
    f = fopen(path, "w");
    if (f) { fprintf(f, "%ld\n", v + 1); fclose(f); }
    pthread_mutex_unlock(&g_counter_lock);
}

int main(int argc, char **argv)
{
    if (argc != 3) { fprintf(stderr, "usage: %s FILE N\n", argv[0]); return 2; }
    for (long i = atol(argv[2]); i > 0; i--)
        add_one(argv[1]);
    return 0;
}
