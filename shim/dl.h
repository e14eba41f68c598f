/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dl.h - the library's internal umbrella header: the basics every file
 * uses (time, the last error and logging, the counters) and the lock
 * objects' common calls.  Each module's own header declares the rest.
 *
 * The files of shim/, each .c with its .h of the same name, by layer
 * (docs/ARCHITECTURE.md draws them):
 *
 *   dl.h          this map, and the basics below
 * the basics
 *   clock.c       monotonic time, deadlines, sleeping, thread ids, jitter
 *   error.c       dist_strerror, the per-thread last error, logging, quoting
 *   status.c      the process's counters of round trips, renewals, handoffs
 *   version.c     dist_version()
 *   config.c      DISTLOCK_* environment and DISTLOCK_URL -> dl_config_t
 *   keys.c        the Redis keys of a lock name (shared with the tools)
 *   process.c     the per-process state (dl_proc_t), its reset after fork,
 *                 library threads
 *   self.c        who this process is: a tag of its own, its forks, its
 *                 ancestors (what a shared lock object is checked against)
 * the API
 *   mutex.c       the pthread_mutex_* mirror (distlock.h)
 *   rwlock.c      the pthread_rwlock_* mirror (distlock.h)
 *   object.c      what the two share: validation, the name, lazy
 *                 resolution to the lock state, fences
 *   objtab.c      the objects this process resolved, and their lock states
 * the lock module (one writer per group of dl_lock_t's fields: registry.h)
 *   registry.c    name -> the process's one lock state, references
 *   holds.c       each thread's stack of holds on a lock
 *   lock.c        the entry: local admission and handoff
 *   take.c        taking the Redis hold: ask, wait for a grant, late grants
 *   hold.c        the hold once taken: record, vouch, release, linger
 *   tenure.c      how long a hold may serve without asking Redis
 *   trust.c       the epoch every sign of lost state moves on
 *   mark.c        what Redis must know of a lingering hold (lua/mark.lua)
 *   notify.c      the subscriber thread: grants pushed to waiters
 *   watchdog.c    the thread renewing every hold in one batch
 *   lingerer.c    the thread ending lingering holds on time
 * the scripts
 *   calls.c       one typed call per script of lua/: ARGV and reply
 *   script.c      running calls: EVALSHA, EVAL on NOSCRIPT, batches, posts
 *   quorum.c      redlock://: a call on every server, the replies merged
 * the connections (conn.h has their own map)
 *   conn.c        the one interface, a backend per topology, capabilities
 *   single.c      redis://, unix://, rediss://: one link
 *   sentinel.c    redis-sentinel://: the master found through sentinels
 *   cluster.c     redis-cluster://: a link per node, slots, MOVED/ASK, a
 *                 lock's keys moved together while its slot migrates
 *   redlock.c     redlock://: a link per independent server
 *   deferred.c    redlock://: releases and withdrawals owed to a server
 *                 that failed, sent in the background until they land
 *   cmdlink.c     a link: one socket shared and pipelined by all threads
 *   cmdlink_io.c  a link's batch I/O: connect, retry, deadlines, undos
 *   cmd.h         a command and its reply (no .c)
 *   connect.c     opening one connection: TCP/unix, AUTH, SELECT
 *   tls.c         TLS: the client contexts and the handshake
 *   tls_relay.c   TLS: the relay threads, the fork/exit lock
 *   tls_direct.c  TLS: the command link's own I/O on its session
 *
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
