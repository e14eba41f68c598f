/* SPDX-License-Identifier: BSD-3-Clause */
/* top.c - distlock top (top.h).
 *
 * On a terminal: a screen redrawn like top(1)'s.  A reader thread reads
 * Redis every interval (a reading may take up to the I/O time-out when
 * Redis is unreachable, and a stopped server would otherwise freeze the
 * keys); the screen thread waits in poll(2) for a key, a fresh reading or
 * a signal (SIGWINCH, SIGINT, SIGTERM, SIGHUP, SIGTSTP: each written to a
 * pipe by its handler), so q quits at once whatever Redis does.
 *
 * Elsewhere (or with -b): plain text, one snapshot, or one per interval
 * with -d or -n; no thread.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "distlock.h"
#include "dl.h"
#include "output.h"
#include "redis.h"
#include "snapshot.h"
#include "term.h"
#include "top.h"
#include "topview.h"

static long long mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static long long real_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* HH:MM:SS of a CLOCK_REALTIME time, local. */
static const char *clock_text(long long ms, char *buf, size_t size)
{
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    localtime_r(&t, &tm);
    strftime(buf, size, "%H:%M:%S", &tm);
    return buf;
}

/* How long a reading may wait for Redis: the interval, between 1 and 5 s,
 * so that an unreachable Redis is reported within a refresh or so; an
 * explicit DISTLOCK_IO_TIMEOUT_MS wins. */
static unsigned long read_timeout(const cli_view_opts_t *v)
{
    if (getenv("DISTLOCK_IO_TIMEOUT_MS"))
        return 0;
    double ms = v->interval_s * 1000.0;
    return ms < 1000 ? 1000 : ms > 5000 ? 5000 : (unsigned long)ms;
}

/* Control bytes of a message (Redis's, the library's) as '?': it goes on
 * a screen. */
static void tame(char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f)
            *s = '?';
}

/* ================================================================ plain */

static int plain_one(cli_redis_t *r, const cli_opts_t *o, int first)
{
    cli_snapshot_t s;
    if (cli_snapshot_take(r, o->view.pattern, o->view.limit, &s))
        return -1;
    cli_snapshot_sort(&s, o->view.sort, o->view.reverse);
    char when[64], target[400], sum[600];
    time_t t = (time_t)(s.at_ms / 1000);
    struct tm tm;
    localtime_r(&t, &tm);
    strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", &tm);
    if (!first)
        putchar('\n');
    printf("distlock top %s, %s: %s\n", when, cli_topview_target(&r->cfg, target, sizeof target),
           cli_topview_summary(&s, sum, sizeof sum));
    if (s.truncated)
        printf("more than %lu objects under the prefix: only %lu read (--limit)\n", o->view.limit,
               o->view.limit);
    cli_lines_t l = { 0 };
    cli_topview_table(&l, &s, 1);
    for (size_t i = 0; i < l.n; i++)
        printf("%s\n", l.v[i]);
    int oom = l.oom;
    cli_lines_free(&l);
    cli_snapshot_free(&s);
    if (oom) {
        cli_redis_oom(r);
        return -1;
    }
    return 0;
}

static void sleep_until(long long due)
{
    long long left;
    while ((left = due - mono_ms()) > 0) {
        struct timespec ts = { (time_t)(left / 1000), (long)(left % 1000) * 1000000L };
        nanosleep(&ts, NULL);
    }
}

