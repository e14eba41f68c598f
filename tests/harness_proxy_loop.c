/* SPDX-License-Identifier: BSD-3-Clause */
/* harness_proxy_loop.c - see harness_proxy_loop.h. */
#include "harness_proxy_loop.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>

/* Fork safety.  The proxy thread allocates (chunks) with p->mu held; a
 * fork while it is inside malloc would leave the child's allocator locked
 * (glibc's malloc copes, AddressSanitizer's does not: the child hangs in
 * its first malloc).  So fork waits for every proxy's mutex. */
#define PX_MAX_LIVE 16
static th_proxy_t *px_live[PX_MAX_LIVE];
static pthread_mutex_t px_live_mu = PTHREAD_MUTEX_INITIALIZER;

static void px_prepare(void)
{
    pthread_mutex_lock(&px_live_mu);
    for (int i = 0; i < PX_MAX_LIVE; i++)
        if (px_live[i])
            pthread_mutex_lock(&px_live[i]->mu);
}

static void px_parent(void)
{
    for (int i = PX_MAX_LIVE; i-- > 0;)
        if (px_live[i])
            pthread_mutex_unlock(&px_live[i]->mu);
    pthread_mutex_unlock(&px_live_mu);
}

static void px_child(void)
{
    /* the proxy threads do not exist here; the proxies are the parent's */
    for (int i = 0; i < PX_MAX_LIVE; i++)
        if (px_live[i])
            pthread_mutex_unlock(&px_live[i]->mu);
    pthread_mutex_unlock(&px_live_mu);
}

static void px_atfork_once(void)
{
    pthread_atfork(px_prepare, px_parent, px_child);
}

void px_register(th_proxy_t *p, int add)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, px_atfork_once);
    pthread_mutex_lock(&px_live_mu);
    for (int i = 0; i < PX_MAX_LIVE; i++)
        if (add ? !px_live[i] : px_live[i] == p) {
            px_live[i] = add ? p : NULL;
            break;
        }
    pthread_mutex_unlock(&px_live_mu);
}

static void px_close_fd(int fd, int reset)
{
    if (fd < 0)
        return;
    if (reset) {
        struct linger lg = { 1, 0 };
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
    }
    shutdown(fd, SHUT_RDWR);
    close(fd);
}

static void px_free_queue(th_proxy_t *p, px_pair_t *pr, int d)
{
    while (pr->head[d]) {
        px_chunk_t *c = pr->head[d];
        pr->head[d] = c->next;
        p->st.discarded += c->len - c->off;
        free(c);
    }
    pr->tail[d] = NULL;
    pr->queued[d] = 0;
}

/* mu held */
static void px_cut(th_proxy_t *p, px_pair_t *pr, int counted)
{
    if (!pr->used)
        return;
    px_close_fd(pr->fd[0], 0);
    px_close_fd(pr->fd[1], 0);
    px_free_queue(p, pr, 0);
    px_free_queue(p, pr, 1);
    pr->used = 0;
    pr->tainted = 0;
    pr->client_eof = 0;
    pr->half_closed = 0;
    p->st.open--;
    if (counted)
        p->st.cuts++;
}

