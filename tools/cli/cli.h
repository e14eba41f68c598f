/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cli.h - what every part of the distlock command-line tool shares: the
 * parsed command line and the exit codes.
 *
 * The tool is split by concern, each file with its header of the same name
 * (options.h, main.h, run.h, ...):
 *   options.c  the command line of every command -> cli_opts_t (usage
 *              errors); usage.c its --help text
 *   main.c     dispatch, and the environment the library reads on first use
 *   run.c      NAME -- COMMAND: take the lock, run the child, release
 *   waiting.c  while the lock call blocks: signals and the terminal status line
 *   redis.c    the way to Redis: the library's config, conn, keys and scripts
 *   lockstat.c a lock's state for the waiting line, read by lua/status.lua
 *              through objfetch.c (on redlock://, the servers' views merged
 *              by its script entry)
 *   scan.c     the keys under the prefix, on every server (SCAN)
 *   break.c    break (a lock's, a semaphore's), and a waiter leaving a queue
 *              (the library's scripts)
 *   commands.c the status, list and break subcommands, on every kind
 *   output.c   messages, quoting, durations, JSON and tables
 * status, list, break, top and metrics (the objects of every kind):
 *   objects.c  the kinds shown, each with its decoder (objlock.c: locks,
 *              objsem.c: semaphores, objcond.c: conditions)
 *   objfetch.c the state of objects, each read by its kind's status script,
 *              pipelined
 *   objscan.c  the objects under the prefix, found by their keys (scan.c)
 *   snapshot.c one reading of them all, and its orders
 *   top.c      distlock top: the refresh loop, its reader thread, keys
 *   topview.c  the table top shows (screen and plain)
 *   term.c     the terminal: raw keys, the alternate screen, its size
 *   metrics.c  distlock metrics: the Prometheus text format
 */
#ifndef CLI_H
#define CLI_H

#include <stddef.h>
#include <sysexits.h>

/* Exit codes.  The conflict code (default 1) is -E's; the command's own
 * status passes through; the rest follow flock(1) and sysexits(3). */
#define CLI_EX_USAGE EX_USAGE               /* 64: bad command line */
#define CLI_EX_UNAVAILABLE EX_UNAVAILABLE   /* 69: Redis unreachable or failing */
#define CLI_EX_SOFTWARE EX_SOFTWARE         /* 70: unexpected library error */
#define CLI_EX_OSERR EX_OSERR               /* 71: fork, pipe, out of memory */
#define CLI_EX_CONFIG EX_CONFIG             /* 78: bad DISTLOCK_* environment */
#define CLI_EX_NOEXEC 126                   /* the command is not executable */
#define CLI_EX_NOTFOUND 127                 /* the command was not found */
#define CLI_EX_FREE 1                       /* status: the lock is free; break: nothing held */

enum cli_cmd { CLI_RUN, CLI_STATUS, CLI_LIST, CLI_BREAK, CLI_HELP, CLI_VERSION, CLI_TOP, CLI_METRICS };

/* What top and metrics were asked for (cli_opts_t.view). */
typedef struct cli_view_opts {
    const char *pattern;      /* glob on names, NULL for all */
    double interval_s;        /* -d: seconds between refreshes (1) */
    int has_interval;         /* -d given */
    unsigned long iterations; /* -n: refreshes before it ends; 0 no end */
    int batch;                /* -b: plain output, even on a terminal */
    int sort;                 /* -o: enum cli_sort (snapshot.h) */
    int reverse;              /* -r: the other way round */
    unsigned long limit;      /* --limit: objects read at most */
    unsigned long names;      /* metrics --names: series by name at most */
    const char *output;       /* metrics --output FILE */
} cli_view_opts_t;

#define CLI_VIEW_LIMIT 10000UL    /* --limit's default */
#define CLI_VIEW_NAMES 100UL      /* --names' default */

typedef struct cli_opts {
    int cmd;                  /* enum cli_cmd */
    const char *name;         /* the lock name (run, status, break) */
    size_t namelen;
    const char *pattern;      /* list: glob on lock names, NULL for all */

    /* run */
    char mode;                /* 'w' exclusive (-x, default), 'r' shared (-s) */
    int nonblock;             /* -n, or -w 0 */
    int has_wait;             /* -w given (and not 0) */
    double wait_s;            /* -w SECONDS */
    int conflict_code;        /* -E N: exit code on conflict or time-out */
    int fair;                 /* --fair */
    unsigned long lease_ms;   /* --lease MS, 0 when not given */
    int kill_on_loss;         /* --kill-on-loss */
    unsigned long permits;    /* -N COUNT: one of COUNT leased permits of the
                                 semaphore NAME instead of the lock; 0: a lock */
    const char *shell_cmd;    /* -c 'shell command' */
    char **argv_cmd;          /* -- COMMAND [ARG...], NULL-terminated */

    /* every command */
    const char *url;          /* --url URL */
    int verbose;              /* -v */

    /* status, list, break */
    int json;                 /* --json */
    int all;                  /* list --all: free locks too */
    int force;                /* break --force */
    int kind;                 /* --kind: DL_KIND_*, -1 every kind */
    const char *holder;       /* break --holder HOST:PID (a semaphore's) */

    cli_view_opts_t view;     /* top, metrics */
} cli_opts_t;

#endif
