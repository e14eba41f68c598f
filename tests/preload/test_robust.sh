#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# test_robust.sh LIB BUILD_DIR - a robust pthread mutex of an unmodified
# program (tests/preload/posixlegacy.c: pthread_mutexattr_setrobust, then
# pthread_mutex_init, pthread_mutex_consistent) mapped by a `mutex:` entry
# is a DIST_MUTEX_ROBUST lock: the next locker after a holder's process
# was killed, in another process, gets EOWNERDEAD; after
# pthread_mutex_consistent its unlock frees the lock; an unlock without it
# leaves the lock unrecoverable (ENOTRECOVERABLE for every process) until
# a process destroys and initializes the mutex again.  Without the
# interposer the other process hears nothing of the death (the check can
# fail).  Run under tools/with-redis.sh.
. "$(dirname "$0")/lib.sh"

: "${DISTLOCK_URL:?run under tools/with-redis.sh}"
export DISTLOCK_PREFIX="dlprobust$$:"
export DISTLOCK_LEASE_MS=1000
export DISTLOCK_MAP="r=mutex:g_robust_lock"
PL=$BIN/preload_posixlegacy

# killed_holder PRELOAD(0|1): a process takes the lock and is killed.
killed_holder() {
  local lp=""
  [ "$1" = 1 ] && lp=$LIB
  LD_PRELOAD=$lp "$PL" robust-hold >"$WORK/holder" 2>&1 &
  local h=$!
  DLP_PIDS+=("$h")
  for _ in $(seq 200); do
    grep -q held "$WORK/holder" && break
    sleep 0.05
  done
  kill -9 "$h"
  wait "$h" 2>/dev/null
}

pre() { LD_PRELOAD=$LIB timeout 30 "$PL" "$@" 2>"$WORK/err"; }

killed_holder 1
res=$(pre robust-lock consistent)
check "after the holder's process died: EOWNERDEAD, consistent, unlock ($res)" \
  [ "$res" = "EOWNERDEAD consistent=ok unlock=ok" ]
res=$(pre robust-lock leave)
check "made consistent, the lock works on: the next lock is ok ($res)" [ "$res" = "ok unlock=ok" ]

killed_holder 1
res=$(pre robust-lock leave)
check "after another death, unlocked without consistent ($res)" [ "$res" = "EOWNERDEAD unlock=ok" ]
res=$(pre robust-lock leave)
check "then every later lock, in another process, is ENOTRECOVERABLE ($res)" [ "$res" = ENOTRECOVERABLE ]
res=$(pre robust-reinit)
check "destroy and init again (a process told ENOTRECOVERABLE): usable again ($res)" \
  [ "$res" = "ENOTRECOVERABLE destroy=ok again=ok unlock=ok" ]
res=$(pre robust-lock leave)
check "and for every process ($res)" [ "$res" = "ok unlock=ok" ]

# A mutex the program did not make robust keeps the library's default:
# the death is taken as acquired (with a warning), the lock stays usable.
DISTLOCK_MAP="ledger=mutex:g_ledger_lock" LD_PRELOAD=$LIB "$BIN/preload_legacy" holdmutex 60000 \
  >"$WORK/lh" 2>&1 &
LH=$!
DLP_PIDS+=("$LH")
for _ in $(seq 200); do grep -q held "$WORK/lh" && break; sleep 0.05; done
kill -9 "$LH"; wait "$LH" 2>/dev/null
out=$(DISTLOCK_MAP="ledger=mutex:g_ledger_lock" LD_PRELOAD=$LIB timeout 30 "$BIN/preload_legacy" \
  holdmutex 10 2>&1)
check "a mapped mutex that is not robust: taken after the death, with a warning ($(tr '\n' ' ' <<<"$out"))" \
  bash -c 'grep -q done <<<"$1" && grep -q "previous holder" <<<"$1"' _ "$out"

killed_holder 0
res=$(timeout 30 "$PL" robust-lock consistent 2>&1)
check "without the interposer another process hears nothing of the death ($res): the check can fail" \
  [ "$res" = "ok unlock=ok" ]

finish
