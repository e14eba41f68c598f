/* SPDX-License-Identifier: BSD-3-Clause */
/* legacylib.c - a legacy shared library with a file-static mutex guarding
 * a counter file: the interposer must find `lib_lock` in this library's
 * symbol table (it is neither exported nor in the executable). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static pthread_mutex_t lib_lock = PTHREAD_MUTEX_INITIALIZER;

void legacylib_bump(int fd, unsigned sleep_us)
{
    char buf[32] = { 0 };
    pthread_mutex_lock(&lib_lock);
    ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    long v = n > 0 ? strtol(buf, NULL, 10) : 0;
    usleep(sleep_us);
    int len = snprintf(buf, sizeof buf, "%020ld\n", v + 1);
    if (pwrite(fd, buf, (size_t)len, 0) != len)
        perror("pwrite");
    pthread_mutex_unlock(&lib_lock);
}
