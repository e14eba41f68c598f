/* SPDX-License-Identifier: BSD-3-Clause */
/* tls_relay.c - the relay threads between hiredis's end of a socketpair
 * and each TLS session, and what keeps fork() and the end of the process
 * away from threads inside OpenSSL (see tls_relay.h). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "tls_relay.h"

static int used;                  /* OpenSSL is in use: there may be relays */

void dl_tls_mark_used(void)
{
    __atomic_store_n(&used, 1, __ATOMIC_RELEASE);
}

/* Held (shared) by every thread that is inside OpenSSL on a connection:
 * the relays between two polls, a handshake between two waits.  fork()
 * takes it exclusively (prepare handler), so a child never starts with an
 * OpenSSL lock or a half-done allocation of one of our threads: it may
 * then make TLS connections of its own with the same context.  Writers
 * first: busy relays must not keep a fork waiting. */
pthread_rwlock_t dl_tls_busy = PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP;
/* At the very end of the process (the last destructor: after the
 * program's atexit handlers, which may still unlock over TLS), stop the
 * relay threads where they are: none is then inside OpenSSL or halfway
 * through freeing a session while the process is torn down (leak
 * checkers saw such a half-freed session). */
__attribute__((destructor(101))) static void quiesce_at_exit(void)
{
    if (__atomic_load_n(&used, __ATOMIC_ACQUIRE))
        pthread_rwlock_wrlock(&dl_tls_busy);
}

/* ----------------------------------------------------------------- relays */

typedef struct relay {
    struct relay *next;
    SSL *ssl;
    int tcp, app;             /* the TLS socket, and our end of the socketpair */
    int user;                 /* the user's end (hiredis's fd) */
    /* The TLS transport's adopt (tls_direct.c): the user takes the
     * session over; the relay stops at the user's shutdown without
     * closing it, and says so. */
    int detach, detached;
    pthread_t thread;         /* joinable: the TLS transport's adopt
                                 (tls_direct.c) waits for its end */
    pthread_mutex_t mu;
    pthread_cond_t cv;
} relay_t;

/* Live relays, so a forked child can close its copies of their sockets:
 * it has no relay threads, and must neither write on the parent's TLS
 * sessions nor keep their connections open.  A relay leaves the list and
 * closes its sockets under relays_mu, so the child never closes a
 * descriptor number that was reused meanwhile. */
static pthread_mutex_t relays_mu = PTHREAD_MUTEX_INITIALIZER;
static relay_t *relays;
/* A forked child's copy of its parent's relays: kept reachable, never
 * used (no thread of the child runs them). */
static relay_t *parents_relays;

/* dl_tls_busy before relays_mu: a handshake holds busy when it registers its
 * relay (the other order would deadlock with it). */
/* Whether fork_prepare took the locks (TLS in use): a program that never
 * used TLS forks without touching them.  Under the interposer that
 * matters: its launchers (timeout, sh...) must make no pthread lock call
 * of their own, and these calls must never be tail calls, whose return
 * address would be libc's instead of ours (shim/preload/table.c tells the
 * library's own calls by it). */
static int fork_locked;

static void fork_prepare(void)
{
    fork_locked = __atomic_load_n(&used, __ATOMIC_ACQUIRE);
    if (!fork_locked)
        return;
    pthread_rwlock_wrlock(&dl_tls_busy);
    pthread_mutex_lock(&relays_mu);
    __asm__ __volatile__("" ::: "memory");
}

static void fork_parent(void)
{
    if (!fork_locked)
        return;
    pthread_mutex_unlock(&relays_mu);
    pthread_rwlock_unlock(&dl_tls_busy);
    __asm__ __volatile__("" ::: "memory");
}

static void fork_child(void)
{
    if (!fork_locked)
        return;
    /* The SSL objects stay as they are (reachable, never used): freeing
     * one the parent's thread was using could touch a half-updated
     * state, and SSL_free sends nothing anyway. */
    for (relay_t *r = relays; r; r = r->next) {
        if (r->tcp >= 0)
            close(r->tcp);
        if (r->app >= 0)
            close(r->app);
        r->tcp = r->app = -1;
    }
    /* Out of the list the child's own connections use: a connection of
     * the child whose descriptor has the number of one of the parent's
     * (closed with the parent's connections, free again) would otherwise
     * find the parent's relay in dl_tls_relay_detach, and wait forever
     * for a thread the child does not have. */
    if (relays) {
        relay_t *last = relays;
        while (last->next)
            last = last->next;
        last->next = parents_relays;
        parents_relays = relays;
        relays = NULL;
    }
    pthread_rwlock_t fresh = PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP;
    dl_tls_busy = fresh;
    pthread_mutex_init(&relays_mu, NULL);
}

