/* SPDX-License-Identifier: BSD-3-Clause */
/* journal.c - a record of two fields in a file, under a rwlock: a writer
 * sets them one after the other, readers check that they agree. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "bank.h"

static pthread_rwlock_t journal_lock = PTHREAD_RWLOCK_INITIALIZER;
static int fd = -1;

void journal_open(const char *dir)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/journal", dir);
    fd = open(path, O_RDWR | O_CREAT, 0644);
    if (fd < 0) {
        perror(path);
        exit(2);
    }
}

static long field(int i)
{
    char buf[32] = { 0 };
    ssize_t n = pread(fd, buf, sizeof buf - 1, i * 32);
    return n > 0 ? strtol(buf, NULL, 10) : 0;
}

static void set_field(int i, long v)
{
    char buf[32];
    int len = snprintf(buf, sizeof buf, "%020ld\n", v);
    if (pwrite(fd, buf, (size_t)len, i * 32) != len)
        perror("pwrite");
}

void journal_write(long v)
{
    pthread_rwlock_wrlock(&journal_lock);
    set_field(0, v);
    usleep(300);
    set_field(1, v);
    pthread_rwlock_unlock(&journal_lock);
}

int journal_check(void)
{
    pthread_rwlock_rdlock(&journal_lock);
    long a = field(0);
    usleep(200);
    long b = field(1);
    pthread_rwlock_unlock(&journal_lock);
    return a == b;
}
