#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# with-redis.sh CMD [ARG...]
# Runs CMD with DISTLOCK_URL pointing at a redis-server of its own: started
# on a free port of 127.0.0.1, without persistence, stopped when CMD ends.
# Exits with CMD's status.  If DISTLOCK_URL is already set, only runs CMD.
set -u

if [ $# -eq 0 ]; then
  echo "usage: $0 CMD [ARG...]" >&2
  exit 2
fi
if [ -n "${DISTLOCK_URL:-}" ]; then
  exec "$@"
fi
command -v redis-server >/dev/null 2>&1 || {
  echo "with-redis: redis-server not found (run tools/deps.sh)" >&2; exit 127; }

dir=$(mktemp -d "${TMPDIR:-/tmp}/distlock-redis.XXXXXX")
pid=""

stop_redis() {
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    kill "$pid" 2>/dev/null
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
  fi
  pid=""
}
# shellcheck disable=SC2317  # called from the traps
cleanup() { stop_redis; rm -rf "$dir"; }
trap cleanup EXIT
trap 'cleanup; trap - INT; kill -INT $$' INT
trap 'cleanup; trap - TERM; kill -TERM $$' TERM

# A port nobody listens on now.  The kernel picks one when python3 is there;
# otherwise random ones are tried.  Either way another program may take it
# before redis does, so start_redis retries on failure.
free_port() {
  if command -v python3 >/dev/null 2>&1; then
    python3 -c 'import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()' && return
  fi
  local p
  for _ in $(seq 100); do
    p=$(( 20000 + (RANDOM * 32768 + RANDOM) % 40000 ))
    if command -v ss >/dev/null 2>&1; then
      ss -Htln "sport = :$p" 2>/dev/null | grep -q . && continue
    fi
    redis-cli -h 127.0.0.1 -p "$p" ping >/dev/null 2>&1 && continue
    echo "$p"; return 0
  done
  return 1
}

start_redis() {
  local port=$1
  redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no \
    --dir "$dir" --logfile "$dir/redis.log" --daemonize no >/dev/null 2>&1 &
  pid=$!
  for _ in $(seq 100); do                      # up to 10 s
    kill -0 "$pid" 2>/dev/null || { wait "$pid" 2>/dev/null; pid=""; return 1; }
    if [ "$(redis-cli -h 127.0.0.1 -p "$port" ping 2>/dev/null)" = PONG ]; then
      return 0
    fi
    sleep 0.1
  done
  stop_redis
  return 1
}

started=""
for _ in 1 2 3 4 5; do
  port=$(free_port) || break
  if start_redis "$port"; then started=1; break; fi
done
if [ -z "$started" ]; then
  echo "with-redis: could not start redis-server on 127.0.0.1" >&2
  [ -f "$dir/redis.log" ] && tail -n 20 "$dir/redis.log" >&2
  exit 1
fi

export DISTLOCK_URL="redis://127.0.0.1:$port"
"$@"
exit $?
