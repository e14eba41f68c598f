/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * preload.h - internals of libdistlock_preload.so, the LD_PRELOAD
 * interposer that turns chosen pthread mutexes, rwlocks and lock files of
 * an unmodified program into distributed locks (SPEC "The interposer").
 *
 *   map.c      DISTLOCK_MAP text -> entries (pure parsing, no lookups)
 *   elfsym.c   symbol name or exe+0xOFFSET -> address in this process
 *   real.c     the real libc functions behind the wrappers, the guard
 *   table.c    the entries' read-only address table, the dormant state
 *   policy.c   the distributed half of a call under DISTLOCK_ON_ERROR,
 *              the interposer's messages
 *   boot.c     the constructor: decides which entries are this program's
 *              (launchers, @PROGRAM), builds the entries and the table
 *   wrap_pthread.c   mutex, condvar and rwlock wrappers
 *   filelock.c       the process-owned distributed holds of file locks
 *   wrap_file.c      flock, fcntl, fcntl64, lockf, lockf64, close
 *   wrap_sem.c       sem_open and the calls on the semaphores it maps
 *
 * Each file has its header of the same name (the wrap_*.c files offer
 * only the exported libc names); every file includes this one, which
 * includes them all in the order they need each other.
 *
 * The rule every wrapper follows: anything not in the map costs one range
 * check (and, inside the range, one hash probe) and goes straight to libc,
 * with no lock and no allocation.  (A dormant program's range is
 * everything: its first lock call ends it.)
 */
#ifndef DLP_PRELOAD_H
#define DLP_PRELOAD_H

/* Exported, unversioned: every version of a call binds to the wrapper. */
#define DLP_EXPORT __attribute__((visibility("default")))
#define DLP_LIKELY(x) __builtin_expect(!!(x), 1)
#define DLP_UNLIKELY(x) __builtin_expect(!!(x), 0)

/* Everything the headers below declare is internal to the library: hidden
 * (each pushes it), so the hot path reads its globals PC-relative instead
 * of through the GOT. */
#include "map.h"
#include "elfsym.h"
#include "real.h"
#include "table.h"
#include "policy.h"
#include "filelock.h"
#include "boot.h"
#include "wrap_pthread.h"
#include "wrap_file.h"
#include "wrap_sem.h"

#endif
