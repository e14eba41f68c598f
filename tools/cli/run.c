/* SPDX-License-Identifier: BSD-3-Clause */
/* run.c - distlock [options] NAME -- COMMAND: take the lock, run the
 * command as a child, keep the hold (the library's watchdog renews it),
 * release it when the child ends however it ends, and exit with the child's
 * status.
 *
 * With -N COUNT the hold is one of COUNT leased permits of the semaphore
 * NAME (DIST_SEM_LEASED: renewed by the watchdog while distlock lives,
 * back within one lease if it dies), given back with a post.
 *
 * Signals: from the start every signal distlock forwards is blocked and read
 * from a signalfd, so none is lost between taking the lock and starting the
 * child, and none kills distlock while it holds the lock.  While the lock
 * call blocks, the waiting helper (waiting.c) reads them; while the child
 * runs, the main thread does, and forwards each to the child.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "main.h"
#include "run.h"
#include "distlock.h"
#include "mutex.h"
#include "rwlock.h"
#include "sem_api.h"
#include "output.h"
#include "process.h"
#include "waiting.h"

#define POLL_MS 100           /* how often the child and the hold are checked */

/* Forwarded to the child while it runs; end distlock while it waits. */
static const int forwarded[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2 };
#define NFORWARDED (sizeof forwarded / sizeof forwarded[0])

/* The lock, a mutex for -x and a read-write lock for -s.  Both use the same
 * Redis keys: a mutex holder is a writer, so -x and -s exclude each other.
 * With -N, a leased semaphore instead (names of its own). */
typedef struct held_lock {
    int shared;
    int sem;
    dist_mutex_t m;
    dist_rwlock_t rw;
    dist_sem_t s;
} held_lock_t;

typedef struct sigstate {
    sigset_t orig_mask;       /* the child gets it back */
    sigset_t fatal;           /* forwarded signals not ignored at start */
    int sigchld_ignored;      /* SIGCHLD was SIG_IGN: the child gets that back */
    int fd;                   /* signalfd */
} sigstate_t;

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---------------------------------------------------------------- signals */

static int signals_setup(sigstate_t *s)
{
    sigset_t block;
    sigemptyset(&block);
    sigemptyset(&s->fatal);
    for (size_t i = 0; i < NFORWARDED; i++) {
        struct sigaction sa;
        sigaddset(&block, forwarded[i]);
        /* A signal ignored at start (nohup's SIGHUP, SIGINT in a background
         * job of a script) stays ignored: it neither ends distlock nor is
         * forwarded; the child inherits the ignoring. */
        if (sigaction(forwarded[i], NULL, &sa) == 0 && sa.sa_handler != SIG_IGN)
            sigaddset(&s->fatal, forwarded[i]);
    }
    sigaddset(&block, SIGCHLD);
    /* waitpid needs SIGCHLD not ignored (else children are reaped by the
     * kernel); it is put back for the child. */
    struct sigaction sa;
    s->sigchld_ignored = sigaction(SIGCHLD, NULL, &sa) == 0 && sa.sa_handler == SIG_IGN;
    if (s->sigchld_ignored)
        signal(SIGCHLD, SIG_DFL);
    /* Before any thread exists, so that every thread inherits the mask. */
    if (pthread_sigmask(SIG_BLOCK, &block, &s->orig_mask))
        return -1;
    s->fd = signalfd(-1, &block, SFD_CLOEXEC | SFD_NONBLOCK);
    return s->fd < 0 ? -1 : 0;
}

/* A fatal signal already pending (read off the signalfd), or 0. */
static int pending_fatal(const sigstate_t *s)
{
    struct signalfd_siginfo si;
    while (read(s->fd, &si, sizeof si) == (ssize_t)sizeof si)
        if (sigismember(&s->fatal, (int)si.ssi_signo))
            return (int)si.ssi_signo;
    return 0;
}

/* ---------------------------------------------------------------- the lock */

