/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * keeper.h - the keeper (keeper.c): a small process that keeps the
 * distributed holds of file locks a program holds across exec (flock -F,
 * chpst -l, setlock, lckdo -e take the lock, then exec the command), so
 * that the command is protected whatever it is (static, setuid, or with
 * the interposer) and the lock is given back as soon as the command's
 * file lock ends.  Included through preload.h.
 */
#ifndef DLP_KEEPER_H
#define DLP_KEEPER_H

#include <stdint.h>
#include <sys/types.h>

#include "distlock.h"

#pragma GCC visibility push(hidden)

/* The keeper's process name (ps, /proc/PID/comm): kept.c checks it
 * before it signals one. */
#define DLP_KEEPER_COMM "distlock-keeper"

/* One hold handed to a keeper: which lock, the Redis hold as the
 * launcher's library has it (its process token names the holder; the
 * fence, the hold), and the file lock it stands for. */
typedef struct dlp_ticket {
    dlp_entry_t *e;           /* the flock entry (the keeper is a fork: same address) */
    int lkind;                /* DLP_FL_*: the file lock */
    int fd;
    dev_t dev;
    ino_t ino;
    char mode;                /* 'w' or 'r' */
    uint64_t fence, rid;
    unsigned servers;
    unsigned long lease_ms;
    int told;
    char token[40];
} dlp_ticket_t;

/* Before an exec of this process: the distributed holds of its file locks
 * as tickets (at most max); 0 when it has none, or is a vfork child (its
 * parent's memory, not its holds). */
int dlp_keeper_tickets(dlp_ticket_t *t, int max);

/* Hands tickets t[0..n) to a keeper for the exec that follows: started
 * now (two forks, a session of its own), or the one an exec that failed
 * started, given the new set.  The keeper waits until this process's
 * image is gone (its end of a close-on-exec pipe reads EOF: the exec
 * happened, or the process ended), then renews each hold and releases it
 * as soon as the process no longer holds its file lock (it ends, unlocks
 * or closes it: /proc/locks, its pidfd).  0 with the keeper's pid, or an
 * errno value (no process could be started) with dist_lasterror() set. */
int dlp_keeper_hand(const dlp_ticket_t *t, int n, pid_t *keeper);

/* In a forked child: the keeper and its pipe are the parent's (its copy
 * of the pipe is closed: the keeper waits for the parent's image only). */
void dlp_keeper_after_fork(void);

#pragma GCC visibility pop

#endif