__attribute__((constructor)) static void tls_register_atfork(void)
{
    pthread_atfork(fork_prepare, fork_parent, fork_child);
}

static void unlink_relay(relay_t *r)
{
    for (relay_t **pp = &relays; *pp; pp = &(*pp)->next)
        if (*pp == r) {
            *pp = r->next;
            break;
        }
}

static void relay_end(relay_t *r)
{
    pthread_mutex_lock(&relays_mu);
    unlink_relay(r);
    pthread_mutex_lock(&r->mu);
    if (r->detach) {
        /* The session and its socket are the user's now. */
        close(r->app);
        r->detached = 1;
        pthread_cond_broadcast(&r->cv);
        pthread_mutex_unlock(&r->mu);
        pthread_mutex_unlock(&relays_mu);
        return;           /* the user joins this thread and frees r */
    }
    pthread_mutex_unlock(&r->mu);
    pthread_detach(pthread_self());
    /* No SSL_shutdown: the connection simply closes, as a plain one does,
     * and nothing is written once the user is done with it. */
    close(r->tcp);
    close(r->app);
    pthread_mutex_unlock(&relays_mu);
    pthread_rwlock_rdlock(&dl_tls_busy);
    SSL_free(r->ssl);
    ERR_clear_error();
    pthread_rwlock_unlock(&dl_tls_busy);
    free(r);
}

#define RELAY_BUF 16384

/* The bytes in flight one way: buf[off..len) is still to be written. */
typedef struct leg {
    char *buf;
    size_t len, off;
} leg_t;

/* A relay's two ways, and what its next wait is for. */
typedef struct pump {
    leg_t up;                 /* from the user's end to the server */
    leg_t down;               /* from the server to the user's end */
    int app_eof;              /* the user's end closed */
    short tev, aev;           /* poll events: the TLS socket, the user's end */
} pump_t;

/* What an SSL call that moved nothing waits for: 0, or -1 when the
 * session is over (the server closed, or it failed). */
static int ssl_wants(const relay_t *r, int rc, short *tev)
{
    int e = SSL_get_error(r->ssl, rc);
    if (e == SSL_ERROR_WANT_READ)
        *tev |= POLLIN;
    else if (e == SSL_ERROR_WANT_WRITE)
        *tev |= POLLOUT;
    else
        return -1;
    return 0;
}

/* Each step: 1 when it moved bytes, 0 when it could not now (the event
 * to wait for noted), -1 when the relay must end. */

static int read_user(const relay_t *r, pump_t *p)
{
    if (p->up.len || p->app_eof)
        return 0;
    ssize_t n = recv(r->app, p->up.buf, RELAY_BUF, 0);
    if (n > 0) {
        p->up.len = (size_t)n;
        p->up.off = 0;
        return 1;
    }
    if (n == 0 || (errno != EAGAIN && errno != EINTR))
        p->app_eof = 1;
    else
        p->aev |= POLLIN;
    return 0;
}

static int write_server(const relay_t *r, pump_t *p)
{
    if (!p->up.len)
        return 0;
    int w = SSL_write(r->ssl, p->up.buf + p->up.off, (int)(p->up.len - p->up.off));
    if (w <= 0)
        return ssl_wants(r, w, &p->tev);
    p->up.off += (size_t)w;
    if (p->up.off == p->up.len)
        p->up.len = 0;
    return 1;
}

static int read_server(const relay_t *r, pump_t *p)
{
    if (p->down.len)
        return 0;
    int n = SSL_read(r->ssl, p->down.buf, RELAY_BUF);
    if (n <= 0)
        return ssl_wants(r, n, &p->tev);
    p->down.len = (size_t)n;
    p->down.off = 0;
    return 1;
}

static int write_user(const relay_t *r, pump_t *p)
{
    if (!p->down.len)
        return 0;
    ssize_t n = send(r->app, p->down.buf + p->down.off, p->down.len - p->down.off, MSG_NOSIGNAL);
    if (n > 0) {
        p->down.off += (size_t)n;
        if (p->down.off == p->down.len)
            p->down.len = 0;
        return 1;
    }
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
        p->aev |= POLLOUT;
        return 0;
    }
    return -1;
}

/* One pass over both ways: 1 when bytes moved, 0 when none could, -1
 * when the relay must end. */
static int pump_once(const relay_t *r, pump_t *p)
{
    p->tev = p->aev = 0;
    int progress = read_user(r, p), rc;
    if ((rc = write_server(r, p)) < 0)
        return -1;
    progress |= rc;
    if (p->app_eof && (!p->up.len || !progress))
        return -1;            /* what was left is sent, or cannot be now */
    if ((rc = read_server(r, p)) < 0)
        return -1;
    progress |= rc;
    if ((rc = write_user(r, p)) < 0)
        return -1;
    return progress | rc;
}