static int plain(const cli_opts_t *o)
{
    const cli_view_opts_t *v = &o->view;
    unsigned long n = v->iterations ? v->iterations : v->has_interval ? 0 : 1;
    long long interval = (long long)(v->interval_s * 1000.0 + 0.5);
    cli_redis_t r;
    int open = 0, rc = 0, shown = 0;
    long long next = mono_ms();
    for (unsigned long it = 0; n == 0 || it < n; it++) {
        if (it)
            sleep_until(next);
        next = mono_ms() + interval;
        if (!open) {
            if ((rc = cli_redis_open(&r, read_timeout(v)))) {
                cli_err("%s", r.err);
                return rc;
            }
            open = 1;
        }
        if (plain_one(&r, o, !shown) == 0) {
            shown = 1;
            rc = 0;
        } else {
            rc = cli_redis_exit_code(&r);
            if (n == 1) {
                cli_err("%s", r.err);
            } else {
                /* A clear line, and the next interval tries again (with a
                 * fresh connection). */
                char why[sizeof r.err];
                cli_err("%s; retrying in %.1fs", cli_outage_text(r.err, 1, why, sizeof why),
                        v->interval_s);
            }
            cli_redis_close(&r);
            open = 0;
        }
        if (fflush(stdout) != 0 || ferror(stdout)) {
            cli_err("cannot write the output");
            rc = CLI_EX_OSERR;
            break;
        }
    }
    if (open)
        cli_redis_close(&r);
    return rc;
}

/* ================================================================ screen */

/* What the reader thread and the screen share, under mu. */
typedef struct shared {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int quit;                 /* screen -> reader: stop */
    int now;                  /* screen -> reader: read now */
    int reading;              /* the reader is reading */
    long long reading_since;  /* mono ms */
    /* reader -> screen */
    cli_snapshot_t fresh;
    int have_fresh;
    unsigned long done;       /* readings finished, with or without success */
    int failing;              /* the last reading failed */
    char err[512];
    long long fail_since;     /* real ms of the first failure in a row */
    unsigned fails;           /* failures in a row */
    int wake;                 /* the pipe's write end: a reading finished */

    const cli_opts_t *o;
    dl_config_t cfg;          /* for the title */
} shared_t;

static void *reader(void *arg)
{
    shared_t *sh = arg;
    const cli_view_opts_t *v = &sh->o->view;
    long long interval = (long long)(v->interval_s * 1000.0 + 0.5);
    cli_redis_t r;
    int open = 0;
    long long due = 0;
    for (;;) {
        pthread_mutex_lock(&sh->mu);
        while (!sh->quit && !sh->now && mono_ms() < due) {
            long long t = real_ms() + (due - mono_ms());
            struct timespec ts = { (time_t)(t / 1000), (long)(t % 1000) * 1000000L };
            pthread_cond_timedwait(&sh->cv, &sh->mu, &ts);
        }
        if (sh->quit) {
            pthread_mutex_unlock(&sh->mu);
            break;
        }
        sh->now = 0;
        sh->reading = 1;
        sh->reading_since = mono_ms();
        pthread_mutex_unlock(&sh->mu);
        due = mono_ms() + interval;

        cli_snapshot_t s;
        int ok = 0;
        if (!open && cli_redis_open(&r, read_timeout(v)) == 0)
            open = 1;
        if (open)
            ok = cli_snapshot_take(&r, v->pattern, v->limit, &s) == 0;

        pthread_mutex_lock(&sh->mu);
        sh->reading = 0;
        sh->done++;
        if (ok) {
            if (sh->have_fresh)
                cli_snapshot_free(&sh->fresh);
            sh->fresh = s;
            sh->have_fresh = 1;
            sh->failing = 0;
            sh->fails = 0;
        } else {
            snprintf(sh->err, sizeof sh->err, "%s", r.err);
            tame(sh->err);
            if (!sh->fails++)
                sh->fail_since = real_ms();
            sh->failing = 1;
        }
        pthread_mutex_unlock(&sh->mu);
        if (!ok && open) {
            cli_redis_close(&r);      /* the next reading connects afresh */
            open = 0;
        }
        ssize_t w = write(sh->wake, "r", 1);
        (void)w;
    }
    if (open)
        cli_redis_close(&r);
    return NULL;
}

/* ---------------------------------------------------------------- signals */

static int sig_w = -1;

