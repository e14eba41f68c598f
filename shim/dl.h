/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dl.h - the library's internal umbrella header: the basics every file
 * uses (time, the last error and logging, the counters) and the lock
 * objects' common calls.  Each module's own header declares the rest.
 *
 * The files of shim/ (each .c with its .h of the same name, unless said):
 *
 *   dl.h          this map, and the basics below
 *   clock.c       monotonic time, deadlines, sleeping, thread ids, jitter
 *   error.c       dist_strerror, the per-thread last error, logging, quoting
 *   status.c      the process's counters of round trips, renewals, handoffs
 *   version.c     dist_version()
 *   config.c      DISTLOCK_* environment and DISTLOCK_URL -> dl_config_t
 *   process.c     the per-process state (dl_proc_t), its reset after fork,
 *                 library threads
 *   object.c      what dist_mutex_t and dist_rwlock_t share: validation,
 *                 the name, lazy resolution to the lock state, fences
 *   mutex.c       the pthread_mutex_* mirror (declared in distlock.h)
 *   rwlock.c      the pthread_rwlock_* mirror (declared in distlock.h)
 *   lock.c        acquiring and releasing: the local lock, then the Redis
 *                 hold (lock.h)
 *   holds.c       each thread's stack of holds on a lock (registry.h)
 *   registry.c    name -> the process's one lock state (dl_lock_t)
 *   tenure.c      how long a hold may be used without asking Redis (lock.h)
 *   mark.c        what Redis must know of a lingering hold (lock.h)
 *   notify.c      the subscriber connection: grants pushed to waiters
 *                 (lock.h)
 *   watchdog.c    the thread renewing every hold in one batch (lock.h)
 *   keys.c        the Redis keys of a lock name
 *   script.c      the embedded Lua scripts: EVALSHA, NOSCRIPT fallback,
 *                 batches
 *   quorum.c      redlock://: the scripts on N masters, a majority decides
 *                 (script.h)
 *   conn.c        the process's command connections (one link, a
 *                 cluster's, redlock's servers)
 *   connect.c     opening one connection: TCP/unix, AUTH, SELECT,
 *                 Sentinel (conn.h)
 *   link.c        one server's shared auto-pipelined connection
 *                 (dl_link.h)
 *   cluster.c     redis-cluster://: slot routing, MOVED/ASK (dl_link.h)
 *   tls.c         TLS: the client contexts and the handshake
 *   tls_relay.c   TLS: the relay threads, the fork/exit lock (internal to
 *                 the TLS files)
 *   tls_direct.c  TLS: the command link's own I/O on its session
 *   preload/      the LD_PRELOAD interposer (its map: preload/preload.h)
 *
 * Generated: dl_scripts.c (cmake/embed_lua.cmake) holds lua/ as strings
 * with their SHA1s (script.h).
 */
#ifndef DL_H
#define DL_H

#include "clock.h"
#include "error.h"
#include "object.h"
#include "status.h"

#endif
