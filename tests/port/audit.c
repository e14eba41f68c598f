/* SPDX-License-Identifier: BSD-3-Clause */
/* audit.c - a count of deposits in a file, under a mutex initialized at
 * run time. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "bank.h"

static pthread_mutex_t audit_lock;
static int fd = -1;

void audit_init(const char *dir)
{
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ERRORCHECK);
    pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_PRIVATE);
    if (pthread_mutex_init(&audit_lock, &a)) {
        fprintf(stderr, "audit: pthread_mutex_init failed\n");
        exit(2);
    }
    pthread_mutexattr_destroy(&a);
    char path[4096];
    snprintf(path, sizeof path, "%s/audit", dir);
    fd = open(path, O_RDWR | O_CREAT, 0644);
    if (fd < 0) {
        perror(path);
        exit(2);
    }
}

static long count(void)
{
    char buf[32] = { 0 };
    ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    return n > 0 ? strtol(buf, NULL, 10) : 0;
}

void audit_note(void)
{
    pthread_mutex_lock(&audit_lock);
    long c = count();
    usleep(100);
    char buf[32];
    int len = snprintf(buf, sizeof buf, "%020ld\n", c + 1);
    if (pwrite(fd, buf, (size_t)len, 0) != len)
        perror("pwrite");
    pthread_mutex_unlock(&audit_lock);
}

long audit_count(void)
{
    pthread_mutex_lock(&audit_lock);
    long c = count();
    pthread_mutex_unlock(&audit_lock);
    return c;
}
