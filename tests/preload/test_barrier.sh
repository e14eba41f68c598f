#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# test_barrier.sh LIB BUILD_DIR - a global pthread_barrier_t of an
# unmodified program (tests/preload/barlegacy.c) mapped by a
# `NAME=barrier:SYMBOL` entry: several processes, as on several hosts, each
# initializing it with the whole count, pass each phase together: no
# thread is released before every arrival of its phase (a file's size
# counts them) and exactly one waiter of each phase, in whichever process,
# gets PTHREAD_BARRIER_SERIAL_THREAD.  Without the interposer, each process
# using a barrier of its own count, the check finds threads released early
# (it can fail).  Also: an arrival counts once made, also when its process
# is killed while it waits; destroy while a thread waits is EBUSY; a
# process that inits with another count while others wait stops with one
# line; redlock:// and a symbol too small are refused before main; a
# program with none of the map's symbols stops at its first barrier wait.
# Run under tools/with-redis.sh.
. "$(dirname "$0")/lib.sh"

: "${DISTLOCK_URL:?run under tools/with-redis.sh}"
export DISTLOCK_PREFIX="dlpbar$$:"
BAR=$BIN/preload_barlegacy
P=3            # processes
T=2            # threads each
N=12           # phases

# arrivals NAME: the arrivals of the generation under way, as Redis has them.
arrivals() {
  local n
  n=$(redis-cli -u "$DISTLOCK_URL" HGET "$(printf '%s{\001b%s}' "$DISTLOCK_PREFIX" "$1")" n)
  echo "${n:-0}"
}

# phases PRELOAD(0|1) COUNT: P processes of T threads, N phases; sets
# EARLY, AHEAD, SERIALS (from the processes' own counts), SLINES (the
# serial file's lines), PHASES_OK (each phase's number once in it), BAD.
phases() {
  local pre=$1 count=$2 f=$WORK/arr.$1 pids=() i lp=""
  rm -f "$f" "$f.serial"
  [ "$pre" = 1 ] && lp=$LIB
  for i in $(seq $P); do
    DISTLOCK_MAP="phase=barrier:g_phase_barrier" LD_PRELOAD=$lp timeout 60 \
      "$BAR" phases "$f" $N $T "$count" $((P * T)) >"$WORK/out.$i" 2>"$WORK/err.$i" &
    pids+=($!)
    DLP_PIDS+=($!)
  done
  BAD=0
  for i in "${pids[@]}"; do wait "$i" || BAD=$((BAD + 1)); done
  EARLY=0; AHEAD=0; SERIALS=0
  for i in $(seq $P); do
    local l
    l=$(cat "$WORK/out.$i")
    EARLY=$((EARLY + $(sed -n 's/.*early=\([0-9]*\).*/\1/p' <<<"$l" | grep . || echo 0)))
    AHEAD=$((AHEAD + $(sed -n 's/.*ahead=\([0-9]*\).*/\1/p' <<<"$l" | grep . || echo 0)))
    SERIALS=$((SERIALS + $(sed -n 's/.*serials=\([0-9]*\).*/\1/p' <<<"$l" | grep . || echo 0)))
  done
  SLINES=$(wc -l <"$f.serial" 2>/dev/null || echo 0)
  PHASES_OK=0
  [ "$(sort -n "$f.serial" 2>/dev/null | tr '\n' ' ')" = "$(seq 0 $((N - 1)) | tr '\n' ' ')" ] && PHASES_OK=1
}

phases 1 $((P * T))
if [ "$BAD" -eq 0 ] && [ "$EARLY" -eq 0 ] && [ "$AHEAD" -eq 0 ]; then
  ok "with the interposer: $P processes x $T threads passed $N phases together (none early, none ahead)"
else
  fail "with the interposer: $BAD failed, $EARLY released early, $AHEAD ahead: $(cat "$WORK"/err.* | head -3)"
fi
check "exactly one PTHREAD_BARRIER_SERIAL_THREAD per phase, across the processes ($SERIALS of $N; each phase once: $PHASES_OK)" \
  [ "$SERIALS" -eq $N -a "$SLINES" -eq $N -a "$PHASES_OK" -eq 1 ]

