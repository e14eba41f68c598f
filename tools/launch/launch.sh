# SPDX-License-Identifier: BSD-3-Clause
# launch.sh - sourced by the shell scripts (tools/with-redis.sh, the CLI and
# interposer tests, tools/cost/script-cost.sh): their one way to start a
# private redis-server, as tools/launch/launch.c is the C programs'.  On
# 127.0.0.1, on a free port (or a given one, for a restart), with no
# persistence, ready only once the server on the port says it is this very
# process (INFO's process_id), stopped by its pid.
#
#   dl_free_port
#       a TCP port of 127.0.0.1 nobody listens on now, on stdout (status 1
#       if none is found).  Someone may take it before it is used.
#   dl_redis_start DIR [-p PORT] [-c CONF] [-t CAFILE] [-- OPTION...]
#       redis-server [CONF] --port PORT --bind 127.0.0.1 --save '' --appendonly no
#       --daemonize no --dir DIR --logfile DIR/redis-PORT.log OPTION..., in
#       the background; PORT a free one (up to 5 tried) unless -p.  -t: PORT
#       is a TLS port (--port 0 --tls-port PORT; the certificate and key go
#       in OPTION), checked with redis-cli --tls --cacert CAFILE.  Waits (10
#       s) until it answers.  Sets DL_REDIS_PORT and DL_REDIS_PID and adds
#       the pid to DL_REDIS_PIDS; status 1 (with the log's end on stderr)
#       if no server came up.
#   dl_stop_pid PID [SECS]
#       SIGCONT, SIGTERM, SIGKILL after SECS (5) seconds, and a wait for it
#       (any child of the script: a server, a command run in the background).
#   dl_redis_stop PID
#       dl_stop_pid for a server dl_redis_start started, which it then
#       forgets (its pid may go to another process).
#   dl_redis_stop_all
#       every server dl_redis_start started and that still runs, newest
#       first: for the script's EXIT trap (the script owns its traps).

DL_REDIS_PIDS=()

dl_free_port() {
  if command -v python3 >/dev/null 2>&1; then
    python3 -c 'import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()' && return
  fi
  # Without python3: random ports, skipping those something listens on.
  local p
  for _ in $(seq 100); do
    p=$(( 20000 + (RANDOM * 32768 + RANDOM) % 40000 ))
    if command -v ss >/dev/null 2>&1; then
      # (no pipe into grep -q: a script that sources this may run under
      # pipefail, where ss killed by SIGPIPE would read as "port free")
      [ -n "$(ss -Htln "sport = :$p" 2>/dev/null)" ] && continue
    fi
    redis-cli -h 127.0.0.1 -p "$p" ping >/dev/null 2>&1 && continue
    echo "$p"; return 0
  done
  return 1
}

# (Every command may fail without ending a script that runs under set -e.)
dl_stop_pid() {
  local pid=$1 n=$(( ${2:-5} * 10 ))
  kill -CONT "$pid" 2>/dev/null || true
  if kill -TERM "$pid" 2>/dev/null; then
    while [ "$n" -gt 0 ] && kill -0 "$pid" 2>/dev/null; do
      sleep 0.1
      n=$((n - 1))
    done
    kill -KILL "$pid" 2>/dev/null || true
  fi
  wait "$pid" 2>/dev/null || true
}

dl_redis_stop() {
  local p keep=()
  dl_stop_pid "$1"
  for p in "${DL_REDIS_PIDS[@]}"; do
    [ "$p" = "$1" ] || keep+=("$p")
  done
  DL_REDIS_PIDS=("${keep[@]}")
}

dl_redis_stop_all() {
  local i
  for ((i = ${#DL_REDIS_PIDS[@]} - 1; i >= 0; i--)); do
    dl_stop_pid "${DL_REDIS_PIDS[$i]}"
  done
  DL_REDIS_PIDS=()
}

# _dl_redis_is PORT PID [CAFILE]: the server on PORT is process PID.
_dl_redis_is() {
  local tls=()
  [ -n "${3:-}" ] && tls=(--tls --cacert "$3")
  [ "$(redis-cli "${tls[@]}" -h 127.0.0.1 -p "$1" info server 2>/dev/null |
       tr -d '\r' | sed -n 's/^process_id://p')" = "$2" ]
}

dl_redis_start() {
  local dir=$1 port="" conf=() ca="" tries=5 log="" pid n
  shift
  while [ $# -gt 0 ]; do
    case $1 in
      -p) port=$2; tries=1; shift 2 ;;
      -c) conf=("$2"); shift 2 ;;
      -t) ca=$2; shift 2 ;;
      --) shift; break ;;
      *) echo "dl_redis_start: unknown option $1" >&2; return 2 ;;
    esac
  done
  local first=${port:-}
  for ((; tries > 0; tries--)); do
    port=${first:-$(dl_free_port)} || return 1
    log="$dir/redis-$port.log"
    local ports=(--port "$port")
    [ -n "$ca" ] && ports=(--port 0 --tls-port "$port")
    redis-server "${conf[@]}" "${ports[@]}" --bind 127.0.0.1 --save '' --appendonly no \
      --daemonize no --dir "$dir" --logfile "$log" "$@" >/dev/null 2>&1 &
    pid=$!
    for ((n = 100; n > 0; n--)); do                 # up to 10 s
      kill -0 "$pid" 2>/dev/null || break           # it died: its port taken?
      if _dl_redis_is "$port" "$pid" "$ca"; then
        # shellcheck disable=SC2034  # the caller's
        DL_REDIS_PORT=$port
        # shellcheck disable=SC2034
        DL_REDIS_PID=$pid
        DL_REDIS_PIDS+=("$pid")
        return 0
      fi
      sleep 0.1
    done
    dl_stop_pid "$pid" 1
  done
  echo "${0##*/}: could not start redis-server on 127.0.0.1" >&2
  if [ -f "$log" ]; then tail -n 20 "$log" >&2; fi
  return 1
}
