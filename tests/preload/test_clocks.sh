#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# test_clocks.sh LIB BUILD_DIR - waits on CLOCK_MONOTONIC of an unmodified
# program (tests/preload/posixlegacy.c, semlegacy.c) on mapped objects
# wait on that clock: pthread_mutex_clocklock, pthread_rwlock_clockrdlock
# and clockwrlock while another process holds the lock,
# pthread_cond_clockwait, pthread_cond_timedwait on a condition
# initialized with pthread_condattr_setclock(CLOCK_MONOTONIC), and
# sem_clockwait, each of 1.5 s, end with ETIMEDOUT after 1.5 s on the
# monotonic clock, never before, while the wall clock is set back an hour
# 300 ms into the wait (tests/preload/fakeclock.c, preloaded first: the
# program, the interposer and the library all read its CLOCK_REALTIME).
# A wait that went by the wall clock would end an hour late.  Run under
# tools/with-redis.sh.
. "$(dirname "$0")/lib.sh"

: "${DISTLOCK_URL:?run under tools/with-redis.sh}"
export DISTLOCK_PREFIX="dlpclock$$:"
PL=$BIN/preload_posixlegacy
SEM=$BIN/preload_semlegacy
FAKE=$BIN/libpreload_fakeclock.so
MAP="m=mutex:g_clock_lock;rw=rwlock:g_clock_rw;c=cond:g_clock_cv;mc=cond:g_mono_cv;z=sem:/zero"
MS=1500

# A holder in another process, for the locks (it lets go by itself, long
# after the waits end: killed, its hold would last a lease).
holder() {
  DISTLOCK_MAP=$MAP LD_PRELOAD=$LIB "$PL" hold "$1" "$2" >"$WORK/holder" 2>&1 &
  HPID=$!
  DLP_PIDS+=("$HPID")
  for _ in $(seq 200); do
    grep -q held "$WORK/holder" && return 0
    sleep 0.05
  done
  return 1
}

# stepped CMD...: CMD with the wall clock set back an hour 300 ms after it
# starts; prints its output (killed after 20 s: a wait by the wall clock).
stepped() {
  DISTLOCK_MAP=$MAP LD_PRELOAD="$FAKE $LIB" DISTLOCK_TEST_WALL_STEP=-3600 \
    DISTLOCK_TEST_WALL_AFTER_MS=300 timeout 20 "$@" 2>"$WORK/err" || echo "killed-or-failed $?"
}

judge() { # WHAT RESULT: ETIMEDOUT after >= MS and < 10 s, not early
  local ms
  ms=$(awk '{ print $2 }' <<<"$2")
  check "$1 on CLOCK_MONOTONIC, wall clock set back an hour: '$2' (ETIMEDOUT at >= $MS ms, not an hour late)" \
    bash -c '[[ "$1" == ETIMEDOUT* ]] && [[ "$1" != *early* ]] && [ "$2" -ge '$MS' ] && [ "$2" -lt 10000 ]' \
    _ "$2" "${ms:-0}"
}

# The fake clock works: a program's own CLOCK_REALTIME goes back.
out=$(LD_PRELOAD=$FAKE DISTLOCK_TEST_WALL_STEP=-3600 DISTLOCK_TEST_WALL_AFTER_MS=0 date +%s)
check "the fake wall clock is an hour back ($out against $(date +%s))" [ $(( $(date +%s) - out )) -ge 3500 ]

holder mutex 4000
judge "pthread_mutex_clocklock" "$(stepped "$PL" clock mutex $MS)"
wait "$HPID"
holder rw 6000
judge "pthread_rwlock_clockrdlock" "$(stepped "$PL" clock rdlock $MS)"
judge "pthread_rwlock_clockwrlock" "$(stepped "$PL" clock wrlock $MS)"
wait "$HPID"
judge "pthread_cond_clockwait" "$(stepped "$PL" clock cond $MS)"
judge "pthread_cond_timedwait, condattr_setclock(CLOCK_MONOTONIC)" "$(stepped "$PL" clock condmono $MS)"
DISTLOCK_MAP=$MAP LD_PRELOAD=$LIB "$SEM" open /zero c 0 >/dev/null
judge "sem_clockwait" "$(stepped "$SEM" clock /zero $MS)"

finish
