/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * harness_proxy.h - a small TCP proxy between the library and Redis, for
 * fault tests: a thread of the test process listening on a free port of
 * 127.0.0.1 and forwarding every connection to 127.0.0.1:target_port.
 * Point DISTLOCK_URL at th_proxy_url() (in the processes under test,
 * before their first dist_ call) and change the network under them:
 *
 *   PASS       forward both ways
 *   DROP       cut every connection now (shutdown + close of both sides),
 *              and reset new ones right after accepting them, until the
 *              mode changes: Redis "went away"
 *   BLACKHOLE  accept and keep connections, forward nothing (bytes read are
 *              discarded): a partition.  When the mode changes, the
 *              connections that lost bytes are cut (as a healed partition
 *              resets them: TCP never loses bytes mid-stream)
 *   SLOW       forward each chunk delay_ms after it was read, in order (a
 *              client's close reaches Redis after the bytes it sent before
 *              it, as over TCP; a change of mode leaves queued chunks due
 *              when they were)
 *   JITTER     (th_proxy_jitter) each chunk a client sends is forwarded after
 *              a random delay in [min_ms, max_ms], never before the chunk
 *              read before it on the same connection: one connection keeps
 *              its order, as TCP does, but different connections are
 *              reordered.  A client that gave a connection up (its I/O
 *              time-out) and sent again on a new one may see the new bytes
 *              reach Redis before the old ones.  Replies pass at once.
 *
 * and one-shot cuts at the worst moments:
 *   th_proxy_cut_replies(p, n)   the next n chunks Redis sends are not
 *                                forwarded: the connection is cut instead
 *                                (the command ran, its reply is lost)
 *   th_proxy_cut_requests(p, n)  the next n chunks a client sends are
 *                                forwarded only half, then the connection
 *                                is cut (Redis never runs that command)
 *
 *   th_proxy_mute_pushes(p, 1)   pub/sub messages Redis sends (chunks that
 *                                start with a RESP "message" array) are
 *                                thrown away, the connection stays up: lost
 *                                notifications without any reconnection
 *
 * and pauses of single connections, while the others flow:
 *   th_proxy_freeze(p, pid, flags, hold_ms)  from now on, what the
 *                                connections of process pid (0: every
 *                                process) open now send is kept, in order,
 *                                not forwarded, for hold_ms (0: until
 *                                th_proxy_thaw).  With TH_PROXY_COMMANDS,
 *                                subscriber connections (those that sent
 *                                SUBSCRIBE) go on flowing.  Connections opened
 *                                later flow: a client that gives up on a
 *                                frozen connection and reconnects gets its
 *                                new requests served first, and the old ones
 *                                reach Redis when the freeze ends, even if the
 *                                client closed that connection meanwhile (as
 *                                TCP delivers what was sent before a FIN).
 *                                Replies to a client that closed are dropped.
 *
 * and delays of single connections, each way:
 *   th_proxy_delay(p, pid, c2s_ms, s2c_ms)  what the connections of process
 *                                pid (0: every process) open now send
 *                                (c2s) or are sent (s2c) is forwarded that
 *                                many ms late, in order; 0, 0 ends it.  A
 *                                reply held back longer than a fixed lease
 *                                reaches the client after the hold ran out.
 *
 * Cutting uses shutdown(), so copies of the sockets inherited by forked
 * children do not keep a connection alive.
 */
#ifndef TH_HARNESS_PROXY_H
#define TH_HARNESS_PROXY_H

#include <stdint.h>
#include <sys/types.h>

enum th_proxy_mode { TH_PROXY_PASS, TH_PROXY_DROP, TH_PROXY_BLACKHOLE, TH_PROXY_SLOW,
                     TH_PROXY_JITTER };

/* th_proxy_freeze flags */
#define TH_PROXY_COMMANDS 1     /* leave subscriber connections alone */

typedef struct th_proxy th_proxy_t;

typedef struct th_proxy_stats {
    uint64_t accepted;          /* client connections accepted */
    uint64_t refused;           /* reset at accept (DROP), or Redis unreachable */
    uint64_t cuts;              /* connections cut by the proxy */
    uint64_t open;              /* connections open now */
    uint64_t bytes_c2s, bytes_s2c;   /* forwarded */
    uint64_t discarded;         /* bytes thrown away (BLACKHOLE, cuts) */
    uint64_t replies_cut, requests_cut;
    uint64_t pushes_muted;      /* chunks of pub/sub messages thrown away */
    uint64_t jittered;          /* client chunks given a random delay */
    uint64_t frozen, thawed;    /* connections frozen, thawed (th_proxy_freeze) */
    uint64_t late_conns;        /* thawed after their client had closed them */
    uint64_t late_bytes;        /* bytes delivered after their client closed */
    uint64_t frozen_now, frozen_bytes;  /* connections frozen now, bytes they keep */
    uint64_t frozen_closed;     /* ... of which their client closed (gave up) */
} th_proxy_stats_t;

/* Starts the proxy thread; NULL on failure. */
th_proxy_t *th_proxy_start(int target_port);
/* Cuts everything, joins the thread, frees. */
void th_proxy_stop(th_proxy_t *p);
int th_proxy_port(const th_proxy_t *p);
/* "redis://127.0.0.1:PORT" of the proxy. */
const char *th_proxy_url(const th_proxy_t *p);
/* A proxy to the suite's server, started (the test fails otherwise), its
 * URL written into url (size bytes) for the process it stands before. */
th_proxy_t *th_proxy_url_for(char *url, size_t size);
/* Changes the mode (delay_ms: SLOW's delay); takes effect at once. */
void th_proxy_mode(th_proxy_t *p, int mode, long delay_ms);
/* Cuts every current connection once; the mode stays. */
void th_proxy_cut_all(th_proxy_t *p);
void th_proxy_cut_replies(th_proxy_t *p, int n);
void th_proxy_cut_requests(th_proxy_t *p, int n);
void th_proxy_mute_pushes(th_proxy_t *p, int on);
void th_proxy_get_stats(th_proxy_t *p, th_proxy_stats_t *s);
/* JITTER mode with its delays; seed makes the sequence repeatable. */
void th_proxy_jitter(th_proxy_t *p, long min_ms, long max_ms, unsigned seed);
/* See above; returns how many connections were frozen. */
int th_proxy_freeze(th_proxy_t *p, pid_t pid, int flags, long hold_ms);
/* Ends every freeze now; returns how many connections it ended. */
int th_proxy_thaw(th_proxy_t *p);
/* See above; returns how many connections it applies to now. */
int th_proxy_delay(th_proxy_t *p, pid_t pid, long c2s_ms, long s2c_ms);
/* The same, and the connections pid opens from now on get those delays
 * too (one process at a time; 0, 0 ends it): its reconnections and their
 * resends are as late. */
int th_proxy_delay_sticky(th_proxy_t *p, pid_t pid, long c2s_ms, long s2c_ms);
/* Waits until no connection that is not frozen has client bytes queued
 * (what was due is with Redis): 1, or 0 after timeout_ms. */
int th_proxy_settled(th_proxy_t *p, long timeout_ms);

#endif
