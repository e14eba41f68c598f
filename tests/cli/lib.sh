# SPDX-License-Identifier: BSD-3-Clause
# lib.sh - what the CLI test scripts share.  Sourced by tests/cli/test_*.sh,
# which run under tools/with-redis.sh (DISTLOCK_URL points at a private
# redis-server) and take the distlock binary as $1.
#
#   check DESC CMD...        CMD succeeds
#   expect DESC 'EXPR'       the shell expression EXPR holds (may use && ||)
#   run CMD...               runs CMD: $rc, $out (stdout), $err (stderr)
#   expect_rc WANT DESC      the last run exited WANT
#   expect_usage DESC ARG... distlock ARG... fails with 64 and one line
#   bg CMD...                starts CMD in the background, remembers its pid
#   wait_until SECS CMD...   polls CMD every 50 ms (CMD's words are expanded once)
#   wait_pid PID [SECS]      waits for a background process, at most SECS
#   finish                   prints "N passed, N failed", exits 1 on failure
# and the servers of tools/launch/launch.sh (dl_redis_start, dl_stop_pid...).
# Background processes, then those servers, are stopped (by pid) when the
# script exits.

set -u
. "$(dirname "${BASH_SOURCE[0]}")/../../tools/launch/launch.sh"
D=${1:?usage: $0 DISTLOCK_BINARY}
D=$(cd "$(dirname "$D")" && pwd)/$(basename "$D")
[ -x "$D" ] || { echo "not executable: $D" >&2; exit 2; }
: "${DISTLOCK_URL:?run under tools/with-redis.sh}"
REDIS_PORT=${DISTLOCK_URL##*:}
REDIS_PORT=${REDIS_PORT%%/*}
T=$(mktemp -d "${TMPDIR:-/tmp}/distlock-cli-test.XXXXXX")
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
# A short lease keeps loss detection (lease/3) and lapses quick.
export DISTLOCK_IO_TIMEOUT_MS=2000

# The shell's own stderr (such as bash's notices about background jobs
# killed by a signal, which these tests do on purpose) goes to a file,
# shown at the end if a test failed.
exec 2>"$T/shell.err"

pass=0
fail=0
bg_pids=()
started=$(date +%s.%N)

# SIGTERM first: a distlock passes it on to its command and releases its
# lock, so no orphaned command outlives the test; SIGKILL what is left.
cleanup() {
  local p alive=()
  for p in "${bg_pids[@]}"; do
    kill -TERM "$p" 2>/dev/null && alive+=("$p")
  done
  for p in "${alive[@]}"; do
    wait_until 2 eval "! kill -0 $p 2>/dev/null" || kill -KILL "$p" 2>/dev/null
  done
  dl_redis_stop_all
  wait 2>/dev/null
  rm -rf "$T"
}
trap cleanup EXIT

ok() {
  pass=$((pass + 1))
  echo "ok   $1"
}

nok() {
  fail=$((fail + 1))
  echo "FAIL $1"
  shift
  local l
  for l in "$@"; do
    printf '       | %s\n' "$l"
  done
}

run() {
  "$@" >"$T/out" 2>"$T/err"
  rc=$?
  out=$(cat "$T/out")
  err=$(cat "$T/err")
}

check() {
  local desc=$1
  shift
  if "$@"; then ok "$desc"; else nok "$desc" "failed: $*" "rc=${rc:-} out=${out:-}" "err=${err:-}"; fi
}

# expect DESC 'EXPR': EXPR (a shell expression, evaluated here, which may
# use && and ||) is true.  `check DESC A && B` would check only A.
expect() {
  local desc=$1
  if eval "$2"; then ok "$desc"; else nok "$desc" "false: $2" "rc=${rc:-} out=${out:-}" "err=${err:-}"; fi
}

expect_rc() {
  local want=$1 desc=$2
  if [ "$rc" = "$want" ]; then
    ok "$desc"
  else
    nok "$desc" "exit status $rc, expected $want" "stdout: $out" "stderr: $err"
  fi
}

# The last run printed exactly one line on stderr, starting "distlock: ".
one_line_err() {
  [ "$(printf '%s\n' "$err" | wc -l)" -eq 1 ] && [ "${err#distlock: }" != "$err" ]
}

expect_usage() {
  local desc=$1
  shift
  run "$D" "$@"
  if [ "$rc" = 64 ] && one_line_err && [ -z "$out" ]; then
    ok "$desc"
  else
    nok "$desc" "distlock $*" "exit status $rc (expected 64)" "stdout: $out" "stderr: $err"
  fi
}

bg() {
  "$@" &
  bg_pids+=($!)
  last_pid=$!
}

# wait_pid PID [SECS]: waits for a background PID (10 s by default); one
# that is still running then is killed and counts as a failure.  Sets $rc.
wait_pid() {
  local pid=$1 secs=${2:-10}
  if ! wait_until "$secs" eval "! kill -0 $pid 2>/dev/null"; then
    nok "pid $pid still running after ${secs}s: killed"
    kill -KILL "$pid" 2>/dev/null
  fi
  wait "$pid" 2>/dev/null
  rc=$?
}

wait_until() {
  local secs=$1
  shift
  local n=$((secs * 20))
  while [ "$n" -gt 0 ]; do
    "$@" && return 0
    sleep 0.05
    n=$((n - 1))
  done
  return 1
}

held() { "$D" status "$1" >/dev/null 2>&1; }
free() { ! held "$1"; }
rcli() { redis-cli -h 127.0.0.1 -p "$REDIS_PORT" "$@"; }
# The number of waiters status reports for a lock.
waiting() { "$D" status "$1" --json 2>/dev/null | sed -n 's/.*"waiting":\([0-9]*\).*/\1/p'; }
# Polls (up to 5 s) until NAME has N waiters.  (Not `wait_until 5 test
# "$(waiting NAME)" = N`: that would expand $(...) once, before polling.)
has_waiting() { [ "$(waiting "$1")" = "$2" ]; }
wait_waiting() {
  wait_until 5 has_waiting "$1" "$2" || { nok "5 s without $2 waiters on $1 (now: $(waiting "$1"))"; return 1; }
}
# Semaphores, read straight from Redis (docs/PROTOCOL.md, "Semaphores"),
# so that a test waits on the state itself, not on the view it checks:
# sem_count NAME SUFFIX, the members of a zset key of semaphore NAME
# (:l its holders, :q its queue); wait_sem NAME SUFFIX N polls (up to 5 s)
# until there are N, a time-out counting as a failure.
sem_count() { rcli ZCARD "${DISTLOCK_PREFIX:-distlock:}{"$'\x01'"s$1}$2"; }
has_sem() { [ "$(sem_count "$1" "$2")" = "$3" ]; }
wait_sem() {
  wait_until 5 has_sem "$@" || { nok "5 s without $3 in $2 of semaphore $1 (now: $(sem_count "$1" "$2"))"; return 1; }
}
# Polls (up to 5 s) until NAME is held; a time-out counts as a failure.
wait_held() { wait_until 5 held "$1" || { nok "5 s without a holder of $1"; return 1; }; }
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'; }
# elapsed_between SECONDS LOW HIGH
between() { awk -v x="$1" -v lo="$2" -v hi="$3" 'BEGIN { exit !(x >= lo && x <= hi) }'; }

finish() {
  if [ "$fail" -gt 0 ] && [ -s "$T/shell.err" ]; then
    echo "-- stderr of the test script:"
    cat "$T/shell.err"
  fi
  echo "$pass passed, $fail failed ($(elapsed "$started")s)"
  [ "$fail" -eq 0 ]
}
