/* SPDX-License-Identifier: BSD-3-Clause */
/* policy.c - the interposer's messages, the distributed half of a
 * wrapped call with the DISTLOCK_ON_ERROR policy applied (policy.h): an
 * outage is waited out (one warning every few seconds, the library's own
 * per-attempt warnings quieted meanwhile) or ends the program; and what
 * DISTLOCK_ON_LOSS says to do when a mapped hold is found lapsed. */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "dl.h"
#include "preload.h"

int dlp_on_error = DLP_ON_ERROR_WAIT;
int dlp_on_loss = DLP_ON_LOSS_WARN;
int dlp_on_loss_status;

/* ------------------------------------------------------------ messages */

static void vsay(const char *fmt, va_list ap)
{
    char line[1024];
    int n = snprintf(line, sizeof line, "distlock: ");
    vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
    size_t len = strlen(line);
    line[len++] = '\n';
    ssize_t w = write(STDERR_FILENO, line, len);
    (void)w;
}

void dlp_say(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsay(fmt, ap);
    va_end(ap);
}

void dlp_die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsay(fmt, ap);
    va_end(ap);
    abort();
}

/* Before main: one line, and the program does not start. */
void dlp_stop(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsay(fmt, ap);
    va_end(ap);
    _exit(1);
}

/* ---------------------------------------------------------- the policy */

#define WARN_EVERY_MS 5000

static uint64_t last_warn;             /* dl_now_ms of the last outage warning */
static pthread_mutex_t quiet_mu = PTHREAD_MUTEX_INITIALIZER;
static int quiet_n, quiet_saved;

