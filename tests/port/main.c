/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * main.c - bank DIR THREADS JOBS BARRIER_COUNT TELLERS
 *
 * THREADS workers (each with its own tally under a lock of its own, on
 * the heap) wait at a barrier of BARRIER_COUNT, then take JOBS jobs from
 * the queue that main fills: each job is a deposit of 1 to the ledger, an
 * audit note, a journal write and check, and a visit to the tellers'
 * window.  Prints what it saw: "deposits=D torn=T window_max=W early=E".
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bank.h"

struct worker {
    pthread_t th;
    pthread_mutex_t mu;               /* on the heap: this process's own */
    long done;
};

static pthread_barrier_t start_line;
static long barrier_total;
static char arrivals[4096];
static long torn, early, window_max;
static pthread_mutex_t tally_lock = PTHREAD_MUTEX_INITIALIZER;

static void *work(void *arg)
{
    struct worker *w = arg;
    int fd = open(arrivals, O_WRONLY | O_APPEND | O_CREAT, 0644);
    if (fd < 0 || write(fd, "a", 1) != 1)
        exit(2);
    pthread_barrier_wait(&start_line);
    struct stat st;
    fstat(fd, &st);
    close(fd);
    long e = st.st_size < barrier_total;
    long t = 0, seen_max = 0;
    for (long job; (job = queue_take()) >= 0;) {
        ledger_deposit(1);
        audit_note();
        journal_write(job);
        t += !journal_check();
        int seen = teller_serve();
        if (seen > seen_max)
            seen_max = seen;
        pthread_mutex_lock(&w->mu);
        w->done++;
        pthread_mutex_unlock(&w->mu);
    }
    pthread_mutex_lock(&tally_lock);
    torn += t;
    early += e;
    if (seen_max > window_max)
        window_max = seen_max;
    pthread_mutex_unlock(&tally_lock);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 6) {
        fprintf(stderr, "usage: bank DIR THREADS JOBS BARRIER_COUNT TELLERS\n");
        return 2;
    }
    const char *dir = argv[1];
    int threads = atoi(argv[2]);
    long jobs = atol(argv[3]);
    barrier_total = atol(argv[4]);
    snprintf(arrivals, sizeof arrivals, "%s/arrivals", dir);
    char win[4200];
    snprintf(win, sizeof win, "%s/window", dir);
    mkdir(win, 0755);
    ledger_open(dir);
    journal_open(dir);
    audit_init(dir);
    teller_init(dir, (unsigned)atoi(argv[5]));
    if (pthread_barrier_init(&start_line, NULL, (unsigned)barrier_total))
        return 2;
    struct worker *ws = calloc((size_t)threads, sizeof *ws);
    for (int i = 0; i < threads; i++) {
        pthread_mutex_init(&ws[i].mu, NULL);
        pthread_create(&ws[i].th, NULL, work, &ws[i]);
    }
    for (long j = 0; j < jobs; j++)
        queue_put(j);
    queue_close();
    long done = 0;
    for (int i = 0; i < threads; i++) {
        pthread_join(ws[i].th, NULL);
        pthread_mutex_lock(&ws[i].mu);
        done += ws[i].done;
        pthread_mutex_unlock(&ws[i].mu);
        pthread_mutex_destroy(&ws[i].mu);
    }
    free(ws);
    pthread_barrier_destroy(&start_line);
    printf("deposits=%ld torn=%ld window_max=%ld early=%ld\n", done, torn, window_max, early);
    return 0;
}