static int lock_init(held_lock_t *l, const cli_opts_t *o)
{
    l->shared = o->mode == 'r';
    l->sem = o->permits != 0;
    if (l->sem)
        return dist_sem_init(&l->s, o->name, (unsigned)o->permits, DIST_SEM_LEASED);
    if (l->shared)
        return dist_rwlock_init(&l->rw, o->name, NULL);
    dist_mutexattr_t a;
    dist_mutexattr_init(&a);
    dist_mutexattr_setfair(&a, o->fair);
    int rc = dist_mutex_init(&l->m, o->name, &a);
    dist_mutexattr_destroy(&a);
    return rc;
}

/* The semaphore's codes as the lock's: EBUSY no permit free now. */
static int sem_take(held_lock_t *l, const cli_opts_t *o, const struct timespec *at)
{
    int rc = o->nonblock ? dist_sem_trywait(&l->s)
           : at ? dist_sem_timedwait(&l->s, at) : dist_sem_wait(&l->s);
    return rc == EAGAIN ? EBUSY : rc;
}

static int lock_take(held_lock_t *l, const cli_opts_t *o)
{
    if (l->sem && !o->has_wait)
        return sem_take(l, o, NULL);
    if (o->nonblock)
        return l->shared ? dist_rwlock_tryrdlock(&l->rw) : dist_mutex_trylock(&l->m);
    if (o->has_wait) {
        struct timespec at;
        clock_gettime(CLOCK_REALTIME, &at);
        double whole = (double)(long long)o->wait_s;
        at.tv_sec += (time_t)whole;
        at.tv_nsec += (long)((o->wait_s - whole) * 1e9);
        if (at.tv_nsec >= 1000000000L) {
            at.tv_sec++;
            at.tv_nsec -= 1000000000L;
        }
        if (l->sem)
            return sem_take(l, o, &at);
        return l->shared ? dist_rwlock_timedrdlock(&l->rw, &at) : dist_mutex_timedlock(&l->m, &at);
    }
    return l->shared ? dist_rwlock_rdlock(&l->rw) : dist_mutex_lock(&l->m);
}

static int lock_release(held_lock_t *l)
{
    if (l->sem) {
        /* A leased permit that lapsed says ENOLCK, as a lock's unlock
         * does (and so does a semaphore Redis lost); EPERM, none held any
         * more (its lapse was told already), is the same news. */
        int rc = dist_sem_post(&l->s);
        return rc == EPERM ? ENOLCK : rc;
    }
    return l->shared ? dist_rwlock_unlock(&l->rw) : dist_mutex_unlock(&l->m);
}

static void lock_destroy(held_lock_t *l)
{
    if (l->sem)
        dist_sem_destroy(&l->s);
    else if (l->shared)
        dist_rwlock_destroy(&l->rw);
    else
        dist_mutex_destroy(&l->m);
}

/* A semaphore's permit has no fence to give the command: 0. */
static int lock_fence(held_lock_t *l, uint64_t *fence)
{
    if (l->sem) {
        *fence = 0;
        return 0;
    }
    return l->shared ? dist_rwlock_getfence(&l->rw, fence) : dist_mutex_getfence(&l->m, fence);
}

static int lock_lost(held_lock_t *l)
{
    if (l->sem)
        return dl_sem_held_count(&l->s) == 0;
    return (l->shared ? dl_rwlock_hold_lost(&l->rw) : dl_mutex_hold_lost(&l->m)) == 1;
}

/* Releases the hold; says so if it had lapsed without us noticing. */
static void release(held_lock_t *l, const char *q, int lost_reported)
{
    int rc = lock_release(l);
    if (rc == ENOLCK && !lost_reported)
        cli_err("the hold on %s had lapsed in Redis before the command ended "
                "(lease ran out, or the lock was broken or deleted)", q);
    else if (rc && rc != ENOLCK)
        cli_err("could not release %s: %s; it frees when its lease runs out", q,
                dist_lasterror()[0] ? dist_lasterror() : dist_strerror(rc));
    else if (rc == 0)
        cli_note("released %s", q);
}

/* ---------------------------------------------------------------- the child */

