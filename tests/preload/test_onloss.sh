#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# test_onloss.sh LIB BUILD_DIR - DISTLOCK_ON_LOSS: a legacy program holds
# a mapped mutex (renewed every 500 ms) while the test deletes the lock's
# keys in Redis, as an operator or a restarted server would.  warn (the
# default): one "distlock: ..." line naming the lock and the policy, and
# the program runs to its end; abort: that line, then SIGABRT before the
# critical section ends; exit:7: that line, then status 7 (its stdout
# flushed by exit()); the same for a mapped flock() lock, and for a mapped
# semaphore (sem:) whose keys are deleted while the program is inside the
# section it gates (warn: one line, the post to the lost semaphore is
# dropped and the program goes on with the new one).  A bad value stops
# the program before main.
# Starts and stops its own redis-server (by pid) on a free port.
. "$(dirname "$0")/lib.sh"

LEGACY=$BIN/preload_legacy
PREFIX="dlploss$$:"
export DISTLOCK_PREFIX=$PREFIX
export DISTLOCK_LEASE_MS=1500          # renewed every 500 ms: the loss is found then
export DISTLOCK_MAP="ledger=mutex:g_ledger_lock"
unset DISTLOCK_ON_LOSS DISTLOCK_ON_ERROR
PORT=$(dl_free_port) || { echo "no free port"; exit 1; }
export DISTLOCK_URL="redis://127.0.0.1:$PORT"
check "redis-server started on port $PORT" dl_redis_start "$WORK" -p "$PORT"

# run_lost POLICY: runs `legacy holdmutex 8000` (8 s inside the lock) with
# DISTLOCK_ON_LOSS=POLICY (unset when empty), deletes the lock's keys once
# it says "held", and waits for it; sets RC, and leaves its output in
# $WORK/out and $WORK/err.
run_lost() {
  local policy=$1
  : >"$WORK/out"
  if [ -n "$policy" ]; then
    DISTLOCK_ON_LOSS=$policy preload "$LEGACY" holdmutex 8000 >"$WORK/out" 2>"$WORK/err" &
  else
    preload "$LEGACY" holdmutex 8000 >"$WORK/out" 2>"$WORK/err" &
  fi
  local lp=$!
  DLP_PIDS+=("$lp")
  for _ in $(seq 200); do
    grep -q '^held$' "$WORK/out" && break
    sleep 0.05
  done
  redis-cli -p "$PORT" --scan --pattern "${PREFIX}*" | while read -r k; do
    redis-cli -p "$PORT" del "$k" >/dev/null
  done
  wait "$lp"
  RC=$?
}

# The policy's line: names the lock and the policy.
loss_lines() { grep -c "^distlock: lock \"ledger\": the distributed hold (fence [0-9]*) was found lapsed.*(DISTLOCK_ON_LOSS=$1)" "$WORK/err"; }

# --- warn (the default): told once, the program goes on
run_lost ""
check "warn: the program ran to its end (status $RC)" test "$RC" -eq 0
check "warn: its critical section ended" grep -q '^done$' "$WORK/out"
check "warn: one line says so ($(loss_lines warn) lines)" test "$(loss_lines warn)" -eq 1

# --- abort
run_lost abort
check "abort: the program aborted (status $RC)" test "$RC" -eq 134
check "abort: its critical section did not end" bash -c "! grep -q '^done$' '$WORK/out'"
check "abort: one line says why ($(loss_lines abort) lines)" test "$(loss_lines abort)" -eq 1

# --- exit:7
run_lost exit:7
check "exit:7: the program exited with 7 (status $RC)" test "$RC" -eq 7
check "exit:7: its critical section did not end" bash -c "! grep -q '^done$' '$WORK/out'"
check "exit:7: its output before the loss was written" grep -q '^held$' "$WORK/out"
check "exit:7: one line says why ($(loss_lines 'exit:7') lines)" test "$(loss_lines 'exit:7')" -eq 1

# --- warn, a recursive mutex relocked after the loss: the relock takes the
# lock anew (EOWNERDEAD, logged), and the unlock that ends the section says
# ENOLCK to the interposer (SPEC: the hold the section began with lapsed);
# the loss is still told once, by the one policy line
: >"$WORK/out"
DISTLOCK_MAP="ledger=mutex:g_rec_lock" preload "$LEGACY" relockmutex 2000 \
  >"$WORK/out" 2>"$WORK/err" &
lp=$!
DLP_PIDS+=("$lp")
for _ in $(seq 200); do
  grep -q '^held$' "$WORK/out" && break
  sleep 0.05
done
redis-cli -p "$PORT" --scan --pattern "${PREFIX}*" | while read -r k; do
  redis-cli -p "$PORT" del "$k" >/dev/null
