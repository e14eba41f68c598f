/* SPDX-License-Identifier: BSD-3-Clause */
/* teller.c - a window where at most N workers stand at once, counted by
 * a semaphore: each marks itself with a file while there and counts the
 * files it sees. */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bank.h"

static sem_t tellers;
static char window[4096];
static int seq;
static pthread_mutex_t seq_lock = PTHREAD_MUTEX_INITIALIZER;

void teller_init(const char *dir, unsigned n)
{
    snprintf(window, sizeof window, "%s/window", dir);
    if (sem_init(&tellers, 0, n)) {
        perror("sem_init");
        exit(2);
    }
}

static int at_window(void)
{
    DIR *d = opendir(window);
    int n = 0;
    struct dirent *de;
    while (d && (de = readdir(d)))
        n += de->d_name[0] != '.';
    if (d)
        closedir(d);
    return n;
}

int teller_serve(void)
{
    pthread_mutex_lock(&seq_lock);
    int me = seq++;
    pthread_mutex_unlock(&seq_lock);
    char f[4200];
    snprintf(f, sizeof f, "%s/%d.%d", window, (int)getpid(), me);
    while (sem_wait(&tellers))
        ;
    int fdw = open(f, O_CREAT | O_WRONLY, 0644);
    if (fdw >= 0)
        close(fdw);
    usleep(3000);
    int seen = at_window();
    unlink(f);
    sem_post(&tellers);
    return seen;
}
