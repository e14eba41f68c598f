# SPDX-License-Identifier: BSD-3-Clause
# lib.sh - shared by the preload test scripts (sourced).
#   $1: path of libdistlock_preload.so   $2: the build directory (test programs)
# Provides: LIB, BIN, WORK (a temporary directory removed at exit), ok/fail,
# check, preload (runs a command with the interposer), finish.
set -u

if [ $# -lt 2 ]; then
  echo "usage: $0 LIBDISTLOCK_PRELOAD_SO BUILD_DIR" >&2
  exit 2
fi
LIB=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
BIN=$(cd "$2" && pwd)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/distlock-preload.XXXXXX")
PASSED=0
FAILED=0
DLP_PIDS=()

dlp_cleanup() {
  local p
  for p in "${DLP_PIDS[@]}"; do
    kill "$p" 2>/dev/null
  done
  rm -rf "$WORK"
}
trap dlp_cleanup EXIT

ok()   { PASSED=$((PASSED + 1)); echo "ok   - $*"; }
fail() { FAILED=$((FAILED + 1)); echo "FAIL - $*"; }
# check DESCRIPTION COMMAND...: passes when COMMAND succeeds.
check() {
  local what=$1; shift
  if "$@"; then ok "$what"; else fail "$what"; fi
}

# preload CMD...: CMD with the interposer (and whatever DISTLOCK_* is set).
preload() { LD_PRELOAD=$LIB "$@"; }

finish() {
  echo "$PASSED passed, $FAILED failed"
  [ "$FAILED" -eq 0 ]
}

# Reads the counter a legacy run left in FILE (0 if none).
counter() {
  local v
  v=$(head -c 20 "$1" 2>/dev/null | tr -dc 0-9)
  echo $((10#${v:-0}))
}

# Unused 127.0.0.1 port (nobody listens there now).
free_port() {
  if command -v python3 >/dev/null 2>&1; then
    python3 -c 'import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()' && return
  fi
  local p
  for _ in $(seq 100); do
    p=$(( 20000 + (RANDOM * 32768 + RANDOM) % 40000 ))
    redis-cli -h 127.0.0.1 -p "$p" ping >/dev/null 2>&1 && continue
    echo "$p"; return 0
  done
  return 1
}

# start_redis PORT: a redis-server of this test on PORT; sets REDIS_PID.
start_redis() {
  local port=$1
  redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no \
    --dir "$WORK" --logfile "$WORK/redis-$port.log" --daemonize no >/dev/null 2>&1 &
  REDIS_PID=$!
  DLP_PIDS+=("$REDIS_PID")
  for _ in $(seq 100); do
    kill -0 "$REDIS_PID" 2>/dev/null || return 1
    [ "$(redis-cli -h 127.0.0.1 -p "$port" ping 2>/dev/null)" = PONG ] && return 0
    sleep 0.1
  done
  return 1
}

stop_redis() {
  if [ -n "${REDIS_PID:-}" ]; then
    kill "$REDIS_PID" 2>/dev/null
    wait "$REDIS_PID" 2>/dev/null
    REDIS_PID=
  fi
}
