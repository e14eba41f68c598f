/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * filelock.h - the process-owned distributed holds behind mapped file
 * locks (filelock.c): each taken and released by a helper thread of its
 * own.  Included through preload.h.
 */
#ifndef DLP_FILELOCK_H
#define DLP_FILELOCK_H

#include <sys/types.h>

#pragma GCC visibility push(hidden)

enum { DLP_FL_FLOCK = 1, DLP_FL_POSIX, DLP_FL_OFD };

/* Number of distributed file-lock holds of this process: when 0, close()
 * is a plain call. */
extern int dlp_fheld;

/* Takes (or converts to) mode 'r'/'w' the process's distributed hold for
 * a local lock of `kind` just taken on fd.  0, EWOULDBLOCK (nonblock and
 * held elsewhere), ENOLCK (no room, no helper thread). */
int dlp_file_acquire(dlp_entry_t *e, int kind, int fd, dev_t dev, ino_t ino, char mode, int nonblock);
/* Ends the process's distributed hold for a lock of `kind` on fd (found by
 * descriptor for flock/OFD locks, by file for POSIX locks); 0 if none. */
void dlp_file_release(int kind, int fd, dev_t dev, ino_t ino);
/* close(fd) happened: ends what the kernel released with it. */
void dlp_file_closed(int fd, dev_t dev, ino_t ino);
/* A distributed hold of one of this process's file locks, as the exec
 * wrappers hand it on. */
typedef struct dlp_filehold {
    dlp_entry_t *e;
    int kind;                 /* DLP_FL_* */
    int fd;
    dev_t dev;
    ino_t ino;
    char mode;
} dlp_filehold_t;
/* The holds this process has now, at most max of them; 0 in a vfork
 * child (the records are its parent's). */
int dlp_file_holds(dlp_filehold_t *out, int max);
/* At exit: ends every hold. */
void dlp_file_release_all(void);
/* In a forked child: the parent's holds are not ours. */
void dlp_file_after_fork(void);
void dlp_file_init(void);

#pragma GCC visibility pop

#endif
