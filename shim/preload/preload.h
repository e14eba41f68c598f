/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * preload.h - internals of libdistlock_preload.so, the LD_PRELOAD
 * interposer that turns chosen pthread mutexes, rwlocks, conditions,
 * barriers, lock files and named semaphores of an unmodified program into
 * distributed ones (SPEC "The interposer").
 *
 * The machinery names no kind:
 *   kind.c     the table of kinds (kind.h: what a kind tells the rest)
 *   map.c      DISTLOCK_MAP text -> entries of those kinds (pure parsing)
 *   elfsym.c   symbol name or exe+0xOFFSET -> address in this process
 *   demangle.c the C++ names of globals' mangled symbols (elfsym.c's)
 *   real.c     the real libc functions behind the wrappers (each declared
 *              where it is called), the guard
 *   table.c    the entries' read-only address table, the dormant state
 *   policy.c   the distributed half of a call under DISTLOCK_ON_ERROR,
 *              the interposer's messages
 *   boot.c     the constructor: decides which entries are this program's
 *              (launchers, @PROGRAM), makes them, runs the kinds' hooks
 *   lockwrap.c what the pthread lock kinds' wrappers share
 *   filelock.c the process-owned distributed holds of file locks
 *   keeper.c   the keeper: a process that keeps the holds of file locks
 *              held across exec (flock -F, chpst -l ...)
 *   kept.c     what a program started with such locks knows of their keepers
 *   wrap_exec.c the exec family: holds handed to a keeper before exec (no
 *              header: it offers only exported libc names)
 * A kind is its wrappers and its dlp_kind_t, in one file:
 *   wrap_mutex.c     mutex:   pthread_mutex_*
 *   wrap_rwlock.c    rwlock:  pthread_rwlock_*
 *   wrap_cond.c      cond:    pthread_cond_* (and waits on a mapped mutex)
 *   wrap_barrier.c   barrier: pthread_barrier_init, wait, destroy
 *   wrap_file.c      flock:   flock, fcntl, fcntl64, lockf, lockf64, close
 *   wrap_sem.c       sem:     sem_open and the calls on the semaphores it maps
 *
 * Each machinery file has its header of the same name; a wrap_*.c file
 * has none (it offers only exported libc names, and its kind, which
 * kind.h declares).  Every file includes this one, which includes the
 * headers in the order they need each other.
 *
 * The rule every wrapper follows: anything not in the map costs one range
 * check (and, inside the range, one hash probe) and goes straight to libc,
 * with no lock and no allocation.  (A dormant program's range is
 * everything: its first lock call ends it.)
 */
#ifndef DLP_PRELOAD_H
#define DLP_PRELOAD_H

/* Exported, unversioned: every version of a call binds to the wrapper.
 * The build exports exactly the functions marked so. */
#define DLP_EXPORT __attribute__((visibility("default")))
#define DLP_LIKELY(x) __builtin_expect(!!(x), 1)
#define DLP_UNLIKELY(x) __builtin_expect(!!(x), 0)

/* Everything the headers below declare is internal to the library: hidden
 * (each pushes it), so the hot path reads its globals PC-relative instead
 * of through the GOT. */
#include "kind.h"
#include "map.h"
#include "elfsym.h"
#include "demangle.h"
#include "real.h"
#include "table.h"
#include "policy.h"
#include "lockwrap.h"
#include "filelock.h"
#include "keeper.h"
#include "kept.h"
#include "boot.h"

#endif