/* In the child after fork: only async-signal-safe calls. */
static void exec_failed(const char *what, int err) __attribute__((noreturn));
static void exec_failed(const char *what, int err)
{
    const char *why = err == ENOENT ? "command not found"
                    : err == EACCES ? "permission denied"
                    : err == ENOEXEC ? "not an executable format"
                    : err == ENOTDIR ? "not a directory in the path"
                    : err == ELOOP ? "too many symbolic links"
                    : err == E2BIG ? "argument list too long"
                    : err == ENOMEM ? "out of memory" : "cannot execute";
    char line[600];
    size_t o = 0, n;
    const char *parts[] = { "distlock: ", what, ": ", why, "\n" };
    for (size_t i = 0; i < 5; i++) {
        n = strlen(parts[i]);
        if (o + n >= sizeof line)
            n = sizeof line - 1 - o;
        memcpy(line + o, parts[i], n);
        o += n;
    }
    ssize_t k = write(STDERR_FILENO, line, o);
    (void)k;
    _exit(err == ENOENT || err == ENOTDIR ? CLI_EX_NOTFOUND : CLI_EX_NOEXEC);
}

static pid_t spawn(const cli_opts_t *o, const sigstate_t *s, char **envp)
{
    /* argv for -c, built before fork: the child must not allocate. */
    char *sh_argv[] = { "sh", "-c", (char *)o->shell_cmd, NULL };
    pid_t pid = fork();
    if (pid != 0)
        return pid;
    if (s->sigchld_ignored)
        signal(SIGCHLD, SIG_IGN);
    pthread_sigmask(SIG_SETMASK, &s->orig_mask, NULL);
    if (o->shell_cmd) {
        execve("/bin/sh", sh_argv, envp);
        exec_failed("/bin/sh", errno);
    }
    execvpe(o->argv_cmd[0], o->argv_cmd, envp);
    exec_failed(o->argv_cmd[0], errno);
}

static int exit_code_of(int status)
{
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    if (WIFSIGNALED(status))
        return 128 + WTERMSIG(status);
    return CLI_EX_OSERR;
}

/* Waits for the child, forwarding signals and watching the hold. */
static int supervise(const cli_opts_t *o, const sigstate_t *s, held_lock_t *l, pid_t child,
                     const char *q, int *lost_reported)
{
    int status = 0;
    for (;;) {
        struct pollfd pfd = { s->fd, POLLIN, 0 };
        poll(&pfd, 1, POLL_MS);
        struct signalfd_siginfo si;
        while (read(s->fd, &si, sizeof si) == (ssize_t)sizeof si) {
            int sig = (int)si.ssi_signo;
            if (!sigismember(&s->fatal, sig))
                continue;
            /* The terminal sends Ctrl-C (and Ctrl-\) to the whole foreground
             * process group, child included: sending it again would deliver
             * it twice. */
            if (si.ssi_code == SI_KERNEL)
                continue;
            kill(child, sig);
            cli_note("passed signal %d (%s) on to the command", sig, strsignal(sig));
        }
        pid_t w = waitpid(child, &status, WNOHANG);
        if (w == child)
            break;
        if (w < 0 && errno != EINTR) {
            cli_err("waitpid: %s", strerror(errno));
            return CLI_EX_OSERR;
        }
        if (!*lost_reported && lock_lost(l)) {
            *lost_reported = 1;
            cli_err("lost the %s %s while the command runs: Redis no longer has the hold "
                    "(lease ran out, or the %s was broken or deleted)%s",
                    l->sem ? "permit of semaphore" : "lock", q, l->sem ? "semaphore" : "lock",
                    o->kill_on_loss ? "; sending the command SIGTERM" : "");
            if (o->kill_on_loss)
                kill(child, SIGTERM);
        }
    }
    int code = exit_code_of(status);
    if (WIFSIGNALED(status))
        cli_note("the command was killed by signal %d (%s)", WTERMSIG(status),
                 strsignal(WTERMSIG(status)));
    else
        cli_note("the command exited with status %d", code);
    return code;
}

/* ---------------------------------------------------------------- cli_run */

/* The library's message without its leading `lock "NAME": `, which ours
 * already says. */
static const char *without_lock_name(const char *msg)
{
    if (strncmp(msg, "lock \"", 6) == 0) {
        const char *end = strstr(msg + 6, "\": ");
        if (end)
            return end + 3;
    }
    return msg;
}

/* The lock call's result -> what to do.  Returns -1 when the lock is held
 * (go on), else the exit code. */
