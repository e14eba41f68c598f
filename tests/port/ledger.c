/* SPDX-License-Identifier: BSD-3-Clause */
/* ledger.c - the balance, in a file, under one global mutex. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "bank.h"

static pthread_mutex_t ledger_lock = PTHREAD_MUTEX_INITIALIZER;
static int fd = -1;

void ledger_open(const char *dir)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/ledger", dir);
    fd = open(path, O_RDWR | O_CREAT, 0644);
    if (fd < 0) {
        perror(path);
        exit(2);
    }
}

static long read_balance(void)
{
    char buf[32] = { 0 };
    ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    return n > 0 ? strtol(buf, NULL, 10) : 0;
}

void ledger_deposit(long amount)
{
    pthread_mutex_lock(&ledger_lock);
    long b = read_balance();
    usleep(200);
    char buf[32];
    int len = snprintf(buf, sizeof buf, "%020ld\n", b + amount);
    if (pwrite(fd, buf, (size_t)len, 0) != len)
        perror("pwrite");
    pthread_mutex_unlock(&ledger_lock);
}

long ledger_balance(void)
{
    pthread_mutex_lock(&ledger_lock);
    long b = read_balance();
    pthread_mutex_unlock(&ledger_lock);
    return b;
}