static int px_connect_upstream(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons((uint16_t)port);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

void px_nonblock(int fd)
{
    int fl = fcntl(fd, F_GETFL);
    fcntl(fd, F_SETFL, fl | O_NONBLOCK);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

/* mu held */
static void px_accept(th_proxy_t *p)
{
    struct sockaddr_in ca;
    socklen_t calen = sizeof ca;
    memset(&ca, 0, sizeof ca);
    int cfd = accept4(p->lfd, (struct sockaddr *)&ca, &calen, SOCK_CLOEXEC);
    if (cfd < 0)
        return;
    p->st.accepted++;
    if (p->cur_mode == TH_PROXY_DROP) {
        px_close_fd(cfd, 1);
        p->st.refused++;
        return;
    }
    px_pair_t *pr = NULL;
    for (int i = 0; i < PX_MAX_PAIRS; i++)
        if (!p->pairs[i].used) {
            pr = &p->pairs[i];
            break;
        }
    int sfd = pr ? px_connect_upstream(p->target_port) : -1;
    if (sfd < 0) {
        px_close_fd(cfd, 1);
        p->st.refused++;
        return;
    }
    px_nonblock(cfd);
    px_nonblock(sfd);
    memset(pr, 0, sizeof *pr);
    pr->fd[0] = cfd;
    pr->fd[1] = sfd;
    pr->cport = ntohs(ca.sin_port);
    pr->used = 1;
    p->st.open++;
    if (p->sticky_pid > 0) {
        /* a connection of the process whose new ones are delayed too */
        int ports[64];
        int np = th_proc_sockets(p->sticky_pid, p->port, ports, 64);
        for (int k = 0; k < np && k < 64; k++)
            if (ports[k] == pr->cport) {
                pr->delay[0] = p->sticky[0];
                pr->delay[1] = p->sticky[1];
                break;
            }
    }
}

/* Reads what fd[d] has; 0, or -1 when the pair must close (mu held). */
static int px_read(th_proxy_t *p, px_pair_t *pr, int d)
{
    char buf[PX_BUF];
    ssize_t n = read(pr->fd[d], buf, sizeof buf);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return 0;
    if (n == 0 && d == 0 && pr->head[0]) {
        pr->client_eof = 1;
        return 0;
    }
    if (n <= 0)
        return -1;
    if (p->cur_mode == TH_PROXY_BLACKHOLE) {
        p->st.discarded += (uint64_t)n;
        pr->tainted = 1;
        return 0;
    }
    if (d == 1 && pr->client_eof) {
        /* replies to a client that closed (a frozen connection delivered
         * late): nobody reads them, and writing them would reset the pair
         * before the rest of what the client sent reached Redis */
        p->st.discarded += (uint64_t)n;
        return 0;
    }
    if (d == 0 && !pr->sub && memmem(buf, (size_t)n, "SUBSCRIBE", 9))
        pr->sub = 1;
    static const char push[] = "*3\r\n$7\r\nmessage\r\n";
    if (d == 1 && p->mute && (size_t)n >= sizeof push - 1 && memcmp(buf, push, sizeof push - 1) == 0) {
        p->st.pushes_muted++;
        p->st.discarded += (uint64_t)n;
        return 0;
    }
    if (d == 1 && p->cut_replies > 0) {
        p->cut_replies--;
        p->st.replies_cut++;
        p->st.discarded += (uint64_t)n;
        px_cut(p, pr, 1);
        return 1;
    }
    size_t len = (size_t)n;
    int cut_after = 0;
    if (d == 0 && p->cut_requests > 0) {
        p->cut_requests--;
        p->st.requests_cut++;
        p->st.discarded += (uint64_t)(len - len / 2);
        len /= 2;
        cut_after = 1;
    }
    if (len > 0) {
        px_chunk_t *c = malloc(sizeof *c + len);
        if (!c)
            return -1;
        c->next = NULL;
        c->len = len;
        c->off = 0;
        int64_t due = th_now_ms() + (p->cur_mode == TH_PROXY_SLOW ? p->delay_ms : 0) + pr->delay[d];
        if (d == 0 && p->cur_mode == TH_PROXY_JITTER) {
            long span = p->jitter_hi - p->jitter_lo;
            due += p->jitter_lo;
            if (span > 0)
                due += (long)(rand_r(&p->jitter_seed) % (unsigned)(span + 1));
            p->st.jittered++;
        }
        /* one connection's bytes stay in order (TCP); only different
         * connections are reordered */
        if (d == 0) {
            if (due < pr->last_due)
                due = pr->last_due;
            pr->last_due = due;
        }
        c->due_ms = due;
        memcpy(c->data, buf, len);
        if (pr->tail[d])
            pr->tail[d]->next = c;
        else
            pr->head[d] = c;
        pr->tail[d] = c;
        pr->queued[d] += len;
    }
    if (cut_after) {
        /* forward the half now, then cut */
        px_chunk_t *c = pr->head[d];
        int out = pr->fd[!d];
        while (c) {
            ssize_t w = send(out, c->data + c->off, c->len - c->off, MSG_NOSIGNAL);
            if (w <= 0)
                break;
            c->off += (size_t)w;
            if (c->off == c->len) {
                pr->head[d] = c->next;
                free(c);
                c = pr->head[d];
            }
        }
        if (!pr->head[d])
            pr->tail[d] = NULL;
        px_cut(p, pr, 1);
        return 1;
    }
    return 0;
}

/* Writes the due chunks read from fd[d] to fd[!d]; -1: close (mu held). */
static int px_write(th_proxy_t *p, px_pair_t *pr, int d)
{
    int64_t now = th_now_ms();
    if (d == 0 && pr->frozen)
        return 0;
    while (pr->head[d] && pr->head[d]->due_ms <= now) {
        px_chunk_t *c = pr->head[d];
        ssize_t w = send(pr->fd[!d], c->data + c->off, c->len - c->off, MSG_NOSIGNAL);
        if (w < 0 && (errno == EAGAIN || errno == EINTR))
            return 0;
        if (w <= 0)
            return -1;
        c->off += (size_t)w;
        pr->queued[d] -= (size_t)w;
        if (d == 0) {
            p->st.bytes_c2s += (uint64_t)w;
            if (pr->client_eof)
                p->st.late_bytes += (uint64_t)w;
        } else
            p->st.bytes_s2c += (uint64_t)w;
        if (c->off < c->len)
            return 0;
        pr->head[d] = c->next;
        if (!pr->head[d])
            pr->tail[d] = NULL;
        free(c);
    }
    return 0;
}

/* mu held */
void px_thaw_pair(th_proxy_t *p, px_pair_t *pr)
{
    pr->frozen = 0;
    pr->thaw_at = 0;
    p->st.thawed++;
    if (pr->client_eof && pr->head[0])
        p->st.late_conns++;       /* its client gave up on it: what it sent arrives late */
}

void *px_main(void *arg)
{
    th_proxy_t *p = arg;
    struct pollfd pf[2 + 2 * PX_MAX_PAIRS];
    int owner[2 + 2 * PX_MAX_PAIRS];
    pthread_mutex_lock(&p->mu);
    p->ready = 1;
    pthread_mutex_unlock(&p->mu);
    for (;;) {
        pthread_mutex_lock(&p->mu);
        if (p->quit) {
            for (int i = 0; i < PX_MAX_PAIRS; i++)
                px_cut(p, &p->pairs[i], 0);
            pthread_mutex_unlock(&p->mu);
            break;
        }
        if (p->mode != p->cur_mode) {
            int leaving = p->cur_mode;
            p->cur_mode = p->mode;
            for (int i = 0; i < PX_MAX_PAIRS; i++) {
                px_pair_t *pr = &p->pairs[i];
                if (!pr->used)
                    continue;
                if (p->cur_mode == TH_PROXY_DROP ||
                    (leaving == TH_PROXY_BLACKHOLE && pr->tainted))
                    px_cut(p, pr, 1);
            }
        }
        if (p->cut_all) {
            p->cut_all = 0;
            for (int i = 0; i < PX_MAX_PAIRS; i++)
                px_cut(p, &p->pairs[i], 1);
        }
        int n = 0;
        int64_t now = th_now_ms(), next_due = now + 100;
        for (int i = 0; i < PX_MAX_PAIRS; i++) {
            px_pair_t *pr = &p->pairs[i];
            if (!pr->used || !pr->frozen || !pr->thaw_at)
                continue;
            if (pr->thaw_at <= now)
                px_thaw_pair(p, pr);
            else if (pr->thaw_at < next_due)
                next_due = pr->thaw_at;
        }
        pf[n] = (struct pollfd){ p->wake[0], POLLIN, 0 };
        owner[n++] = -1;
        pf[n] = (struct pollfd){ p->lfd, POLLIN, 0 };
        owner[n++] = -2;
        for (int i = 0; i < PX_MAX_PAIRS; i++) {
            px_pair_t *pr = &p->pairs[i];
            if (!pr->used)
                continue;
            for (int d = 0; d < 2; d++) {
                short ev = 0;
                if (pr->queued[d] < PX_QUEUE_MAX)
                    ev |= POLLIN;
                /* fd[d] is written with what fd[!d] sent */
                if (pr->head[!d] && !(d == 1 && pr->frozen)) {
                    if (pr->head[!d]->due_ms <= now)
                        ev |= POLLOUT;
                    else if (pr->head[!d]->due_ms < next_due)
                        next_due = pr->head[!d]->due_ms;
                }
                /* a closed client side is not polled (it would report
                 * POLLHUP at once, every time) */
                pf[n] = (struct pollfd){ d == 0 && pr->client_eof ? -1 : pr->fd[d], ev, 0 };
                owner[n++] = i * 2 + d;
            }
        }
        pthread_mutex_unlock(&p->mu);

        int timeout = (int)(next_due - now);
        if (timeout < 0)
            timeout = 0;
        int r = poll(pf, (nfds_t)n, timeout);
        if (r < 0 && errno != EINTR)
            break;

        pthread_mutex_lock(&p->mu);
        if (r > 0 && (pf[0].revents & POLLIN)) {
            char b[64];
            while (read(p->wake[0], b, sizeof b) > 0)
                ;
        }
        if (r > 0 && (pf[1].revents & POLLIN) && p->mode == p->cur_mode)
            px_accept(p);
        for (int k = 2; k < n && r > 0; k++) {
            int i = owner[k] / 2, d = owner[k] % 2;
            px_pair_t *pr = &p->pairs[i];
            if (!pr->used || pr->fd[d] != pf[k].fd || !pf[k].revents)
                continue;
            if (pf[k].revents & (POLLIN | POLLHUP | POLLERR)) {
                int rr = px_read(p, pr, d);
                if (rr < 0) {
                    px_cut(p, pr, 0);
                    continue;
                }
                if (rr > 0)
                    continue;           /* cut on purpose */
            }
        }
        /* write whatever is due, on every pair */
        for (int i = 0; i < PX_MAX_PAIRS; i++) {
            px_pair_t *pr = &p->pairs[i];
            for (int d = 0; d < 2 && pr->used; d++)
                if (pr->head[d] && px_write(p, pr, d) < 0)
                    px_cut(p, pr, 0);
            if (pr->used && pr->client_eof && !pr->head[0] && !pr->half_closed) {
                /* All it sent is with Redis: pass its FIN on and wait for
                 * Redis to close.  Closing at once, with a reply of Redis
                 * unread, would send a reset that can reach Redis before it
                 * has read the last bytes, which the kernel then drops. */
                shutdown(pr->fd[1], SHUT_WR);
                pr->half_closed = 1;
            }
        }
        pthread_mutex_unlock(&p->mu);
    }
    return NULL;
}