static int outcome(const cli_opts_t *o, int rc, const char *q, long long waited_ms)
{
    switch (rc) {
    case 0:
        return -1;
    case EOWNERDEAD:
        cli_warn("%s: the previous holder's lease ran out before it unlocked (or the lock was "
                 "broken); what it protects may be half-updated", q);
        return -1;
    case EBUSY:
        if (o->permits)
            cli_note("no permit of %s is free; giving up (-n)", q);
        else
            cli_note("%s is held elsewhere; giving up (-n)", q);
        return o->conflict_code;
    case ETIMEDOUT:
        cli_note("timed out after %.1fs waiting for %s", (double)waited_ms / 1000.0, q);
        return o->conflict_code;
    case EIO:
        cli_err("cannot take %s: %s", q, without_lock_name(dist_lasterror()));
        return CLI_EX_UNAVAILABLE;
    case EINVAL:
        cli_err("%s", dist_lasterror());
        return CLI_EX_CONFIG;
    case ENOMEM:
        cli_err("out of memory");
        return CLI_EX_OSERR;
    default:
        cli_err("lock %s: %s", q, dist_strerror(rc));
        return CLI_EX_SOFTWARE;
    }
}

int cli_run(const cli_opts_t *o)
{
    char q[600];
    cli_quote(o->name, o->namelen, q, sizeof q);
    sigstate_t s;
    if (signals_setup(&s)) {
        cli_err("cannot set up signal handling: %s", strerror(errno));
        return CLI_EX_OSERR;
    }
    held_lock_t l;
    int rc = lock_init(&l, o);
    int perr = 0;
    dl_proc_t *proc = rc ? NULL : dl_proc_get(&perr);   /* reads the configuration */
    if (rc || !proc) {
        cli_err("%s", dist_lasterror());
        return (rc ? rc : perr) == EINVAL ? CLI_EX_CONFIG : CLI_EX_OSERR;
    }

    cli_waiting_t w;
    memset(&w, 0, sizeof w);
    w.name = o->name;
    w.namelen = o->namelen;
    w.mode = o->mode;
    w.sem = o->permits != 0;
    w.token = proc->token;
    w.sigfd = s.fd;
    w.fatal = s.fatal;
    w.tty = isatty(STDERR_FILENO);
    if (cli_waiting_start(&w))
        cli_note("cannot start the waiting helper; signals wait until the lock is taken");

    long long t0 = now_ms();
    rc = lock_take(&l, o);
    int sig = cli_waiting_stop(&w);
    long long waited = now_ms() - t0;
    int code = outcome(o, rc, q, waited);
    if (code >= 0) {
        lock_destroy(&l);
        if (sig)
            cli_die_by_signal(sig);
        return code;
    }

    uint64_t fence = 0;
    lock_fence(&l, &fence);
    if (o->permits)
        cli_note("got a permit of %s (one of %lu) after %.3fs", q, o->permits,
                 (double)waited / 1000.0);
    else
        cli_note("got %s (%s, fence %llu) after %.3fs", q, o->mode == 'r' ? "shared" : "exclusive",
                 (unsigned long long)fence, (double)waited / 1000.0);
    /* A signal that came while we took the lock, before there was a child
     * to pass it to: the user wanted out, so do not start the command. */
    if (!sig)
        sig = pending_fatal(&s);
    if (sig) {
        release(&l, q, 0);
        lock_destroy(&l);
        cli_die_by_signal(sig);
    }

    char fencebuf[32];
    snprintf(fencebuf, sizeof fencebuf, "%llu", (unsigned long long)fence);
    char **envp = cli_child_env(fencebuf);
    if (!envp) {
        cli_err("out of memory");
        release(&l, q, 0);
        lock_destroy(&l);
        return CLI_EX_OSERR;
    }
    pid_t child = spawn(o, &s, envp);
    if (child < 0) {
        cli_err("cannot start the command: fork: %s", strerror(errno));
        free(envp);
        release(&l, q, 0);
        lock_destroy(&l);
        return CLI_EX_OSERR;
    }
    free(envp);
    cli_note("running the command (pid %d)", (int)child);

    int lost_reported = 0;
    code = supervise(o, &s, &l, child, q, &lost_reported);
    release(&l, q, lost_reported);
    lock_destroy(&l);
    close(s.fd);
    return code;
}
