/* SPDX-License-Identifier: BSD-3-Clause */
/* harness_proxy.c - see harness_proxy.h: the control side (start, stop,
 * modes, cuts, statistics); the forwarding thread is harness_proxy_loop.c. */
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

static void px_wake(th_proxy_t *p)
{
    char c = 1;
    ssize_t w = write(p->wake[1], &c, 1);
    (void)w;
}

th_proxy_t *th_proxy_start(int target_port)
{
    th_proxy_t *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    pthread_mutex_init(&p->mu, NULL);
    p->target_port = target_port;
    p->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    int one = 1;
    setsockopt(p->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (p->lfd < 0 || bind(p->lfd, (struct sockaddr *)&a, sizeof a) != 0 ||
        listen(p->lfd, 128) != 0 || getsockname(p->lfd, (struct sockaddr *)&a, &len) != 0 ||
        pipe2(p->wake, O_CLOEXEC | O_NONBLOCK) != 0) {
        if (p->lfd >= 0)
            close(p->lfd);
        free(p);
        return NULL;
    }
    px_nonblock(p->lfd);
    p->port = ntohs(a.sin_port);
    snprintf(p->url, sizeof p->url, "redis://127.0.0.1:%d", p->port);
    px_register(p, 1);
    /* The thread runs on a stack of our own: glibc hands the stacks of the
     * threads a forked child does not have to the child's next threads,
     * and ThreadSanitizer then takes a child's new thread for ours ("dup
     * thread").  A stack the program provided is never recycled. */
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    p->stack = mmap(NULL, PX_STACK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    int crc = p->stack == MAP_FAILED ? -1 : pthread_attr_setstack(&attr, p->stack, PX_STACK);
    if (crc == 0)
        crc = pthread_create(&p->thread, &attr, px_main, p);
    pthread_attr_destroy(&attr);
    if (crc != 0) {
        if (p->stack != MAP_FAILED)
            munmap(p->stack, PX_STACK);
        px_register(p, 0);
        close(p->lfd);
        close(p->wake[0]);
        close(p->wake[1]);
        free(p);
        return NULL;
    }
    /* A thread that is still starting up may be allocating: do not let the
     * caller fork before it waits in its loop. */
    for (;;) {
        pthread_mutex_lock(&p->mu);
        int ready = p->ready;
        pthread_mutex_unlock(&p->mu);
        if (ready)
            break;
        th_sleep_ms(1);
    }
    return p;
}

void th_proxy_stop(th_proxy_t *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    p->quit = 1;
    pthread_mutex_unlock(&p->mu);
    px_wake(p);
    pthread_join(p->thread, NULL);
    munmap(p->stack, PX_STACK);
    px_register(p, 0);
    shutdown(p->lfd, SHUT_RDWR);
    close(p->lfd);
    close(p->wake[0]);
    close(p->wake[1]);
    pthread_mutex_destroy(&p->mu);
    free(p);
}

int th_proxy_port(const th_proxy_t *p)
{
    return p->port;
}

const char *th_proxy_url(const th_proxy_t *p)
{
    return p->url;
}

th_proxy_t *th_proxy_url_for(char *url, size_t size)
{
    th_proxy_t *p = th_proxy_start(th_redis_port());
    if (!p)
        fail_msg("the proxy did not start");
    snprintf(url, size, "%s", p->url);
    return p;
}

void th_proxy_mode(th_proxy_t *p, int mode, long delay_ms)
{
    pthread_mutex_lock(&p->mu);
    p->mode = mode;
    p->delay_ms = delay_ms;
    pthread_mutex_unlock(&p->mu);
    px_wake(p);
    /* wait until the thread applied it, so "now" means now */
    for (int i = 0; i < 1000; i++) {
        pthread_mutex_lock(&p->mu);
        int done = p->cur_mode == mode;
        pthread_mutex_unlock(&p->mu);
        if (done)
            break;
        th_sleep_ms(1);
    }
}

void th_proxy_cut_all(th_proxy_t *p)
{
    pthread_mutex_lock(&p->mu);
    p->cut_all = 1;
    pthread_mutex_unlock(&p->mu);
    px_wake(p);
    for (int i = 0; i < 1000; i++) {
        pthread_mutex_lock(&p->mu);
        int done = !p->cut_all;
        pthread_mutex_unlock(&p->mu);
        if (done)
            break;
        th_sleep_ms(1);
    }
}

void th_proxy_cut_replies(th_proxy_t *p, int n)
{
    pthread_mutex_lock(&p->mu);
    p->cut_replies += n;
    pthread_mutex_unlock(&p->mu);
    px_wake(p);
}

void th_proxy_cut_requests(th_proxy_t *p, int n)
{
    pthread_mutex_lock(&p->mu);
    p->cut_requests += n;
    pthread_mutex_unlock(&p->mu);
    px_wake(p);
}

void th_proxy_get_stats(th_proxy_t *p, th_proxy_stats_t *s)
{
    pthread_mutex_lock(&p->mu);
    *s = p->st;
    s->frozen_now = s->frozen_bytes = s->frozen_closed = 0;
    for (int i = 0; i < PX_MAX_PAIRS; i++) {
        const px_pair_t *pr = &p->pairs[i];
        if (pr->used && pr->frozen) {
            s->frozen_now++;
            s->frozen_bytes += pr->queued[0];
            s->frozen_closed += pr->client_eof;
        }
    }
    pthread_mutex_unlock(&p->mu);
}

void th_proxy_mute_pushes(th_proxy_t *p, int on)
{
    pthread_mutex_lock(&p->mu);
    p->mute = on;
    pthread_mutex_unlock(&p->mu);
    px_wake(p);
}

void th_proxy_jitter(th_proxy_t *p, long min_ms, long max_ms, unsigned seed)
{
    pthread_mutex_lock(&p->mu);
    p->jitter_lo = min_ms;
    p->jitter_hi = max_ms > min_ms ? max_ms : min_ms;
    p->jitter_seed = seed;
    pthread_mutex_unlock(&p->mu);
    th_proxy_mode(p, TH_PROXY_JITTER, max_ms);
}

int th_proxy_freeze(th_proxy_t *p, pid_t pid, int flags, long hold_ms)
{
    int ports[64], np = 0;
    if (pid > 0) {
        np = th_proc_sockets(pid, p->port, ports, 64);
        if (np > 64)
            np = 64;
        if (np == 0)
            return 0;
    }
    int n = 0;
    pthread_mutex_lock(&p->mu);
    int64_t now = th_now_ms();
    for (int i = 0; i < PX_MAX_PAIRS; i++) {
        px_pair_t *pr = &p->pairs[i];
        if (!pr->used || pr->frozen || pr->client_eof)
            continue;
        if ((flags & TH_PROXY_COMMANDS) && pr->sub)
            continue;
        int mine = pid <= 0;
        for (int k = 0; k < np && !mine; k++)
            mine = ports[k] == pr->cport;
        if (!mine)
            continue;
        pr->frozen = 1;
        pr->thaw_at = hold_ms > 0 ? now + hold_ms : 0;
        p->st.frozen++;
        n++;
    }
    pthread_mutex_unlock(&p->mu);
    px_wake(p);
    return n;
}

int th_proxy_delay(th_proxy_t *p, pid_t pid, long c2s_ms, long s2c_ms)
{
    int ports[64], np = 0;
    if (pid > 0) {
        np = th_proc_sockets(pid, p->port, ports, 64);
        if (np > 64)
            np = 64;
        if (np == 0)
            return 0;
    }
    int n = 0;
    pthread_mutex_lock(&p->mu);
    for (int i = 0; i < PX_MAX_PAIRS; i++) {
        px_pair_t *pr = &p->pairs[i];
        if (!pr->used)
            continue;
        int mine = pid <= 0;
        for (int k = 0; k < np && !mine; k++)
            mine = ports[k] == pr->cport;
        if (!mine)
            continue;
        pr->delay[0] = c2s_ms;
        pr->delay[1] = s2c_ms;
        n++;
    }
    pthread_mutex_unlock(&p->mu);
    px_wake(p);
    return n;
}

int th_proxy_delay_sticky(th_proxy_t *p, pid_t pid, long c2s_ms, long s2c_ms)
{
    pthread_mutex_lock(&p->mu);
    p->sticky_pid = c2s_ms || s2c_ms ? pid : 0;
    p->sticky[0] = c2s_ms;
    p->sticky[1] = s2c_ms;
    pthread_mutex_unlock(&p->mu);
    return th_proxy_delay(p, pid, c2s_ms, s2c_ms);
}

int th_proxy_thaw(th_proxy_t *p)
{
    int n = 0;
    pthread_mutex_lock(&p->mu);
    for (int i = 0; i < PX_MAX_PAIRS; i++) {
        px_pair_t *pr = &p->pairs[i];
        if (pr->used && pr->frozen) {
            px_thaw_pair(p, pr);
            n++;
        }
    }
    pthread_mutex_unlock(&p->mu);
    px_wake(p);
    return n;
}

int th_proxy_settled(th_proxy_t *p, long timeout_ms)
{
    int64_t end = th_now_ms() + timeout_ms;
    for (;;) {
        int busy = 0;
        pthread_mutex_lock(&p->mu);
        for (int i = 0; i < PX_MAX_PAIRS && !busy; i++) {
            px_pair_t *pr = &p->pairs[i];
            busy = pr->used && !pr->frozen && pr->head[0];
        }
        pthread_mutex_unlock(&p->mu);
        if (!busy)
            return 1;
        if (th_now_ms() >= end)
            return 0;
        th_sleep_ms(1);
    }
}
