/* SPDX-License-Identifier: BSD-3-Clause */
/* job_runner: run a job on whichever host gets the lock first, and deal
 * with the two ways a hold ends badly:
 *   EOWNERDEAD  the last runner died mid-job: repair from its journal first
 *   ENOLCK      our own hold lapsed before we finished: do not trust the result
 * and with the ordinary ones: ETIMEDOUT (someone else runs it), EIO (Redis
 * unreachable: try again later).
 *
 *   ./job_runner JOURNAL   shows a crash, the repair, then an overrun
 */
#include <distlock.h>

#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static dist_mutex_t job;
static const char *journal;

static void note(const char *what)
{
    FILE *f = fopen(journal, "a");
    if (f) { fprintf(f, "%s\n", what); fclose(f); }
}

static int interrupted(void)        /* a "started" with no "done" after it */
{
    char line[64], last[64] = "";
    FILE *f = fopen(journal, "r");
    if (!f) return 0;
    while (fgets(line, sizeof line, f)) strcpy(last, line);
    fclose(f);
    return strncmp(last, "started", 7) == 0;
}

/* Returns the lock call's code: 0 or EOWNERDEAD ran the job. */
static int run_job(int work_ms, int *unlock_rc)
{
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += 10;                /* give up if another host runs it */

    int rc = dist_mutex_timedlock(&job, &deadline);
    if (rc == ETIMEDOUT || rc == EIO) {
        fprintf(stderr, "skipped: %s (%s)\n", dist_strerror(rc), dist_lasterror());
        return rc;
    }
    if (rc == EOWNERDEAD && interrupted()) {
        printf("previous run died mid-job: rolling its step back\n");
        note("rolled back");
    }
    note("started");
    usleep(work_ms * 1000);               /* the job */
    note("done");
    *unlock_rc = dist_mutex_unlock(&job);
    if (*unlock_rc == ENOLCK)
        printf("job overran its lease: another runner may have started; re-check\n");
    return rc;
}

int main(int argc, char **argv)
{
    dist_mutexattr_t a;
    int urc = 0, rc1, rc2, st;

    if (argc != 2) { fprintf(stderr, "usage: %s JOURNAL\n", argv[0]); return 2; }
    journal = argv[1];
    dist_mutexattr_init(&a);
    dist_mutexattr_setlease(&a, 400);     /* a job must end within 400 ms */
    dist_mutex_init(&job, "example:nightly-job", &a);

    if (fork() == 0) {                    /* a runner that crashes mid-job */
        dist_mutex_lock(&job);
        note("started");
        _exit(1);                         /* no unlock: the lease runs out */
    }
    wait(&st);
    rc1 = run_job(50, &urc);              /* EOWNERDEAD, repairs, runs */
    printf("after a crash: %s; unlock: %s\n", dist_strerror(rc1), dist_strerror(urc));
    rc2 = run_job(700, &urc);             /* runs past its 400 ms lease */
    printf("overrun: unlock gave %s\n", dist_strerror(urc));
    dist_mutex_destroy(&job);
    return rc1 == EOWNERDEAD && rc2 == 0 && urc == ENOLCK ? 0 : 1;
}
