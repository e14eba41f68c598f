/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * waiting.h - a helper thread for while the lock call blocks.
 *
 * The library's lock calls cannot be interrupted, so while the main thread
 * is inside one, this thread takes the signals (all of them are blocked and
 * read from a signalfd) and, on a terminal, keeps a status line up to date:
 *
 *   waiting for "NAME": held by HOST:PID (thread T) for 12.4s, 2 waiting
 *
 * A SIGINT, SIGTERM, SIGHUP, ... while waiting ends distlock by that signal,
 * after taking this process out of the lock's queue in Redis (and passing
 * the lock on if it was granted at that instant), so a waiter that gave up
 * never holds up the others.
 */
#ifndef CLI_WAITING_H
#define CLI_WAITING_H

#include <pthread.h>
#include <signal.h>
#include <stddef.h>

typedef struct cli_waiting {
    /* Set by the caller before cli_waiting_start. */
    const char *name;
    size_t namelen;
    char mode;                /* 'w' or 'r': what the queue entry asks for */
    int sem;                  /* -N: a semaphore's permit, not a lock: no
                                 status line of holders, and a waiter killed
                                 leaves the queue within its registration's
                                 life (2 s), taking no permit */
    const char *token;        /* this process's owner token in Redis */
    int sigfd;                /* signalfd of the blocked signals */
    sigset_t fatal;           /* signals that end distlock while it waits */
    int tty;                  /* draw the status line on stderr */

    /* Internal. */
    pthread_t thread;
    int started;
    int stop[2];              /* a pipe: written when the lock call returned */
    pthread_mutex_t mu;
    int over;                 /* the lock call returned (mu) */
    int caught;               /* a fatal signal read after that (mu) */
    size_t shown;             /* width of the line on the terminal */
} cli_waiting_t;

/* Starts the helper.  0, or -1 (then the caller waits without it). */
int cli_waiting_start(cli_waiting_t *w);

/* The lock call returned: stops the helper and clears the line.  Returns
 * the fatal signal that arrived in the meantime, or 0. */
int cli_waiting_stop(cli_waiting_t *w);

/* Ends the process by sig, as if it had not been blocked (so the shell
 * sees "killed by SIGINT"); falls back to exit(128 + sig). */
void cli_die_by_signal(int sig) __attribute__((noreturn));

#endif