static void warn_outage(const char *what)
{
    uint64_t now = dl_now_ms(), last = __atomic_load_n(&last_warn, __ATOMIC_RELAXED);
    if (last && now - last < WARN_EVERY_MS)
        return;
    if (!__atomic_compare_exchange_n(&last_warn, &last, now, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        return;
    dlp_say("%s; waiting for Redis (DISTLOCK_ON_ERROR=wait)", what);
}

/* While threads retry, the library's own per-attempt warning would repeat
 * every DISTLOCK_IO_TIMEOUT_MS: ours (every WARN_EVERY_MS) replaces it. */
static void quiet(int on)
{
    DLP_REAL(pthread_mutex_lock)(&quiet_mu);
    if (on && quiet_n++ == 0) {
        quiet_saved = dl_log_get_level();
        if (quiet_saved > DL_LOG_ERROR)
            dl_log_set_level(DL_LOG_ERROR);
    } else if (!on && --quiet_n == 0) {
        dl_log_set_level(quiet_saved);
    }
    DLP_REAL(pthread_mutex_unlock)(&quiet_mu);
}

const char *dlp_why(const dlp_entry_t *e, char *buf, size_t size)
{
    const char *d = dist_lasterror();
    if (!d[0])
        d = "Redis unreachable";
    if (strncmp(d, "lock \"", 6) == 0 || strncmp(d, "unlock \"", 8) == 0 ||
        strncmp(d, "condition", 9) == 0 || strncmp(d, "barrier", 7) == 0)
        snprintf(buf, size, "%s", d);
    else
        snprintf(buf, size, "%s \"%s\": %s", e->kind->what, e->name, d);
    return buf;
}

/* One attempt of the kind's distributed half. */
static int dist_call(dlp_entry_t *e, char mode, int how, clockid_t clk,
                     const struct timespec *abstime, const int *stop)
{
    const dlp_lockops_t *ops = e->kind->lock;
    if (stop && how == DLP_BLOCK && ops->acquire_stoppable)
        return ops->acquire_stoppable(e, mode, stop);
    return ops->acquire(e, mode, how, clk, abstime);
}

/* Has abstime passed on clk?  (The library's own test: a bad clock or
 * abstime counts as passed, which the call itself then refuses.) */
static int past(clockid_t clk, const struct timespec *abstime)
{
    return dl_passed_on(clk, abstime);
}

int dlp_dist_acquire(dlp_entry_t *e, char mode, int how, clockid_t clk,
                     const struct timespec *abstime, const int *stop)
{
    const dlp_lockops_t *ops = e->kind->lock;
    int quieted = 0, rc;
    for (;;) {
        uint64_t t0 = dl_now_ms();
        rc = dist_call(e, mode, how, clk, abstime, stop);
        if (rc == EOWNERDEAD && !(ops->robust && ops->robust(e))) {
            /* Acquired; legacy code has no way to hear about it. */
            dl_log(DL_LOG_WARN, "lock \"%s\": acquired after the previous holder's lease ran out "
                   "(it crashed or stalled); the protected state may be half-updated", e->name);
            rc = 0;
        }
        if (rc != EIO)
            break;
        char buf[700];
        if (dlp_on_error == DLP_ON_ERROR_ABORT)
            dlp_die("%s (DISTLOCK_ON_ERROR=abort)", dlp_why(e, buf, sizeof buf));
        warn_outage(dlp_why(e, buf, sizeof buf));
        if (how == DLP_TRY) {
            rc = EBUSY;               /* a try never waits: "not now" */
            break;
        }
        if (how == DLP_TIMED && past(clk, abstime)) {
            rc = ETIMEDOUT;
            break;
        }
        if (stop && __atomic_load_n(stop, __ATOMIC_ACQUIRE)) {
            rc = EINTR;
            break;
        }
        if (!quieted) {
            quiet(1);
            quieted = 1;
        }
        uint64_t spent = dl_now_ms() - t0;
        if (spent < 100)
            dl_sleep_ms((unsigned)(100 - spent));
    }
    if (quieted) {
        quiet(0);
        if (rc == 0)
            dlp_say("%s \"%s\": Redis reachable again", e->kind->what, e->name);
    }
    char buf[700];
    if (rc == EINVAL)
        dlp_die("%s", dlp_why(e, buf, sizeof buf));
    return rc;
}

int dlp_outage(dlp_entry_t *e, int *quieted, int how, clockid_t clk,
               const struct timespec *abstime)
{
    static __thread uint64_t last_try;
    char buf[700];
    if (dlp_on_error == DLP_ON_ERROR_ABORT)
        dlp_die("%s (DISTLOCK_ON_ERROR=abort)", dlp_why(e, buf, sizeof buf));
    warn_outage(dlp_why(e, buf, sizeof buf));
    if (how == DLP_TIMED && past(clk, abstime))
        return ETIMEDOUT;
    if (!*quieted) {
        quiet(1);
        *quieted = 1;
        last_try = 0;
    }
    uint64_t now = dl_now_ms();
    if (last_try && now - last_try < 100)
        dl_sleep_ms((unsigned)(100 - (now - last_try)));
    last_try = dl_now_ms();
    return 0;
}

void dlp_outage_end(dlp_entry_t *e, int quieted, int ok)
{
    if (!quieted)
        return;
    quiet(0);
    if (ok)
        dlp_say("%s \"%s\": Redis reachable again", e->kind->what, e->name);
}

void dlp_dist_interrupt(dlp_entry_t *e)
{
    if (e->kind->lock->interrupt)
        e->kind->lock->interrupt(e);
}

int dlp_dist_release(dlp_entry_t *e)
{
    int rc = e->kind->lock->release(e);
    char buf[700];
    switch (rc) {
    case 0:
    case ENOLCK:                      /* the library has said so; the hold is gone either way */
        return 0;
    case EIO:
        if (dlp_on_error == DLP_ON_ERROR_ABORT)
            dlp_die("%s (DISTLOCK_ON_ERROR=abort)", dlp_why(e, buf, sizeof buf));
        return 0;                     /* logged by the library; the hold lapses within a lease */
    default:
        return rc;
    }
}

/* ------------------------------------------------------------ losses */

int dlp_on_loss_parse(const char *v)
{
    unsigned long n;
    if (strcmp(v, "warn") == 0) {
        dlp_on_loss = DLP_ON_LOSS_WARN;
    } else if (strcmp(v, "abort") == 0) {
        dlp_on_loss = DLP_ON_LOSS_ABORT;
    } else if (strncmp(v, "exit:", 5) == 0 && dl_parse_ulong(v + 5, 0, 255, &n) == 0) {
        dlp_on_loss = DLP_ON_LOSS_EXIT;
        dlp_on_loss_status = (int)n;
    } else {
        return -1;
    }
    return 0;
}

/* A legacy program cannot hear of a lost hold: its thread goes on inside
 * what it believes is a critical section while another process may hold
 * the lock.  Called by the library's own thread (it must not block):
 * say so, and stop the program if asked to.  exit:N runs the program's
 * atexit handlers (its buffered output is written) without waiting for
 * its other threads. */
void dlp_loss_act(const char *line)
{
    /* abort, exit:N: the first to tell ends the program; another thread
     * telling meanwhile (the library's teller, a semaphore call) waits
     * for the end instead of saying it twice. */
    static int ending;
    if (dlp_on_loss != DLP_ON_LOSS_WARN && __atomic_exchange_n(&ending, 1, __ATOMIC_ACQ_REL))
        for (;;)
            pause();
    switch (dlp_on_loss) {
    case DLP_ON_LOSS_ABORT:
        dlp_die("%s (DISTLOCK_ON_LOSS=abort)", line);
    case DLP_ON_LOSS_EXIT:
        dlp_say("%s; exiting with status %d (DISTLOCK_ON_LOSS=exit:%d)", line,
                dlp_on_loss_status, dlp_on_loss_status);
        exit(dlp_on_loss_status);
    default:
        dlp_say("%s; the program goes on (DISTLOCK_ON_LOSS=warn)", line);
    }
}

void dlp_lost(const char *name, size_t namelen, uint64_t fence, void *arg)
{
    (void)arg;
    char line[512];
    /* A kind with words of its own for a loss of one of its entries (a
     * semaphore Redis lost: fence 0) says them; else it was a lock's hold. */
    for (const dlp_kind_t *const *k = dlp_kinds; *k; k++)
        if ((*k)->lost_words && (*k)->lost_words(name, namelen, fence, line, sizeof line)) {
            dlp_loss_act(line);
            return;
        }
    int len = namelen > 200 ? 200 : (int)namelen;
    snprintf(line, sizeof line, "lock \"%.*s\": the distributed hold (fence %llu) was found "
             "lapsed in Redis while held; another process may hold the lock now", len, name,
             (unsigned long long)fence);
    dlp_loss_act(line);
}

void dlp_policy_after_fork(void)
{
    pthread_mutex_init(&quiet_mu, NULL);
    quiet_n = 0;
}