# Without the interposer the processes cannot meet: each uses a barrier of
# its own threads' count (what it would do on one host), and passes its
# phases without the others.
phases 0 $T
check "without the interposer threads are released before the other processes arrive ($EARLY early): the check can fail" \
  [ "$BAD" -eq 0 -a "$EARLY" -gt 0 ]

pre() { DISTLOCK_MAP="${MAP:-phase=barrier:g_phase_barrier}" LD_PRELOAD=$LIB "$BAR" "$@"; }
# The same in the background: the job is the program itself (exec), so
# that $! is its pid, to kill.
bg_pre() { DISTLOCK_MAP="${MAP:-phase=barrier:g_phase_barrier}" LD_PRELOAD=$LIB exec "$BAR" "$@"; }

# An arrival counts once made: a process killed while it waits leaves it.
MAP="dead=barrier:g_phase_barrier"
bg_pre arrive 3 >"$WORK/arrive" 2>&1 &
APID=$!
DLP_PIDS+=("$APID")
for _ in $(seq 200); do
  [ "$(arrivals dead)" = 1 ] && break
  sleep 0.05
done
check "the first process arrived (Redis counts $(arrivals dead))" [ "$(arrivals dead)" = 1 ]
kill -9 "$APID"; wait "$APID" 2>/dev/null
check "the first process is gone (killed while it waited)" bash -c '! kill -0 "$1" 2>/dev/null' _ "$APID"
bg_pre once 3 >"$WORK/o1" 2>"$WORK/oe1" &
O1=$!
DLP_PIDS+=("$O1")
pre once 3 >"$WORK/o2" 2>"$WORK/oe2"
wait "$O1"
res=$(sort "$WORK/o1" "$WORK/o2" | tr '\n' ' ')
check "killed after arriving, its arrival still counts: two more released the generation ($res)" \
  [ "$res" = "released serial " ]

# destroy while a thread of the process waits: EBUSY; the barrier works on.
MAP="busy=barrier:g_phase_barrier"
res=$(pre busy 2 2>&1 | tr '\n' ' ')
check "pthread_barrier_destroy while a thread waits: EBUSY, then the wait completes ($res)" \
  [ "$res" = "EBUSY done " ]

# Another count while arrivals of the barrier's own count wait: one line.
MAP="counted=barrier:g_phase_barrier"
bg_pre once 3 >"$WORK/w3" 2>&1 &
W3=$!
DLP_PIDS+=("$W3")
for _ in $(seq 200); do
  [ "$(arrivals counted)" = 1 ] && break
  sleep 0.05
done
out=$(pre once 2 2>&1)
st=$?
echo "     $out"
check "a process with another count stops (status $st)" [ "$st" = 1 ]
check "... with one line naming both counts" \
  bash -c '[ "$(wc -l <<<"$1")" = 1 ] && grep -q "count 3" <<<"$1" && grep -q "count 2" <<<"$1"' _ "$out"
kill "$W3" 2>/dev/null; wait "$W3" 2>/dev/null

# Refused before main.
out=$(DISTLOCK_URL=redlock://127.0.0.1:1,127.0.0.1:2,127.0.0.1:3 pre hello 2>&1)
st=$?
check "barriers refused with redlock:// before main (status $st: $out)" \
  bash -c '[ "$1" = 1 ] && grep -q "redlock" <<<"$2" && ! grep -q hello <<<"$2"' _ "$st" "$out"
out=$(MAP="x=barrier:g_small" pre hello 2>&1)
st=$?
check "an int is too small for a barrier (status $st: $out)" \
  bash -c '[ "$1" = 1 ] && grep -q "too small for a pthread_barrier_t" <<<"$2"' _ "$st" "$out"
out=$(MAP="x=barrier:g_phase_barier" pre once 1 2>&1)
st=$?
check "none of the map's symbols: stopped at the first barrier call (status $st: $out)" \
  bash -c '[ "$1" = 1 ] && grep -q "first pthread barrier init" <<<"$2" && ! grep -q serial <<<"$2"' \
  _ "$st" "$out"

finish