static void on_signal(int sig)
{
    int e = errno;
    unsigned char c = (unsigned char)sig;
    ssize_t w = write(sig_w, &c, 1);
    (void)w;
    errno = e;
}

static const int handled[] = { SIGINT, SIGTERM, SIGHUP, SIGWINCH, SIGTSTP, SIGCONT };
#define NHANDLED (sizeof handled / sizeof handled[0])

static void set_handlers(int on)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on ? on_signal : SIG_DFL;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    for (size_t i = 0; i < NHANDLED; i++)
        sigaction(handled[i], &sa, NULL);
}

/* ---------------------------------------------------------------- drawing */

typedef struct screen {
    shared_t *sh;
    cli_snapshot_t snap;      /* the one shown */
    int have;
    int sort, rev, details;
    unsigned long shown;      /* readings taken from the reader */
} screen_t;

static int put_all(const char *s, size_t n)
{
    while (n) {
        ssize_t w = write(STDOUT_FILENO, s, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        s += w;
        n -= (size_t)w;
    }
    return 0;
}

static const char *const sort_said[CLI_SORTS][2] = {
    { "waiters", "fewest waiters" }, { "hold age", "youngest hold" },
    { "wait", "shortest wait" }, { "name", "name, Z to A" },
};

static int draw(screen_t *sc)
{
    shared_t *sh = sc->sh;
    const cli_view_opts_t *v = &sh->o->view;
    int rows, cols;
    cli_term_size(&rows, &cols);
    char target[400], sum[600], when[32], since[32], status[900], why[600];

    pthread_mutex_lock(&sh->mu);
    int failing = sh->failing, reading = sh->reading;
    long long reading_for = reading ? mono_ms() - sh->reading_since : 0;
    unsigned fails = sh->fails;
    long long fail_since = sh->fail_since;
    char err[sizeof sh->err];
    snprintf(err, sizeof err, "%s", sh->err);
    pthread_mutex_unlock(&sh->mu);

    cli_lines_t l = { 0 };
    char extra[300] = "";
    if (strcmp(sh->cfg.prefix, "distlock:") != 0)
        snprintf(extra, sizeof extra, ", prefix %.200s", sh->cfg.prefix);
    if (v->pattern) {
        size_t n = strlen(extra);
        snprintf(extra + n, sizeof extra - n, ", names %.60s", v->pattern);
    }
    tame(extra);
    cli_lines_add(&l, CLI_T_BOLD "distlock top" CLI_T_OFF " - %s, %s%s, every %.1fs, by %s",
                  sc->have ? clock_text(sc->snap.at_ms, when, sizeof when) : "--:--:--",
                  cli_topview_target(&sh->cfg, target, sizeof target), extra, v->interval_s,
                  sort_said[sc->sort][sc->rev]);
    cli_lines_add(&l, "%s", sc->have ? cli_topview_summary(&sc->snap, sum, sizeof sum) : "");
    cli_lines_add(&l, "keys: w a t n sort by waiters, hold age, wait, name; r reverse; "
                      "d details; q quit");
    /* The status line: what is wrong, or blank. */
    status[0] = 0;
    if (failing)
        snprintf(status, sizeof status, "%s; retrying every %.1fs (%u %s since %s)%s%s",
                 cli_outage_text(err, 0, why, sizeof why), v->interval_s, fails,
                 fails == 1 ? "try" : "tries", clock_text(fail_since, since, sizeof since),
                 sc->have ? ", view of " : "",
                 sc->have ? clock_text(sc->snap.at_ms, when, sizeof when) : "");
    else if (reading && reading_for >= 1000)
        snprintf(status, sizeof status, "reading Redis (%.0fs)...", (double)reading_for / 1000.0);
    else if (sc->have && sc->snap.truncated)
        snprintf(status, sizeof status,
                 "more than %lu objects under the prefix: only %lu read (--limit)", v->limit,
                 v->limit);
    else if (!sc->have)
        snprintf(status, sizeof status, "reading Redis...");
    if (status[0])
        cli_lines_add(&l, CLI_T_REV "%s" CLI_T_OFF, status);
    else
        cli_lines_add(&l, "%s", "");
    size_t head = l.n;
    if (sc->have) {
        cli_snapshot_sort(&sc->snap, sc->sort, sc->rev);
        cli_topview_table(&l, &sc->snap, sc->details);
    }
    if (l.oom) {
        cli_lines_free(&l);
        return -1;
    }

    /* Each line at its row (no scrolling), cut to the width; what does not
     * fit is counted on the last row. */
    char *frame = NULL;
    size_t flen = 0;
    FILE *f = open_memstream(&frame, &flen);
    if (!f) {
        cli_lines_free(&l);
        return -1;
    }
    fputs(CLI_T_HOME, f);
    size_t fit = l.n <= (size_t)rows ? l.n : (size_t)rows - 1;
    for (size_t i = 0; i < fit; i++) {
        const char *s = l.v[i];
        size_t n = cli_term_fit(s, strlen(s), (size_t)cols);
        fprintf(f, "\033[%zu;1H%s%.*s" CLI_T_OFF CLI_T_EOL, i + 1, i == head ? CLI_T_REV : "",
                (int)n, s);
    }
    if (fit < l.n)
        fprintf(f, "\033[%zu;1H... %zu more line%s (a taller window, or d: details off)" CLI_T_EOL,
                fit + 1, l.n - fit, l.n - fit == 1 ? "" : "s");
    fputs(CLI_T_EOS, f);
    fclose(f);
    cli_lines_free(&l);
    int rc = frame ? put_all(frame, flen) : -1;
    free(frame);
    return rc;
}

/* Takes the reader's fresh reading, if any.  Returns readings finished. */
static unsigned long take_fresh(screen_t *sc)
{
    shared_t *sh = sc->sh;
    pthread_mutex_lock(&sh->mu);
    if (sh->have_fresh) {
        if (sc->have)
            cli_snapshot_free(&sc->snap);
        sc->snap = sh->fresh;
        sc->have = 1;
        sh->have_fresh = 0;
        memset(&sh->fresh, 0, sizeof sh->fresh);
    }
    unsigned long done = sh->done;
    pthread_mutex_unlock(&sh->mu);
    return done;
}

/* A key: 0 to go on, 1 to quit. */
static int on_key(screen_t *sc, char c)
{
    switch (c) {
    case 'q': case 'Q': return 1;
    case 'w': case 'W': sc->sort = CLI_SORT_WAITERS; break;
    case 'a': case 'A': sc->sort = CLI_SORT_AGE; break;
    case 't': case 'T': sc->sort = CLI_SORT_WAIT; break;
    case 'n': case 'N': sc->sort = CLI_SORT_NAME; break;
    case 'r': case 'R': sc->rev = !sc->rev; break;
    case 'd': case 'D': sc->details = !sc->details; break;
    case ' ':
        pthread_mutex_lock(&sc->sh->mu);
        sc->sh->now = 1;
        pthread_cond_signal(&sc->sh->cv);
        pthread_mutex_unlock(&sc->sh->mu);
        break;
    }
    return 0;
}

/* ^Z: the terminal as it was while stopped, and ours again after. */
static void suspend(int keys)
{
    cli_term_leave();
    signal(SIGTSTP, SIG_DFL);
    raise(SIGTSTP);
    /* continued */
    set_handlers(1);
    cli_term_enter(keys);
}

static int screen(const cli_opts_t *o)
{
    shared_t sh;
    memset(&sh, 0, sizeof sh);
    sh.o = o;
    if (dl_config_load(&sh.cfg)) {
        cli_err("%s", dist_lasterror());
        return CLI_EX_CONFIG;
    }
    int wake[2], sig[2];
    if (pipe2(wake, O_CLOEXEC | O_NONBLOCK) || pipe2(sig, O_CLOEXEC | O_NONBLOCK)) {
        cli_err("pipe: %s", strerror(errno));
        return CLI_EX_OSERR;
    }
    sh.wake = wake[1];
    sig_w = sig[1];
    pthread_mutex_init(&sh.mu, NULL);
    pthread_cond_init(&sh.cv, NULL);
    /* The library's messages would tear the screen: top says what matters
     * on its status line. */
    dl_log_set_level(DL_LOG_OFF);

    /* The reader runs with the handled signals blocked: they are the
     * screen's, and never interrupt a round trip. */
    sigset_t block, old;
    sigemptyset(&block);
    for (size_t i = 0; i < NHANDLED; i++)
        sigaddset(&block, handled[i]);
    pthread_sigmask(SIG_BLOCK, &block, &old);
    pthread_t th;
    int err = pthread_create(&th, NULL, reader, &sh);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (err) {
        cli_err("cannot start a thread: %s", strerror(err));
        return CLI_EX_OSERR;
    }

    int keys = isatty(STDIN_FILENO);
    set_handlers(1);
    cli_term_enter(keys);
    screen_t sc = { &sh, { 0 }, 0, o->view.sort, o->view.reverse, 1, 0 };
    unsigned long want = o->view.iterations;
    int quit = 0, rc = 0;
    draw(&sc);
    while (!quit) {
        struct pollfd p[3] = { { wake[0], POLLIN, 0 }, { sig[0], POLLIN, 0 },
                               { keys ? STDIN_FILENO : -1, POLLIN, 0 } };
        /* Wakes each second anyway: the "reading Redis (3s)" line moves. */
        int n = poll(p, 3, 1000);
        if (n < 0 && errno != EINTR)
            break;
        char buf[64];
        if (n > 0 && (p[1].revents & POLLIN)) {
            ssize_t got = read(sig[0], buf, sizeof buf);
            for (ssize_t i = 0; i < got; i++) {
                if (buf[i] == SIGTSTP)
                    suspend(keys);
                else if (buf[i] != SIGWINCH && buf[i] != SIGCONT)
                    quit = 1;
            }
        }
        if (n > 0 && (p[2].revents & POLLIN)) {
            ssize_t got = read(STDIN_FILENO, buf, sizeof buf);
            if (got <= 0)
                keys = 0;             /* the terminal is gone: signals still work */
            for (ssize_t i = 0; i < got && !quit; i++)
                quit = on_key(&sc, buf[i]);
        } else if (n > 0 && (p[2].revents & (POLLHUP | POLLERR))) {
            keys = 0;
        }
        if (n > 0 && (p[0].revents & POLLIN)) {
            ssize_t got = read(wake[0], buf, sizeof buf);
            (void)got;
        }
        sc.shown = take_fresh(&sc);
        if (quit)
            break;
        if (draw(&sc)) {
            rc = CLI_EX_OSERR;        /* the terminal is gone */
            break;
        }
        if (want && sc.shown >= want)
            break;
    }
    cli_term_leave();
    set_handlers(0);

    /* A reader that is waiting ends at once; one stuck in a round trip
     * (Redis stopped) is not waited for: the process ends under it. */
    pthread_mutex_lock(&sh.mu);
    sh.quit = 1;
    pthread_cond_signal(&sh.cv);
    pthread_mutex_unlock(&sh.mu);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += 300 * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    if (pthread_timedjoin_np(th, NULL, &ts) != 0)
        _exit(rc);
    if (sc.have)
        cli_snapshot_free(&sc.snap);
    if (sh.have_fresh)
        cli_snapshot_free(&sh.fresh);
    close(wake[0]);
    close(wake[1]);
    close(sig[0]);
    close(sig[1]);
    return rc;
}

int cli_top(const cli_opts_t *o)
{
    if (!o->view.batch && isatty(STDOUT_FILENO))
        return screen(o);
    return plain(o);
}
