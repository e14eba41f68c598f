/* SPDX-License-Identifier: BSD-3-Clause */
/* wrap_exec.c - execve, execv, execvp, execvpe, execl, execlp, execle,
 * fexecve and execveat: a file lock held across exec keeps its
 * distributed hold.
 *
 * A process that execs with distributed file-lock holds (flock -F,
 * chpst -l, setlock, lckdo -e: lock, then exec the command) hands each
 * to a keeper first (keeper.c), which renews it for as long as the
 * command holds the file lock and releases it when the lock ends, what
 * ever the command is (statically linked, setuid, with the interposer or
 * not).  The command's environment gets DLP_KEPT_VAR, the list of kept
 * locks (kept.h), so that a command with the interposer knows its
 * inherited lock is kept; a process started with kept locks passes its
 * list on through its own execs.  If no keeper can be started the exec
 * is refused (the command never runs unprotected), with a line that
 * names what works instead.
 *
 * A process with no holds and no kept locks (every other exec) goes
 * straight to libc.  posix_spawn is not wrapped: its child is another
 * process, which holds none of the POSIX locks and whose flock
 * descriptions the parent keeps (wrap_file.c's shared-description rule). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "dl.h"
#include "preload.h"

extern char **environ;

static int sys_execve(const char *path, char *const argv[], char *const envp[])
{
    return (int)syscall(SYS_execve, path, argv, envp);
}

static int exec_missing(void)
{
    errno = ENOSYS;
    return -1;
}

/* dlsym never execs: the fallbacks are never used. */
DLP_REAL_FN(int, execve, (const char *p, char *const a[], char *const e[]), (p, a, e), NULL,
            sys_execve, sys_execve(p, a, e))
DLP_REAL_FN(int, execvpe, (const char *f, char *const a[], char *const e[]), (f, a, e), NULL,
            exec_missing, (errno = ENOSYS, -1))
DLP_REAL_FN(int, fexecve, (int fd, char *const a[], char *const e[]), (fd, a, e), NULL,
            exec_missing, (errno = ENOSYS, -1))
DLP_REAL_FN(int, execveat, (int d, const char *p, char *const a[], char *const e[], int fl),
            (d, p, a, e, fl), NULL, exec_missing, (errno = ENOSYS, -1))

#define KEPT_PREFIX DLP_KEPT_VAR "="

/* What an exec takes with it: the environment to pass (envp itself when
 * nothing is to be handed on). */
typedef struct carry {
    char *const *envp;
    char **made;                  /* the environment built, to free if the exec fails */
    char *var;
} carry_t;

/* "the command" for messages: the file, else argv[0]. */
static const char *what_of(const char *file, char *const argv[])
{
    if (file && *file)
        return file;
    return argv && argv[0] ? argv[0] : "the command";
}

/* Before an exec of `file` (argv, envp): hands this process's holds to a
 * keeper and builds the environment that names every kept lock.  0, or -1
 * with errno: the exec is refused. */
