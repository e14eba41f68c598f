#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# test_cond.sh LIB BUILD_DIR - a producer/consumer queue of the legacy
# program (tests/preload/legacy.c: produce, consume; a count in a file
# under a global pthread mutex, announced with pthread_cond_signal on a
# global pthread_cond_t) run as several processes, as on several hosts:
# with the mutex and the condition mapped (mutex:, cond:), consumers in
# other processes are woken by the producer's pthread_cond_signal within
# milliseconds, never by their timed wait running out, and every item is
# taken once; without the interposer the consumers hear no signal and wake
# only by time-out.  A map with the condition but not its mutex stops the
# program with a one-line reason.  Run under tools/with-redis.sh.
. "$(dirname "$0")/lib.sh"

: "${DISTLOCK_URL:?run under tools/with-redis.sh}"
export DISTLOCK_PREFIX="dlpcond$$:"
LEGACY=$BIN/preload_legacy
Q=$WORK/queue
MAP='ledger=mutex:g_ledger_lock;q=cond:g_queue_cv'
C=3            # consumers, each its own process
N=10           # items each
GAP=20         # ms between items
WAIT=5000      # each consumer's timed wait (ms): a wake-up by time-out shows
GIVEUP=30000

# registered: how many consumers wait on the condition in Redis now.
registered() {
  redis-cli -u "$DISTLOCK_URL" ZCARD "$(printf '%s{\001cq}' "$DISTLOCK_PREFIX")"
}

rm -f "$Q"
pids=()
for i in $(seq $C); do
  DISTLOCK_MAP=$MAP LD_PRELOAD=$LIB "$LEGACY" consume "$Q" $N $WAIT $GIVEUP \
    >"$WORK/c.$i" 2>"$WORK/ce.$i" &
  pids+=($!)
  DLP_PIDS+=($!)
done
# The consumers wait before the first item is made: each item is then
# taken by a consumer that a signal from another process woke.
for _ in $(seq 200); do
  [ "$(registered)" = "$C" ] && break
  sleep 0.05
done
check "$C consumers wait on the mapped condition in Redis" [ "$(registered)" = "$C" ]
t0=$(date +%s%N)
DISTLOCK_MAP=$MAP LD_PRELOAD=$LIB "$LEGACY" produce "$Q" $((C * N)) $GAP >"$WORK/p" 2>"$WORK/pe"
check "the producer made $((C * N)) items" grep -q "produced=$((C * N))" "$WORK/p"
st=0
for p in "${pids[@]}"; do wait "$p" || st=1; done
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
check "the consumers ended well" [ "$st" = 0 ]
total=0; tmo=0; worst=0
for i in $(seq $C); do
  line=$(cat "$WORK/c.$i")
  echo "     consumer $i: $line"
  got=$(sed -n 's/.*consumed=\([0-9]*\).*/\1/p' <<<"$line")
  t=$(sed -n 's/.*timeouts=\([0-9]*\).*/\1/p' <<<"$line")
  w=$(sed -n 's/.*max_wake_ms=\([0-9]*\).*/\1/p' <<<"$line")
  total=$((total + ${got:-0})); tmo=$((tmo + ${t:-1})); [ "${w:-99999}" -gt "$worst" ] && worst=${w:-99999}
done
check "every item taken once: $total of $((C * N)), the queue empty ($(counter "$Q"))" \
  [ "$total" = $((C * N)) -a "$(counter "$Q")" = 0 ]
check "no consumer's wait ended by its time-out ($tmo; the run took $ms ms)" [ "$tmo" = 0 ]
# Woken by the signal's push: within milliseconds.  The bound is far above
# a loaded machine's push latency and far below the 5 s time-out it rules
# out (a wake by time-out is counted above too).
check "woken at most ${worst} ms after the signal (< 1000 ms; the time-out is $WAIT ms)" \
  [ "$worst" -lt 1000 ]
cat "$WORK"/ce.* "$WORK/pe" | grep -v '^$' | head -5

# Without the interposer no signal reaches another process: the consumers
# wake by their time-outs (short ones here, so the run is short).
rm -f "$Q"
pids=()
for i in $(seq $C); do
  "$LEGACY" consume "$Q" $N 100 1500 >"$WORK/n.$i" 2>/dev/null &
  pids+=($!)
  DLP_PIDS+=($!)
done
sleep 0.2
"$LEGACY" produce "$Q" $((C * N)) $GAP >/dev/null
for p in "${pids[@]}"; do wait "$p"; done
tmo=0
for i in $(seq $C); do
  t=$(sed -n 's/.*timeouts=\([0-9]*\).*/\1/p' "$WORK/n.$i")
  tmo=$((tmo + ${t:-0}))
done
check "without the interposer the consumers wake by time-out ($tmo waits timed out)" [ "$tmo" -gt 0 ]

# A condition waited on with a mutex that is not mapped: one line, exit 1.
rm -f "$Q"
out=$(DISTLOCK_MAP='q=cond:g_queue_cv' LD_PRELOAD=$LIB timeout 20 "$LEGACY" consume "$Q" 1 100 500 2>&1)
st=$?
echo "     $out"
check "a wait with an unmapped mutex stops the program (status $st)" [ "$st" = 1 ]
check "... saying why in one line" \
  bash -c '[ "$(wc -l <<<"$1")" = 1 ] && grep -q "not in the map" <<<"$1"' _ "$out"

finish
