/* SPDX-License-Identifier: BSD-3-Clause */
/* kept.c - the file locks this program holds across exec whose
 * distributed holds a keeper keeps (kept.h), and what it tells the
 * keepers.
 *
 * A keeper is told by a signal carrying a value (SIGUSR1, SI_QUEUE): the
 * index of a ticket to let go of at once, or -1, "look now".  It is sent
 * through a pidfd opened for the occasion, once the process is seen to be
 * a keeper (its name), so a pid reused by another program is never
 * signalled; and a keeper heeds only the process it keeps for. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "dl.h"
#include "preload.h"

#define MAX_KEPT 64

typedef struct kept {
    pid_t pid;                /* the keeper */
    int index;                /* its ticket */
    dev_t dev;
    ino_t ino;
} kept_t;

static kept_t kept[MAX_KEPT];
static int nkept;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

static void lock(void) { DLP_REAL(pthread_mutex_lock)(&mu); }
static void unlock(void) { DLP_REAL(pthread_mutex_unlock)(&mu); }

/* A pidfd of keeper pid, or -1: the process is gone, or is no keeper. */
static int open_keeper(pid_t pid)
{
    int fd = (int)syscall(SYS_pidfd_open, pid, 0);
    if (fd < 0)
        return -1;
    char path[64], comm[32] = "";
    snprintf(path, sizeof path, "/proc/%d/comm", (int)pid);
    int cfd = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t n = cfd >= 0 ? read(cfd, comm, sizeof comm - 1) : -1;
    if (cfd >= 0)
        DLP_REAL(close)(cfd);
    comm[n > 0 ? n : 0] = 0;
    if (strcmp(comm, DLP_KEEPER_COMM "\n") != 0 ||
        syscall(SYS_pidfd_send_signal, fd, 0, NULL, 0) != 0) {
        DLP_REAL(close)(fd);
        return -1;
    }
    return fd;
}

/* Tells k's keeper `value`. */
static void tell(const kept_t *k, int value)
{
    int fd = open_keeper(k->pid);
    if (fd < 0)
        return;                       /* gone: it let go already */
    siginfo_t si;
    memset(&si, 0, sizeof si);
    si.si_signo = SIGUSR1;
    si.si_code = SI_QUEUE;
    si.si_pid = getpid();
    si.si_uid = getuid();
    si.si_value.sival_int = value;
    syscall(SYS_pidfd_send_signal, fd, SIGUSR1, &si, 0);
    DLP_REAL(close)(fd);
}

void dlp_kept_load(void)
{
    const char *v = secure_getenv(DLP_KEPT_VAR);
    if (!v || !*v)
        return;
    pid_t me = getpid();
    while (*v && nkept < MAX_KEPT) {
        long owner, pid, index;
        unsigned long long dev, ino;
        int used = 0;
        if (sscanf(v, "%ld:%ld:%ld:%llu:%llu%n", &owner, &pid, &index, &dev, &ino, &used) != 5)
            break;
        v += used;
        /* Only this process's (the list passes to its children too), and
         * only those a keeper still keeps. */
        int fd = owner == me ? open_keeper((pid_t)pid) : -1;
        if (fd < 0)
            continue;
        DLP_REAL(close)(fd);
        kept[nkept++] = (kept_t){ (pid_t)pid, (int)index, (dev_t)dev, (ino_t)ino };
        if (*v != ',')
            break;
        v++;
    }
}

static kept_t *find(dev_t dev, ino_t ino)
{
    for (int i = 0; i < nkept; i++)
        if (kept[i].dev == dev && kept[i].ino == ino)
            return &kept[i];
    return NULL;
}

int dlp_kept_any(void)
{
    return __atomic_load_n(&nkept, __ATOMIC_RELAXED) > 0;
}

int dlp_kept_has(dev_t dev, ino_t ino)
{
    if (!dlp_kept_any())
        return 0;
    lock();
    int has = find(dev, ino) != NULL;
    unlock();
    return has;
}

void dlp_kept_drop(dev_t dev, ino_t ino)
{
    if (!dlp_kept_any())
        return;
    lock();
    kept_t *k;
    while ((k = find(dev, ino))) {
        tell(k, k->index);
        *k = kept[--nkept];
    }
    unlock();
}

void dlp_kept_forget(dev_t dev, ino_t ino)
{
    lock();
    kept_t *k;
    while ((k = find(dev, ino)))
        *k = kept[--nkept];
    unlock();
}

void dlp_kept_poke(dev_t dev, ino_t ino)
{
    if (!dlp_kept_any())
        return;
    lock();
    kept_t *k = find(dev, ino);
    if (k)
        tell(k, -1);
    unlock();
}

void dlp_kept_add(pid_t pid, int index, dev_t dev, ino_t ino)
{
    lock();
    if (nkept < MAX_KEPT)
        kept[nkept++] = (kept_t){ pid, index, dev, ino };
    unlock();
}

size_t dlp_kept_format(char *buf, size_t size)
{
    size_t o = 0;
    if (size)
        buf[0] = 0;
    lock();
    for (int i = 0; i < nkept; i++) {
        int n = snprintf(o < size ? buf + o : NULL, o < size ? size - o : 0,
                         "%s%d:%d:%d:%llu:%llu", i ? "," : "", (int)getpid(), (int)kept[i].pid,
                         kept[i].index,
                         (unsigned long long)kept[i].dev, (unsigned long long)kept[i].ino);
        o += (size_t)(n > 0 ? n : 0);
    }
    unlock();
    return o + 1;
}

void dlp_kept_after_fork(void)
{
    /* A forked child holds none of the POSIX locks, and its flock locks
     * are shared with the parent, whose keepers these are. */
    nkept = 0;
    pthread_mutex_init(&mu, NULL);
}
