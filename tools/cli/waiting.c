/* SPDX-License-Identifier: BSD-3-Clause */
/* waiting.c - signals and the terminal status line while the lock call
 * blocks (see waiting.h). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include "break.h"
#include "lockstat.h"
#include "output.h"
#include "waiting.h"

#define FIRST_DRAW_MS 200     /* no line at all for a lock that comes at once */
#define REDRAW_MS 250
#define PEEK_TIMEOUT_MS 1000  /* the line's Redis calls never hold up signals longer */

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void write_all(const char *s, size_t n)
{
    while (n) {
        ssize_t k = write(STDERR_FILENO, s, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return;
        s += k;
        n -= (size_t)k;
    }
}

/* Rewrites the line in place: carriage return, the text cut to the
 * terminal's width (a wrapped line could not be rewritten), and spaces over
 * what is left of the previous one. */
static void draw(cli_waiting_t *w, const char *text)
{
    struct winsize ws;
    size_t cols = 80;
    if (ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 1)
        cols = ws.ws_col;
    size_t n = strlen(text);
    if (n > cols - 1)
        n = cols - 1;
    char line[1024];
    size_t o = 0;
    line[o++] = '\r';
    if (n > sizeof line - 2)
        n = sizeof line - 2;
    memcpy(line + o, text, n);
    o += n;
    for (size_t i = n; i < w->shown && o < sizeof line; i++)
        line[o++] = ' ';
    write_all(line, o);
    w->shown = n;
}

static void clear_line(cli_waiting_t *w)
{
    if (!w->shown)
        return;
    char line[1024];
    size_t n = w->shown < sizeof line - 2 ? w->shown : sizeof line - 2;
    line[0] = '\r';
    memset(line + 1, ' ', n);
    line[n + 1] = '\r';
    write_all(line, n + 2);
    w->shown = 0;
}

static int open_quick(cli_redis_t *r)
{
    if (cli_redis_open(r, PEEK_TIMEOUT_MS)) {
        cli_redis_close(r);
        return -1;
    }
    return 0;
}

/* One refresh of the status line. */
static void refresh(cli_waiting_t *w, cli_redis_t *r)
{
    char text[1024];
    cli_lockstat_t st;
    int have = 0;
    if (w->sem) {
        char q[200];
        snprintf(text, sizeof text, "waiting for a permit of semaphore %s",
                 cli_quote(w->name, w->namelen, q, sizeof q));
        draw(w, text);
        return;
    }
    if (!r->conn)
        open_quick(r);
    if (r->conn && cli_lockstat_fetch(r, w->name, w->namelen, &st) == 0)
        have = 1;
    cli_waitline_text(text, sizeof text, w->name, w->namelen, have ? &st : NULL);
    if (have)
        cli_lockstat_free(&st);
    draw(w, text);
}

void cli_die_by_signal(int sig)
{
    sigset_t one;
    sigemptyset(&one);
    sigaddset(&one, sig);
    signal(sig, SIG_DFL);
    raise(sig);                                  /* pending for this thread ... */
    pthread_sigmask(SIG_UNBLOCK, &one, NULL);    /* ... and delivered here */
    exit(128 + sig);                             /* a signal whose default is not to end */
}

/* A fatal signal while the lock call still blocks: leave the queue, then
 * end by the signal.  Called with w->mu held, which keeps the main thread
 * from going on should its lock call return meanwhile. */
static void give_up(cli_waiting_t *w, cli_redis_t *r, int sig)
{
    char q[200];
    clear_line(w);
    if (w->sem)
        cli_die_by_signal(sig);   /* a dead waiter never takes a permit */
    if (!r->conn)
        open_quick(r);
    if (!r->conn || cli_withdraw(r, w->name, w->namelen, w->token, w->mode))
        cli_note("could not leave the queue of %s (%s); the registration lapses within 2s",
                 cli_quote(w->name, w->namelen, q, sizeof q), r->err);
    cli_redis_close(r);
    cli_die_by_signal(sig);
}

static void *helper_main(void *arg)
{
    cli_waiting_t *w = arg;
    cli_redis_t r;
    memset(&r, 0, sizeof r);
    long long next_draw = now_ms() + FIRST_DRAW_MS;
    for (;;) {
        int timeout = -1;
        if (w->tty) {
            long long left = next_draw - now_ms();
            timeout = left > 0 ? (int)left : 0;
        }
        struct pollfd pfd[2] = { { w->stop[0], POLLIN, 0 }, { w->sigfd, POLLIN, 0 } };
        int n = poll(pfd, 2, timeout);
        if (n < 0 && errno != EINTR)
            break;
        if (n > 0 && pfd[0].revents)
            break;
        if (n > 0 && pfd[1].revents) {
            struct signalfd_siginfo si;
            while (read(w->sigfd, &si, sizeof si) == (ssize_t)sizeof si) {
                int sig = (int)si.ssi_signo;
                if (!sigismember(&w->fatal, sig))
                    continue;                    /* SIGCHLD, or one ignored at start */
                pthread_mutex_lock(&w->mu);
                if (!w->over)
                    give_up(w, &r, sig);         /* does not return */
                if (!w->caught)
                    w->caught = sig;
                pthread_mutex_unlock(&w->mu);
            }
        }
        if (w->tty && now_ms() >= next_draw) {
            refresh(w, &r);
            next_draw = now_ms() + REDRAW_MS;
        }
    }
    clear_line(w);
    cli_redis_close(&r);
    return NULL;
}

int cli_waiting_start(cli_waiting_t *w)
{
    w->started = 0;
    w->over = w->caught = 0;
    w->shown = 0;
    if (pipe2(w->stop, O_CLOEXEC))
        return -1;
    pthread_mutex_init(&w->mu, NULL);
    if (pthread_create(&w->thread, NULL, helper_main, w)) {
        close(w->stop[0]);
        close(w->stop[1]);
        pthread_mutex_destroy(&w->mu);
        return -1;
    }
    w->started = 1;
    return 0;
}

int cli_waiting_stop(cli_waiting_t *w)
{
    if (!w->started)
        return 0;
    pthread_mutex_lock(&w->mu);
    w->over = 1;
    pthread_mutex_unlock(&w->mu);
    ssize_t k = write(w->stop[1], "x", 1);
    (void)k;
    pthread_join(w->thread, NULL);
    close(w->stop[0]);
    close(w->stop[1]);
    pthread_mutex_destroy(&w->mu);
    w->started = 0;
    return w->caught;
}
