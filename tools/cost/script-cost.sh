#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# script-cost.sh - what each protocol script costs Redis (docs/PERFORMANCE.md,
# "Script cost"): the commands it runs (counted by INFO commandstats, which
# counts the commands a script calls) and Redis CPU per call (usec_per_call
# of EVALSHA; the set-up between calls uses EVAL, so it is not counted).
#
#   tools/cost/script-cost.sh [LUA_DIR] [ITERATIONS]
#
# Starts its own redis-server on a free port of 127.0.0.1 (needs
# redis-server and redis-cli on PATH; tools/launch/launch.sh) and stops it,
# by its pid, at the end.
set -euo pipefail
LUA=${1:-$(dirname "$0")/../../lua}
N=${2:-300}
. "$(dirname "$0")/../launch/launch.sh"
DIR=$(mktemp -d)
trap 'dl_redis_stop_all; rm -rf "$DIR"' EXIT
dl_redis_start "$DIR" -- --slowlog-log-slower-than -1
PORT=$DL_REDIS_PORT

r() { redis-cli -p "$PORT" "$@"; }
# The text Redis runs, as the library embeds it (cmake/lua_assemble.cmake:
# common.lua, the script, its fast path put inside common.lua).
body() { cmake -DLUA_DIR="$LUA" -DOP="$1" -P "$(dirname "$0")/../../cmake/lua_assemble.cmake"; }
ACQ=$(body acquire); REL=$(body release)
ACQ_SHA=$(r SCRIPT LOAD "$ACQ"); REL_SHA=$(r SCRIPT LOAD "$REL")
K=(6 'd:{c}' 'd:{c}:r' 'd:{c}:ri' 'd:{c}:q' 'd:{c}:w' 'd:{c}:m')

# acquire VERB SCRIPT TOKEN MODE ENQUEUE REGID -> first two reply lines
acq() { r "$1" "$2" "${K[@]}" n: "$3" "$4" 30000 host:1:1 "$5" "$6" 2000 2000; }
# release VERB SCRIPT TOKEN MODE FENCE
rel() { r "$1" "$2" "${K[@]}" n: "$3" "$4" "$5"; }
fence_of() { sed -n 2p; }

# Commands the last EVALSHA ran inside it (stats reset just before it).
inner() {
  r INFO commandstats | tr -d '\r' | awk -F'[:=,]' '/^cmdstat_/ {
      if ($1 != "cmdstat_evalsha" && $1 !~ /^cmdstat_(config|info)/) n += $3 }
      END { print n + 0 }'
}
usec() { r INFO commandstats | tr -d '\r' | awk -F'[:=,]' '/^cmdstat_evalsha/ { print $7 }'; }

# A process's first release of a lock adds its release mark to the meta hash
# (and checks its size): warm() makes A's next release a steady-state one.
warm() { local f; f=$(acq EVAL "$ACQ" A w 0 1 | fence_of); rel EVAL "$REL" A w "$f" >/dev/null; }

count() {   # NAME: set up, then one EVALSHA measured
  local name=$1 n
  case $name in
  uncontended-acquire)
    r FLUSHALL >/dev/null; F=$(acq EVAL "$ACQ" A w 0 1 | fence_of); rel EVAL "$REL" A w "$F" >/dev/null
    r CONFIG RESETSTAT >/dev/null; acq EVALSHA "$ACQ_SHA" A w 0 2 >/dev/null ;;
  uncontended-release)
    r FLUSHALL >/dev/null; warm; F=$(acq EVAL "$ACQ" A w 0 1 | fence_of)
    r CONFIG RESETSTAT >/dev/null; rel EVALSHA "$REL_SHA" A w "$F" >/dev/null ;;
  contended-release)
    r FLUSHALL >/dev/null; warm; F=$(acq EVAL "$ACQ" A w 0 1 | fence_of); acq EVAL "$ACQ" B w 1 1 >/dev/null
    r CONFIG RESETSTAT >/dev/null; rel EVALSHA "$REL_SHA" A w "$F" >/dev/null ;;
  waiter-refresh)
    r FLUSHALL >/dev/null; acq EVAL "$ACQ" A w 0 1 >/dev/null; acq EVAL "$ACQ" B w 1 1 >/dev/null
    r CONFIG RESETSTAT >/dev/null; acq EVALSHA "$ACQ_SHA" B w 1 2 >/dev/null ;;
  esac
  n=$(inner)
  printf '%-22s %3d commands\n' "$name" "$n"
}

cpu() {     # NAME: usec per measured EVALSHA over N cycles
  local name=$1 i F
  r FLUSHALL >/dev/null; r CONFIG RESETSTAT >/dev/null
  for ((i = 1; i <= N; i++)); do
    case $name in
    contended-release)
      F=$(acq EVAL "$ACQ" A w 0 "$i" | fence_of); acq EVAL "$ACQ" B w 1 "$i" >/dev/null
      rel EVALSHA "$REL_SHA" A w "$F" >/dev/null
      r DEL 'd:{c}' 'd:{c}:q' 'd:{c}:w' >/dev/null ;;
    waiter-refresh)
      [ "$i" = 1 ] && { acq EVAL "$ACQ" A w 0 1 >/dev/null; acq EVAL "$ACQ" B w 1 1 >/dev/null; }
      acq EVALSHA "$ACQ_SHA" B w 1 $((i + 1)) >/dev/null ;;
    esac
  done
  printf '%-22s %6s us per call (%d calls)\n' "$name" "$(usec)" "$N"
}

for s in uncontended-acquire uncontended-release contended-release waiter-refresh; do count "$s"; done
for s in contended-release waiter-refresh; do cpu "$s"; done
