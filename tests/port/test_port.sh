#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# test_port.sh BUILD_DIR - <distlock/pthread.h>, the one-line port.
# tests/port/bank (a pthread program of six files: a ledger under a
# mutex, a journal under a rwlock, a queue under a mutex and two
# conditions, an audit count under a mutex initialized at run time,
# tellers under a semaphore, a start barrier, a lock per worker on the
# heap) is built as written and ported by one line (cmake/port.cmake).
# Several processes of each run at once, as on several hosts: the ported
# ones keep the ledger and the audit exact, no journal record torn, at most
# TELLERS at the window, no worker past the start before all arrived;
# the plain ones do not (each check can fail).  Also the port's edges
# (tests/port/edges.c): names from the place of an initializer and from
# DIST_NAME, places given twice stopped, zeroed mutexes stopped, no
# self-deadlock, priority protocols refused, pthread_once left alone.
# Run under tools/with-redis.sh.
set -u
. "$(dirname "$0")/../../tools/launch/launch.sh"
: "${DISTLOCK_URL:?run under tools/with-redis.sh}"
BIN=$(cd "${1:?usage: $0 BUILD_DIR}" && pwd)
SRC=$(cd "$(dirname "$0")" && pwd)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/distlock-port.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
export DISTLOCK_PREFIX="dlport$$:"
PASSED=0
FAILED=0
ok()   { PASSED=$((PASSED + 1)); echo "ok   - $*"; }
fail() { FAILED=$((FAILED + 1)); echo "FAIL - $*"; }
check() { local what=$1; shift; if "$@"; then ok "$what"; else fail "$what"; fi; }
counter() { local v; v=$(head -c 20 "$1" 2>/dev/null | tr -dc 0-9); echo $((10#${v:-0})); }

# The port is one line.
diff "$SRC/bank.h" "$BIN/port_ported/bank.h" >"$WORK/diff"
check "the port adds one line to bank.h: $(grep '^>' "$WORK/diff")" \
  [ "$(grep -c '^[<>]' "$WORK/diff")" = 1 -a "$(grep -c '^> #include <distlock/pthread.h>$' "$WORK/diff")" = 1 ]

P=3
T=3
JOBS=12
TELLERS=2

# run PROGRAM SECONDS: P processes of it on one directory, each given at
# most SECONDS; sets DEP, TORN, WIN, EARLY (from their lines), BAD, and the
# files' LEDGER and AUDIT.
run() {
  local prog=$1 secs=$2 dir=$WORK/$1 pids=() i
  rm -rf "$dir"; mkdir -p "$dir"
  for i in $(seq $P); do
    timeout "$secs" "$BIN/$prog" "$dir" $T $JOBS $((P * T)) $TELLERS >"$WORK/out.$i" 2>"$WORK/err.$i" &
    pids+=($!)
  done
  BAD=0
  for i in "${pids[@]}"; do wait "$i" || BAD=$((BAD + 1)); done
  DEP=0; TORN=0; WIN=0; EARLY=0
  for i in $(seq $P); do
    local l
    l=$(cat "$WORK/out.$i")
    DEP=$((DEP + $(sed -n 's/.*deposits=\([0-9]*\).*/\1/p' <<<"$l" | grep . || echo 0)))
    TORN=$((TORN + $(sed -n 's/.*torn=\([0-9]*\).*/\1/p' <<<"$l" | grep . || echo 0)))
    EARLY=$((EARLY + $(sed -n 's/.*early=\([0-9]*\).*/\1/p' <<<"$l" | grep . || echo 0)))
    local w
    w=$(sed -n 's/.*window_max=\([0-9]*\).*/\1/p' <<<"$l")
    [ -n "$w" ] && [ "$w" -gt "$WIN" ] && WIN=$w
  done
  LEDGER=$(counter "$dir/ledger")
  AUDIT=$(counter "$dir/audit")
}

t0=$SECONDS
run bank_ported 240
echo "     ported: $(cat "$WORK"/out.* | tr '\n' ' ')($((SECONDS - t0)) s)"
WANT=$((P * JOBS))
check "ported: $P processes ran ($BAD failed: $(cat "$WORK"/err.* | head -c 300))" [ "$BAD" = 0 ]
check "ported: every job deposited once: ledger $LEDGER, audit $AUDIT, of $WANT ($DEP done)" \
  [ "$LEDGER" = "$WANT" -a "$AUDIT" = "$WANT" -a "$DEP" = "$WANT" ]
check "ported: no journal record read half-written ($TORN)" [ "$TORN" = 0 ]
check "ported: at most $TELLERS at the tellers' window at once, of every process ($WIN)" \
  [ "$WIN" -le $TELLERS -a "$WIN" -ge 1 ]
check "ported: no worker past the start line before all $((P * T)) arrived ($EARLY early)" [ "$EARLY" = 0 ]

run bank_plain 5
echo "     plain: $(cat "$WORK"/out.* | tr '\n' ' ')"
check "plain, its barrier of $((P * T)) never fills in one process: the processes hang (the check can fail)" \
  [ "$BAD" = $P ]
# The same program with a barrier of its own threads: it runs, and loses.
rm -rf "$WORK/plain2"; mkdir -p "$WORK/plain2"
pids=()
for i in $(seq $P); do
  timeout 240 "$BIN/bank_plain" "$WORK/plain2" $T $JOBS $T $TELLERS >"$WORK/p.$i" 2>&1 &
  pids+=($!)
done
for i in "${pids[@]}"; do wait "$i"; done
L=$(counter "$WORK/plain2/ledger"); A=$(counter "$WORK/plain2/audit")
WP=0
for i in $(seq $P); do
  w=$(sed -n 's/.*window_max=\([0-9]*\).*/\1/p' "$WORK/p.$i"); [ -n "$w" ] && [ "$w" -gt "$WP" ] && WP=$w
done
check "plain: updates lost across processes (ledger $L, audit $A of $WANT) or more than $TELLERS at the window ($WP): the checks can fail" \
  bash -c '[ "$1" -lt "$3" ] || [ "$2" -lt "$3" ] || [ "$4" -gt "$5" ]' _ "$L" "$A" "$WANT" "$WP" "$TELLERS"

# --- edges
E=$BIN/port_edges
keys() { redis-cli -u "$DISTLOCK_URL" --scan --pattern "${DISTLOCK_PREFIX}*$1*" | wc -l; }
line=$(grep -n 'EDGES_PLACE_LINE' "$SRC/edges.c" | cut -d: -f1)
"$E" place 3000 >"$WORK/e1" 2>&1 &
EP=$!
for _ in $(seq 100); do grep -q held "$WORK/e1" && break; sleep 0.05; done
check "a statically initialized mutex is named by its place: edges.c:$line in Redis ($(keys "edges.c:$line"))" \
  [ "$(keys "edges.c:$line")" -ge 1 ]
wait "$EP"
"$E" named 3000 >"$WORK/e2" 2>&1 &
EP=$!
for _ in $(seq 100); do grep -q held "$WORK/e2" && break; sleep 0.05; done
check "DIST_NAME(\"edges-named\", PTHREAD_MUTEX_INITIALIZER): that name in Redis" [ "$(keys edges-named)" -ge 1 ]
wait "$EP"

stopped() { # MODE TEXT: the mode stops the program (abort) with one line saying TEXT
  local out st
  out=$("$E" "$1" 2>&1)
  st=$?
  check "$1: stopped (status $st) with one line: $(head -c 240 <<<"$out")" \
    bash -c '[ "$1" -ne 0 ] && [ "$(grep -c "^distlock: " <<<"$2")" = 1 ] && grep -q "$3" <<<"$2" && ! grep -q "^ok\|both used\|locked a" <<<"$2"' \
    _ "$st" "$out" "$2"
}
stopped twoinline "a second lock named by this place"
stopped loop "a second lock named by this place"
stopped zeroed "not initialized (all zero)"
check "each of an array named with dist_pthread_name before its init: ok" [ "$("$E" loopnamed 2>&1)" = ok ]
check "a default mutex locked twice by its owner: EDEADLK, no self-deadlock" [ "$("$E" relock 2>&1)" = EDEADLK ]
check "priority inheritance refused: ENOTSUP" [ "$("$E" protocol 2>&1)" = ENOTSUP ]
check "pthread_once is pthreads' own: ran once" [ "$("$E" once 2>&1)" = "ran 1" ]
res=$("$E" condclock 400 2>&1)
check "pthread_condattr_setclock(CLOCK_MONOTONIC), then timedwait: '$res' (ETIMEDOUT, not early)" \
  bash -c '[[ "$1" == ETIMEDOUT* ]] && [[ "$1" != *early* ]] && [ "$(awk "{ print \$2 }" <<<"$1")" -ge 400 ]' _ "$res"
check "sem_init, trywait, post, getvalue: $("$E" sem 2>&1)" [ "$("$E" sem 2>&1)" = "ok EAGAIN value=1" ]

echo "$PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]