/* Nothing moved: waits for either side (without dl_tls_busy).  0 to go
 * on, -1 when the relay must end.  The user's end is always watched: its
 * close (POLLHUP) ends the relay even while the server takes nothing. */
static int wait_either(const relay_t *r, const pump_t *p)
{
    struct pollfd pf[2] = { { r->tcp, p->tev, 0 }, { r->app, p->aev, 0 } };
    pthread_rwlock_unlock(&dl_tls_busy);
    int n = poll(pf, 2, -1);
    pthread_rwlock_rdlock(&dl_tls_busy);
    if (n < 0 && errno != EINTR)
        return -1;
    if ((pf[1].revents & (POLLHUP | POLLERR)) && !(pf[1].revents & POLLIN) && !p->down.len &&
        !(pf[0].revents & (POLLIN | POLLOUT)))
        return -1;
    return 0;
}

/* Moves bytes both ways until either side closes.  Both sockets are
 * non-blocking, so a stalled server never keeps the relay from seeing
 * its user close the connection (hiredis's time-out did it). */
static void *relay_main(void *arg)
{
    relay_t *r = arg;
    pump_t p;
    memset(&p, 0, sizeof p);
    p.up.buf = malloc(RELAY_BUF);
    p.down.buf = malloc(RELAY_BUF);
    if (p.up.buf && p.down.buf) {
        pthread_rwlock_rdlock(&dl_tls_busy);
        for (;;) {
            int rc = pump_once(r, &p);
            if (rc < 0 || (rc == 0 && wait_either(r, &p) < 0))
                break;
        }
        pthread_rwlock_unlock(&dl_tls_busy);
    }
    free(p.up.buf);
    free(p.down.buf);
    relay_end(r);
    return NULL;
}

int dl_tls_relay_start(SSL *ssl, int fd, char *err, size_t errlen)
{
    int sv[2] = { -1, -1 };
    relay_t *r = NULL;
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv)) {
        snprintf(err, errlen, "TLS: socketpair: %s", strerror(errno));
        goto fail;
    }
    int fl = fcntl(sv[1], F_GETFL);
    fcntl(sv[1], F_SETFL, fl | O_NONBLOCK);
    if (!(r = calloc(1, sizeof *r))) {
        snprintf(err, errlen, "TLS: out of memory");
        goto fail;
    }
    r->ssl = ssl;
    r->tcp = fd;
    r->app = sv[1];
    r->user = sv[0];
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->cv, NULL);
    pthread_mutex_lock(&relays_mu);
    r->next = relays;
    relays = r;
    pthread_mutex_unlock(&relays_mu);
    /* Joinable, with every signal blocked (as dl_thread_start): a
     * connection handed over (the TLS transport, tls_direct.c) waits for
     * its relay's end, so no half-ended thread is around when the process
     * forks next. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_mutex_lock(&r->mu);
    int trc = pthread_create(&r->thread, NULL, relay_main, r);
    pthread_mutex_unlock(&r->mu);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (trc) {
        pthread_mutex_lock(&relays_mu);
        unlink_relay(r);
        pthread_mutex_unlock(&relays_mu);
        free(r);
        snprintf(err, errlen, "TLS: cannot start the relay thread");
        goto fail;
    }
    return sv[0];
fail:
    if (sv[0] >= 0) {
        close(sv[0]);
        close(sv[1]);
    }
    return -1;
}

int dl_tls_relay_detach(int user, SSL **ssl, int *tcp)
{
    relay_t *r = NULL;
    pthread_mutex_lock(&relays_mu);
    for (relay_t *x = relays; x; x = x->next)
        if (x->user == user)
            r = x;
    if (r) {
        pthread_mutex_lock(&r->mu);
        r->detach = 1;
        pthread_mutex_unlock(&r->mu);
    }
    pthread_mutex_unlock(&relays_mu);
    if (!r)
        return -1;
    /* The end of our writes: the relay forwards what it has (nothing:
     * every reply was read), sees the end, and stops without closing. */
    shutdown(user, SHUT_WR);
    pthread_mutex_lock(&r->mu);
    while (!r->detached)
        pthread_cond_wait(&r->cv, &r->mu);
    pthread_mutex_unlock(&r->mu);
    pthread_join(r->thread, NULL);
    *tcp = r->tcp;
    *ssl = r->ssl;
    pthread_cond_destroy(&r->cv);
    pthread_mutex_destroy(&r->mu);
    free(r);
    return 0;
}