done
wait "$lp"
RC=$?
check "relock after the loss: the program ran to its end (status $RC)" test "$RC" -eq 0
check "relock after the loss: its critical section ended" grep -q '^done$' "$WORK/out"
check "relock after the loss: the relock took the lock anew" \
  grep -q 'lock "ledger": acquired after the previous holder' "$WORK/err"
check "relock after the loss: one line says so ($(loss_lines warn) lines)" \
  test "$(loss_lines warn)" -eq 1
check "relock after the loss: nothing is left held" \
  test "$(redis-cli -p "$PORT" exists "${PREFIX}{ledger}")" = 0

# --- a mapped file lock (flock) is a hold like the others
: >"$WORK/out"
DISTLOCK_MAP="jobs=flock:$WORK/a.lock" DISTLOCK_ON_LOSS=exit:9 \
  preload "$LEGACY" hold "$WORK/a.lock" 8000 >"$WORK/out" 2>"$WORK/err" &
lp=$!
DLP_PIDS+=("$lp")
for _ in $(seq 200); do
  grep -q '^held$' "$WORK/out" && break
  sleep 0.05
done
redis-cli -p "$PORT" --scan --pattern "${PREFIX}*" | while read -r k; do
  redis-cli -p "$PORT" del "$k" >/dev/null
done
wait "$lp"
RC=$?
check "flock, exit:9: the program exited with 9 (status $RC)" test "$RC" -eq 9
check "flock, exit:9: one line names the lock" \
  bash -c "[ \$(grep -c '^distlock: lock \"jobs\": .*(DISTLOCK_ON_LOSS=exit:9)' '$WORK/err') -eq 1 ]"

# --- a mapped semaphore that Redis loses: its keys deleted while the
# program is inside the section it gates (sem_open value 1)
SEMP=$BIN/preload_semlegacy
# run_sem POLICY: as run_lost, with `semlegacy gate /gate 3000`.
run_sem() {
  : >"$WORK/out"
  DISTLOCK_MAP="g=sem:/gate" DISTLOCK_ON_LOSS=$1 \
    preload "$SEMP" gate /gate 3000 >"$WORK/out" 2>"$WORK/err" &
  local lp=$!
  DLP_PIDS+=("$lp")
  for _ in $(seq 200); do
    grep -q '^inside$' "$WORK/out" && break
    sleep 0.05
  done
  redis-cli -p "$PORT" --scan --pattern "${PREFIX}*" | while read -r k; do
    redis-cli -p "$PORT" del "$k" >/dev/null
  done
  wait "$lp"
  RC=$?
}
sem_lines() { grep -c "^distlock: semaphore \"g\": Redis lost it while this program used it.*(DISTLOCK_ON_LOSS=$1)" "$WORK/err"; }

run_sem warn
check "sem, warn: the program ran to its end (status $RC)" test "$RC" -eq 0
check "sem, warn: one line says so ($(sem_lines warn) lines)" test "$(sem_lines warn)" -eq 1
check "sem, warn: the post to the lost semaphore was dropped, the gate works again: $(tr '\n' ' ' <"$WORK/out")" \
  bash -c "grep -q '^posted$' '$WORK/out' && grep -q '^again$' '$WORK/out' && grep -q '^value=1$' '$WORK/out'"

run_sem abort
check "sem, abort: the program aborted (status $RC)" test "$RC" -eq 134
check "sem, abort: its post did not return" bash -c "! grep -q '^posted$' '$WORK/out'"
check "sem, abort: one line says why ($(sem_lines abort) lines)" test "$(sem_lines abort)" -eq 1

run_sem exit:7
check "sem, exit:7: the program exited with 7 (status $RC)" test "$RC" -eq 7
check "sem, exit:7: its post did not return" bash -c "! grep -q '^posted$' '$WORK/out'"
check "sem, exit:7: one line says why ($(sem_lines 'exit:7') lines)" test "$(sem_lines 'exit:7')" -eq 1

# --- bad values stop the program before main, with one line
for bad in bogus exit: exit:256 exit:-1 'warn '; do
  DISTLOCK_ON_LOSS=$bad preload "$LEGACY" hello >"$WORK/out" 2>"$WORK/err"
  rc=$?
  check "DISTLOCK_ON_LOSS='$bad': stopped before main (status $rc)" \
    bash -c "[ $rc -ne 0 ] && ! grep -q hello '$WORK/out'"
  check "DISTLOCK_ON_LOSS='$bad': one line names the variable" \
    bash -c "[ \$(grep -c 'DISTLOCK_ON_LOSS=' '$WORK/err') -eq 1 ]"
done

dl_redis_stop "$DL_REDIS_PID"
finish
