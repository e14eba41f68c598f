/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dl.h - the library's internal umbrella header: the basics every file
 * uses (time, the last error and logging, the counters).  Each module's
 * own header declares the rest.
 *
 * The files of shim/, each .c with its .h of the same name, a folder per
 * layer, top to bottom (docs/ARCHITECTURE.md draws them).  Every folder is
 * on the include path: a file includes "x.h" wherever x lives.
 *
 *   dl.h            this map, and the basics below
 * api/       the API: objects of the application
 *   mutex.c         the pthread_mutex_* mirror (distlock.h)
 *   rwlock.c        the pthread_rwlock_* mirror (distlock.h)
 *   object.c        what the two share: validation, the name, lazy
 *                   resolution to the process's lock, fences, leases
 *   onlost.c        dist_onlost: the process's function for lost holds
 *   sem_api.c       the semaphore mirror (dist_sem_*), and sem_api.h: what
 *                   the interposer and the tools ask beyond it
 *   cond.c          the condition mirror (dist_cond_*); condwait.h: its
 *                   wait in three steps, for the interposer
 *   barrier.c       the barrier mirror (dist_barrier_*); barrier_api.h: a
 *                   stoppable wait and the mode check for the interposer
 *   once.c          dist_once
 *   port.c          the calls of <distlock/pthread.h> (dist_pthread_*): the
 *                   one-line port of a pthread program, its names, places
 *                   and policy
 * prim/      the primitives: each one's local admission on the hold core
 *   lock.c          the lock (mutex, rwlock): local admission and handoff,
 *                   its kind (dl_lock_kind)
 *   holds.c         each thread's stack of holds on a lock
 *   lockall.c       several locks at once (dist_mutex_lockall): all or
 *                   none, in one canonical order
 *   sem.c           the semaphore: counting and leased permits
 *   cond.c          the condition: waiters registered in Redis, signals
 *   barrier.c       the barrier: arrivals counted in Redis, one push per
 *                   process and generation, its kind (dl_barrier_kind)
 *   once.c          the once: its running state a hold taken with the
 *                   lock's scripts, its completion; its kind (dl_once_kind)
 * core/      the hold core: what every primitive's object has
 *   core.h          dl_core_t (its fields by writer) and dl_kind_t
 *   registry.c      (kind, name) -> the process's one object, references
 *   objtab.c        the API objects this process resolved, and their states
 *   take.c          taking the Redis hold: ask, wait for a grant, late
 *                   grants; the waiter's registration
 *   take_all.c      several holds taken in one call, all or none
 *   hold.c          the hold once taken: record, vouch, release, linger
 *   tenure.c        how long a hold may serve without asking Redis
 *   mark.c          what Redis must know of a lingering hold
 *   notify.c        the subscriber thread: grants pushed to waiters
 *   watchdog.c      the thread renewing every hold in one batch
 *   lingerer.c      the thread ending lingering holds on time
 *   loss.c          the thread telling dist_onlost's function of lost holds
 *   tally.c         an object's counters for the metrics file
 *   metrics.c       the metrics file: its thread, the counts by name
 *   process.c       the per-process state (dl_proc_t), its reset after
 *                   fork (and the hooks by which a layer above resets its
 *                   own: api/object.c's mutex)
 * script/    the scripts of lua/ as typed calls
 *   calls.c         what every call shares: building, ARGV, replies
 *   call_<name>.c   one script's entry: its typed call, ARGV, reply and
 *                   redlock merge (lua/<name>.lua; caller.h, and each
 *                   call_<name>.h)
 *   view.c          the view of an object that the status scripts' entries
 *                   decode their replies into (the distlock tool shows it)
 *   sem_calls.c, barrier_calls.c, once_calls.c, cond_wire.h
 *                   what one kind's entries share: its keys, first ARGV
 *   script.c        running calls: EVALSHA, EVAL on NOSCRIPT, batches, posts
 *   quorum.c        redlock://: a call on every server, the replies counted,
 *                   what a server that failed is owed
 * conn/      the connections (conn.h has their own map)
 *   conn.c          the one interface, a backend per topology, capabilities
 *   single.c        redis://, unix://, rediss://: one link
 *   sentinel.c      redis-sentinel://: the master found through sentinels
 *   cluster.c       redis-cluster://: a link per node, slots, a call in
 *                   rounds (route, a batch per node, settle: MOVED/ASK/
 *                   TRYAGAIN/CLUSTERDOWN)
 *   lockform.c      redis-cluster://: a lock's script with its guard key,
 *                   or with its first key only under ASK
 *   migrate.c       redis-cluster://: a lock's keys moved together to the
 *                   node importing their slot
 *   channel.c       the channels pushes go on: classic, or on a cluster one
 *                   per slot and process (SPUBLISH stays in the shard)
 *   shardsub.c      redis-cluster://: the subscriber's connections, one per
 *                   node, SSUBSCRIBEd to the process's channels of its slots
 *   redlock.c       redlock://: a link per independent server
 *   deferred.c      redlock://: releases and withdrawals owed to a server
 *                   that failed, sent in the background until they land
 *   cmdlink.c       a link: one socket shared and pipelined by all threads
 *   cmdlink_io.c    a link's batch I/O in steps: dial, round trip, what a
 *                   failure leaves (undos, trust), retry
 *   transport.c     how a link's bytes move: the table, the plain one
 *   fault.c         what an error reply or a broken connection means, and
 *                   which faults end the trust (trust.c)
 *   backoff.c       the pause between tries (links, cluster, subscriber)
 *   cmd.h           a command and its reply (no .c)
 *   connect.c       opening one connection: TCP/unix, AUTH, SELECT
 *   tls.c           TLS: the client contexts (a check config.c runs) and
 *                   the handshake
 *   tls_relay.c     TLS: the relay threads, the fork/exit lock
 *   tls_direct.c    TLS: the transport of the command links (their own
 *                   I/O on the session)
 * base/      the basics: no knowledge of locks or connections; it includes
 *            nothing above it
 *   clock.c         monotonic time, deadlines, sleeping, thread ids, jitter,
 *                   starting the library's threads
 *   error.c         dist_strerror, the per-thread last error, logging, quoting
 *   status.c        the process's counters of round trips, renewals, handoffs
 *   version.c       dist_version()
 *   config.c        DISTLOCK_* environment and DISTLOCK_URL -> dl_config_t
 *                   (and the checks of it registered from above: conn/tls.c
 *                   builds the TLS client context)
 *   keys.c          the Redis keys of an object of each kind (shared with
 *                   the tools)
 *   self.c          who this process is: a tag of its own, its forks, its
 *                   ancestors (what a shared lock object is checked against)
 *   trust.c         the epoch every sign of lost state moves on (the links,
 *                   the script layer and the subscriber see the signs; the
 *                   hold core reads it)
 *
 *   preload/        the LD_PRELOAD interposer (its map: preload/preload.h)
 *
 * Generated (cmake/embed_lua.cmake, from lua/): dl_scripts.c, the scripts'
 * text with their SHA1s (script.h); dl_script_list.h, the list of scripts
 * and their ids (for the entries and script.c; a user of a call includes
 * its call_<name>.h).
 */
#ifndef DL_H
#define DL_H

#include "clock.h"
#include "error.h"
#include "status.h"

#endif
