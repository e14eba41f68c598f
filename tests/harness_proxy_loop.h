/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * harness_proxy_loop.h - internal to the proxy (harness_proxy.h): its
 * state, shared by the control calls of harness_proxy.c (under mu) and the
 * forwarding thread of harness_proxy_loop.c (the thread's own part), and
 * the fork handlers that keep a forked child's allocator usable.
 */
#ifndef TH_HARNESS_PROXY_LOOP_H
#define TH_HARNESS_PROXY_LOOP_H

#include <pthread.h>
#include <stdint.h>

#include "harness.h"
#include "harness_proxy.h"

#define PX_BUF 16384
#define PX_MAX_PAIRS 256
#define PX_QUEUE_MAX (4 * 1024 * 1024)   /* stop reading a side with this much queued */

typedef struct px_chunk {
    struct px_chunk *next;
    int64_t due_ms;
    size_t len, off;
    char data[];
} px_chunk_t;

typedef struct px_pair {
    int fd[2];                  /* 0: client side, 1: server side */
    px_chunk_t *head[2], *tail[2];   /* head[d]: bytes read from fd[d], to write to fd[!d] */
    size_t queued[2];
    int client_eof;             /* the client closed with bytes still queued for
                                   Redis: they go on (TCP delivers what was sent
                                   before a FIN), then the pair closes */
    int tainted;                /* lost bytes in a blackhole */
    int half_closed;            /* client_eof and all delivered: FIN sent to Redis */
    int used;
    int cport;                  /* the client's port (whose process: th_proc_sockets) */
    int sub;                    /* the client sent SUBSCRIBE: a subscriber connection */
    int frozen;                 /* client->server bytes are kept, not forwarded */
    int64_t thaw_at;            /* frozen until then (ms; 0: until th_proxy_thaw) */
    int64_t last_due;           /* due time of the last client chunk (order kept) */
    long delay[2];              /* th_proxy_delay: ms added to chunks read from fd[d] */
} px_pair_t;

#define PX_STACK (2 * 1024 * 1024)

struct th_proxy {
    pthread_t thread;
    void *stack;                /* our own: see th_proxy_start */
    pthread_mutex_t mu;
    int ready;                  /* the thread runs its loop */
    int target_port, port, lfd, wake[2];
    char url[64];
    /* control, under mu */
    int mode, quit, cut_all;
    long delay_ms;
    int cut_replies, cut_requests, mute;
    long jitter_lo, jitter_hi;  /* JITTER: each client chunk's delay (ms) */
    pid_t sticky_pid;           /* th_proxy_delay_sticky: its new connections get */
    long sticky[2];             /* these delays too (0: none) */
    unsigned jitter_seed;
    th_proxy_stats_t st;
    /* the thread's own */
    int cur_mode;
    px_pair_t pairs[PX_MAX_PAIRS];
};

/* The forwarding thread (pthread_create argument: the proxy). */
void *px_main(void *arg);
/* Registers (add 1) or forgets a live proxy for the fork handlers. */
void px_register(th_proxy_t *p, int add);
void px_nonblock(int fd);
/* Ends a pair's freeze: what it kept goes on (mu held). */
void px_thaw_pair(th_proxy_t *p, px_pair_t *pr);

#endif
