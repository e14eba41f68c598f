/* SPDX-License-Identifier: BSD-3-Clause */
/* error.c - dist_strerror, the per-thread last error, and logging. */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "distlock.h"
#include "error.h"

int dl_log_level = DL_LOG_WARN;

int dl_log_set_level(int level)
{
    int old = dl_log_level;
    dl_log_level = level;
    return old;
}

int dl_log_get_level(void)
{
    return dl_log_level;
}

static __thread char dl_lasterr[DL_ERRMAX];

/* Formatted aside, then copied: a message may quote the one it replaces
 * ("...: %s", dist_lasterror()), and vsnprintf must not read the buffer
 * it writes.  (Error paths only: the copy costs nothing that matters.) */
static void set_lasterr(const char *fmt, va_list ap)
{
    char msg[DL_ERRMAX];
    vsnprintf(msg, sizeof msg, fmt, ap);
    memcpy(dl_lasterr, msg, sizeof msg);
}

void dl_seterr(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    set_lasterr(fmt, ap);
    va_end(ap);
}

int dl_fail(int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    set_lasterr(fmt, ap);
    va_end(ap);
    return code;
}

static pthread_mutex_t refused_mu = PTHREAD_MUTEX_INITIALIZER;
static char refused_why[DL_ERRMAX];
static int refused_set;            /* atomic: read without the mutex first */

void dl_refused_set(const char *why)
{
    if (!why && !__atomic_load_n(&refused_set, __ATOMIC_ACQUIRE))
        return;                        /* the usual case: nothing to clear */
    pthread_mutex_lock(&refused_mu);
    snprintf(refused_why, sizeof refused_why, "%s", why ? why : "");
    __atomic_store_n(&refused_set, why != NULL, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&refused_mu);
}

int dl_refused(void)
{
    return __atomic_load_n(&refused_set, __ATOMIC_ACQUIRE);
}

int dl_refused_rc(int rc)
{
    if (rc != EIO || !dl_refused())
        return rc;
    pthread_mutex_lock(&refused_mu);
    if (refused_set)
        snprintf(dl_lasterr, sizeof dl_lasterr, "%s", refused_why);
    int set = refused_set;
    pthread_mutex_unlock(&refused_mu);
    return set ? EINVAL : rc;
}

const char *dist_lasterror(void)
{
    return dl_lasterr;
}

const char *dist_strerror(int err)
{
    switch (err) {
    case 0: return "success";
    case EINVAL: return "invalid argument, lock object or configuration";
    case EBUSY: return "lock cannot be taken now: held by another thread or process, or by the caller";
    case ETIMEDOUT: return "timed out waiting for the lock";
    case EDEADLK: return "the calling thread already holds the lock";
    case EPERM: return "the calling thread does not hold the lock";
    case EOWNERDEAD: return "lock acquired, but its previous holder's lease ran out before it unlocked";
    case ENOLCK: return "the hold had already lapsed in Redis before unlock";
    case EAGAIN: return "the reentrancy or reader count would overflow";
    case ENOTRECOVERABLE: return "the lock is unrecoverable: a robust holder unlocked it after "
                                 "EOWNERDEAD without dist_mutex_consistent";
    case ENOENT: return "no such semaphore in Redis";
    case EIO: return "Redis unreachable or failing";
    case ENOMEM: return "out of memory";
    default: return "unknown distlock error";
    }
}

void dl_log(int level, const char *fmt, ...)
{
    static const char *names[] = { "off", "error", "warn", "info", "debug" };
    if (level > dl_log_level || level <= DL_LOG_OFF)
        return;
    char line[768];
    int n = snprintf(line, sizeof line, "distlock[%d] %s: ", (int)getpid(), names[level]);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
    va_end(ap);
    size_t len = strlen(line);
    line[len++] = '\n';
    /* One write, so lines of concurrent threads do not interleave. */
    ssize_t w = write(STDERR_FILENO, line, len);
    (void)w;
}

const char *dl_quote(const char *name, size_t len, char *buf, size_t size)
{
    /* Room kept at the end for `..."` and the NUL; a byte takes at most 4. */
    const size_t tail = 5;
    size_t o = 0;
    if (size < tail + 2) {
        buf[0] = 0;
        return buf;
    }
    buf[o++] = '"';
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)name[i];
        if (o + 4 + tail > size) {
            memcpy(buf + o, "...", 3);
            o += 3;
            break;
        }
        if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\')
            buf[o++] = (char)c;
        else
            o += (size_t)snprintf(buf + o, size - o, "\\x%02x", c);
    }
    buf[o++] = '"';
    buf[o] = 0;
    return buf;
}
