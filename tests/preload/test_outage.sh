#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# test_outage.sh LIB BUILD_DIR - Redis unreachable under both
# DISTLOCK_ON_ERROR policies.  abort: the program prints why (one
# "distlock: ..." line naming the lock and the server) and aborts, from a
# pthread wrapper and from a file-lock wrapper.  wait (the default): the
# program waits, warns at most every 5 s (not at every retry), and carries
# on with exact counts once a redis-server appears on the port.
# Starts and stops its own redis-server (by pid) on a free port.
. "$(dirname "$0")/lib.sh"

LEGACY=$BIN/preload_legacy
CTR=$WORK/ledger
export DISTLOCK_IO_TIMEOUT_MS=300
export DISTLOCK_PREFIX="dlpoutage$$:"
unset DISTLOCK_ON_ERROR
PORT=$(dl_free_port) || { echo "no free port"; exit 1; }
export DISTLOCK_URL="redis://127.0.0.1:$PORT"
MAP_MUTEX="ledger=mutex:g_ledger_lock"
MAP_FILE="jobs=flock:$WORK/a.lock"

# --- abort
for kind in mutex flock; do
  rm -f "$CTR"
  if [ $kind = mutex ]; then
    DISTLOCK_ON_ERROR=abort DISTLOCK_MAP=$MAP_MUTEX preload "$LEGACY" mutex "$CTR" 1 1 2>"$WORK/err"
    rc=$?; name=ledger
  else
    DISTLOCK_ON_ERROR=abort DISTLOCK_MAP=$MAP_FILE preload "$LEGACY" flock "$WORK/a.lock" "$CTR" 1 2>"$WORK/err"
    rc=$?; name=jobs
  fi
  line=$(grep '^distlock: ' "$WORK/err" | head -1)
  check "abort ($kind): the program aborts (status $rc)" test "$rc" -eq 134
  check "abort ($kind): it says why: $line" \
    bash -c "[[ '$line' == *'\"$name\"'*'127.0.0.1:$PORT'*'(DISTLOCK_ON_ERROR=abort)' ]]"
  check "abort ($kind): in the library's words: Redis unreachable, where, for how long" \
    bash -c "[[ '$line' == *'Redis is unreachable at redis://127.0.0.1:$PORT '*'DISTLOCK_IO_TIMEOUT_MS='* ]]"
  check "abort ($kind): nothing ran unprotected" test "$(counter "$CTR")" -eq 0
done

# --- wait: Redis appears after ~3 s
for kind in mutex flock; do
  rm -f "$CTR"
  if [ $kind = mutex ]; then
    DISTLOCK_MAP=$MAP_MUTEX preload "$LEGACY" mutex "$CTR" 3 1 2>"$WORK/err" &
  else
    DISTLOCK_ON_ERROR=wait DISTLOCK_MAP=$MAP_FILE preload "$LEGACY" flock "$WORK/a.lock" "$CTR" 3 2>"$WORK/err" &
  fi
  lp=$!
  DLP_PIDS+=("$lp")
  sleep 3
  alive=0
  kill -0 "$lp" 2>/dev/null && alive=1
  check "wait ($kind): still waiting after 3 s without Redis" test "$alive" = 1
  check "wait ($kind): redis-server started on port $PORT" dl_redis_start "$WORK" -p "$PORT"
  t0=$SECONDS
  wait "$lp"
  rc=$?
  check "wait ($kind): the program finished once Redis came (status $rc, $((SECONDS - t0)) s)" \
    test "$rc" -eq 0 -a $((SECONDS - t0)) -le 10
  check "wait ($kind): exact count ($(counter "$CTR") of 3)" test "$(counter "$CTR")" -eq 3
  warns=$(grep -c 'waiting for Redis (DISTLOCK_ON_ERROR=wait)' "$WORK/err")
  retries=$(grep -c 'retrying for up to' "$WORK/err")
  check "wait ($kind): $warns warning(s) in ~3 s of retries every 300 ms (at most one per 5 s)" \
    test "$warns" -ge 1 -a "$warns" -le 1
  check "wait ($kind): the library's own per-attempt warning is not repeated ($retries)" test "$retries" -le 1
  check "wait ($kind): says when Redis is back" grep -q 'Redis reachable again' "$WORK/err"
  dl_redis_stop "$DL_REDIS_PID"
done

finish