static int prepare(carry_t *c, const char *file, char *const argv[], char *const envp[])
{
    c->envp = envp;
    c->made = NULL;
    c->var = NULL;
    if (DLP_LIKELY(!__atomic_load_n(&dlp_fheld, __ATOMIC_RELAXED)) && !dlp_kept_any())
        return 0;
    int saved_in = dlp_in;
    dlp_in = 1;
    dlp_ticket_t t[64];
    int n = dlp_keeper_tickets(t, 64);
    if (n > 0) {
        pid_t keeper;
        int rc = dlp_keeper_hand(t, n, &keeper);
        if (rc) {
            const char *cmd = what_of(file, argv);
            dlp_say("lock \"%s\" (%s): exec of %.200s refused: the lock is held across exec and "
                    "no keeper could be started to keep its distributed hold (%s), so %.200s would "
                    "run unprotected; hold it around the command instead: flock %s %.200s, or "
                    "distlock %s -- %.200s", t[0].e->name, t[0].e->target, cmd,
                    dist_lasterror(), cmd, t[0].e->target, cmd, t[0].e->name, cmd);
            dlp_in = saved_in;
            errno = rc;
            return -1;
        }
        for (int i = 0; i < n; i++) {
            /* Already kept (an exec that failed handed it before) or not:
             * its keeper's ticket is this index now. */
            dlp_kept_forget(t[i].dev, t[i].ino);
            dlp_kept_add(keeper, i, t[i].dev, t[i].ino);
        }
    }
    /* The environment: envp without DLP_KEPT_VAR, then the list. */
    size_t need = dlp_kept_format(NULL, 0);
    size_t count = 0;
    while (envp && envp[count])
        count++;
    c->made = malloc((count + 2) * sizeof *c->made);
    c->var = malloc(sizeof KEPT_PREFIX + need);
    if (!c->made || !c->var) {
        free(c->made);
        free(c->var);
        c->made = NULL;
        c->var = NULL;
        dlp_in = saved_in;
        errno = ENOMEM;
        return -1;
    }
    size_t k = 0;
    for (size_t i = 0; i < count; i++)
        if (strncmp(envp[i], KEPT_PREFIX, sizeof KEPT_PREFIX - 1) != 0)
            c->made[k++] = envp[i];
    memcpy(c->var, KEPT_PREFIX, sizeof KEPT_PREFIX - 1);
    dlp_kept_format(c->var + sizeof KEPT_PREFIX - 1, need);
    if (need > 1)
        c->made[k++] = c->var;
    c->made[k] = NULL;
    c->envp = c->made;
    dlp_in = saved_in;
    return 0;
}

/* The exec returned: it failed.  The keeper keeps waiting (for another
 * attempt, or this process's end). */
static int failed(carry_t *c, int rc)
{
    int err = errno;
    free(c->made);
    free(c->var);
    errno = err;
    return rc;
}

static int do_execve(const char *path, char *const argv[], char *const envp[])
{
    carry_t c;
    if (prepare(&c, path, argv, envp))
        return -1;
    return failed(&c, DLP_REAL(execve)(path, argv, c.envp));
}

static int do_execvpe(const char *file, char *const argv[], char *const envp[])
{
    carry_t c;
    if (prepare(&c, file, argv, envp))
        return -1;
    return failed(&c, DLP_REAL(execvpe)(file, argv, c.envp));
}

DLP_EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
    return do_execve(path, argv, envp);
}

DLP_EXPORT int execv(const char *path, char *const argv[])
{
    return do_execve(path, argv, environ);
}

DLP_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
    return do_execvpe(file, argv, envp);
}

DLP_EXPORT int execvp(const char *file, char *const argv[])
{
    return do_execvpe(file, argv, environ);
}

DLP_EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
    carry_t c;
    if (prepare(&c, NULL, argv, envp))
        return -1;
    return failed(&c, DLP_REAL(fexecve)(fd, argv, c.envp));
}

DLP_EXPORT int execveat(int dirfd, const char *path, char *const argv[], char *const envp[],
                        int flags)
{
    carry_t c;
    if (prepare(&c, path, argv, envp))
        return -1;
    return failed(&c, DLP_REAL(execveat)(dirfd, path, argv, c.envp, flags));
}

/* execl, execlp, execle: their arguments as an argv (as glibc builds it),
 * then the v variant. */
#define ARGV_OF(arg, ap, argv)                                       \
    size_t argc_ = 1;                                                \
    va_start(ap, arg);                                               \
    while (va_arg(ap, const char *))                                 \
        argc_++;                                                     \
    va_end(ap);                                                      \
    char *argv[argc_ + 1];                                           \
    argv[0] = (char *)arg;                                           \
    va_start(ap, arg);                                               \
    for (size_t i_ = 1; i_ <= argc_; i_++)                           \
        argv[i_] = va_arg(ap, char *)

DLP_EXPORT int execl(const char *path, const char *arg, ...)
{
    va_list ap;
    ARGV_OF(arg, ap, argv);
    va_end(ap);
    return do_execve(path, argv, environ);
}

DLP_EXPORT int execlp(const char *file, const char *arg, ...)
{
    va_list ap;
    ARGV_OF(arg, ap, argv);
    va_end(ap);
    return do_execvpe(file, argv, environ);
}

DLP_EXPORT int execle(const char *path, const char *arg, ...)
{
    va_list ap;
    ARGV_OF(arg, ap, argv);
    char *const *envp = va_arg(ap, char *const *);
    va_end(ap);
    return do_execve(path, argv, envp);
}
