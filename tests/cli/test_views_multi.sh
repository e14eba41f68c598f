#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# test_views_multi.sh DISTLOCK: distlock metrics and top beyond one Redis:
# a 3-master Redis Cluster (a lock on each master: every master is read),
# 3 servers for redlock:// (a majority decides, as for status; one server
# down, then two), and a sentinel in front of the server
# tools/with-redis.sh started.  Every server here is started by this
# script on a free port of 127.0.0.1 and stopped by its pid.
. "$(dirname "$0")/lib.sh"

host=$(hostname)
PY=/usr/bin/python3
PARSE="$(dirname "$0")/promparse.py"
S=$(mktemp -d "${TMPDIR:-/tmp}/distlock-views.XXXXXX")
srv_pids=()
on_exit() {
  local p
  for p in "${bg_pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
  for p in "${bg_pids[@]}"; do
    wait_until 3 eval "! kill -0 $p 2>/dev/null" || kill -KILL "$p" 2>/dev/null
  done
  for p in "${srv_pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
  for p in "${srv_pids[@]}"; do
    wait_until 5 eval "! kill -0 $p 2>/dev/null" || kill -KILL "$p" 2>/dev/null
  done
  rm -rf "$S"
  cleanup
}
trap on_exit EXIT

# start_server NAME [redis-server options...]: on a free port of
# 127.0.0.1 (the one launcher, tools/launch/launch.sh); sets $port and $pid.
start_server() {
  local name=$1
  shift
  mkdir -p "$S/$name"
  dl_redis_start "$S/$name" -- "$@" || { echo "cannot start redis-server $name" >&2; return 1; }
  port=$DL_REDIS_PORT
  pid=$DL_REDIS_PID
  srv_pids+=("$pid")
}
stop_pid() {
  kill -TERM "$1" 2>/dev/null
  wait_until 5 eval "! kill -0 $1 2>/dev/null" || kill -KILL "$1" 2>/dev/null
}

# metrics [ARGS...]: distlock metrics, read by the Prometheus parser into
# $T/parsed ($prc its status).
metrics() {
  run "$D" metrics "$@"
  "$PY" "$PARSE" <"$T/out" >"$T/parsed" 2>"$T/parse.err"
  prc=$?
}
value() {
  S_="$1" K="$2" N="$3" awk -F'\t' '$1 == ENVIRON["S_"] && $2 == ENVIRON["K"] && $3 == ENVIRON["N"] { print $4 }' "$T/parsed"
}
samples() { awk -F'\t' -v s="$1" '$1 == s' "$T/parsed" | wc -l; }

# ============================================================ cluster
cports=()
for i in 1 2 3; do
  start_server "c$i" --cluster-enabled yes --cluster-config-file nodes.conf \
    --cluster-node-timeout 2000 || exit 1
  cports+=("$port")
done
redis-cli --cluster create "127.0.0.1:${cports[0]}" "127.0.0.1:${cports[1]}" \
  "127.0.0.1:${cports[2]}" --cluster-replicas 0 --cluster-yes >"$S/create.log" 2>&1
cluster_ok() {
  local p
  for p in "${cports[@]}"; do
    redis-cli -h 127.0.0.1 -p "$p" cluster info 2>/dev/null | grep -q 'cluster_state:ok' || return 1
  done
}
wait_until 15 cluster_ok
check "a 3-master cluster is up" cluster_ok
# One lock name per master (the master that has its key after it is taken).
declare -A name_on
for cand in a b c d e f g h i j k l m n o p q r s t; do
  slot=$(redis-cli -h 127.0.0.1 -p "${cports[0]}" cluster keyslot "distlock:{v-$cand}")
  for p in "${cports[@]}"; do
    if redis-cli -h 127.0.0.1 -p "$p" cluster nodes | awk -v s="$slot" '
         /myself/ { for (i = 9; i <= NF; i++) { n = split($i, r, "-"); lo = r[1]; hi = n > 1 ? r[2] : r[1];
                    if (s + 0 >= lo + 0 && s + 0 <= hi + 0) found = 1 } } END { exit !found }'; then
      [ -z "${name_on[$p]:-}" ] && name_on[$p]=v-$cand
    fi
  done
done
cnames=("${name_on[${cports[0]}]:-}" "${name_on[${cports[1]}]:-}" "${name_on[${cports[2]}]:-}")
expect "lock names on each of the 3 masters (${cnames[*]})" \
  '[ -n "${cnames[0]}" ] && [ -n "${cnames[1]}" ] && [ -n "${cnames[2]}" ]'
export DISTLOCK_URL="redis-cluster://127.0.0.1:${cports[1]}"
cholders=()
for n in "${cnames[@]}"; do
  bg "$D" "$n" -- sleep 60 >/dev/null 2>&1
  cholders+=("$last_pid")
done
for n in "${cnames[@]}"; do wait_held "$n"; done
bg "$D" "${cnames[2]}" -- true >/dev/null 2>&1
wait_waiting "${cnames[2]}" 1
metrics
expect "cluster: metrics reads the locks on all 3 masters" \
  'test "$rc" = 0 -a "$prc" = 0 && test "$(value distlock_held_objects lock -)" = 3.0 &&
   test "$(value distlock_holders lock "\"${cnames[0]}\"")" = 1.0 &&
   test "$(value distlock_holders lock "\"${cnames[1]}\"")" = 1.0 &&
   test "$(value distlock_holders lock "\"${cnames[2]}\"")" = 1.0 &&
   test "$(value distlock_waiters lock "\"${cnames[2]}\"")" = 1.0'
run "$D" top
expect "cluster: top shows the three, the one with a waiter first" \
  'test "$rc" = 0 && test "$(grep -cE "^v-[a-t] +lock +exclusive " "$T/out")" = 3 &&
   grep -qE "^${cnames[2]} +lock +exclusive +1 " "$T/out" &&
   test "$(grep -oE "^v-[a-t] " "$T/out" | head -n 1)" = "${cnames[2]} " &&
   grep -qE "^    holder $host:${cholders[0]} \\(thread ${cholders[0]}\\), exclusive, held " "$T/out"'
# A semaphore in the cluster: its one leased permit held, one command
# queued (waited for on its keys, through redis-cli's redirections).
csem() { redis-cli -c -h 127.0.0.1 -p "${cports[0]}" ZCARD "distlock:{"$'\x01'"sv-sem}$1"; }
bg "$D" -N 1 v-sem -- sleep 60 >/dev/null 2>&1
csh=$last_pid
wait_until 5 eval 'test "$(csem :l)" = 1'
bg "$D" -N 1 v-sem -- true >/dev/null 2>&1
wait_until 5 eval 'test "$(csem :q)" = 1'
metrics
expect "cluster: metrics reads the semaphore (1 holder, 1 waiter)" \
  'test "$rc" = 0 -a "$prc" = 0 && test "$(value distlock_holders sem "\"v-sem\"")" = 1.0 &&
   test "$(value distlock_waiters sem "\"v-sem\"")" = 1.0'
run "$D" top
expect "cluster: top shows the semaphore, its holder and its waiter" \
  'test "$rc" = 0 && grep -qE "^v-sem +sem +1/1 permits +1 " "$T/out" &&
   grep -qE "^    holder $host:$csh \\(thread $csh\\), 1 permit, held " "$T/out" &&
   grep -qE "^    waiter $host:[0-9]+ \\(thread [0-9]+\\), a permit, waiting " "$T/out"'
cholders+=("$csh")
for p in "${cholders[@]}"; do stop_pid "$p"; done

# ============================================================ redlock
rports=()
rpids=()
for i in 1 2 3; do
  start_server "r$i" || exit 1
  rports+=("$port")
  rpids+=("$pid")
done
export DISTLOCK_URL="redlock://127.0.0.1:${rports[0]},127.0.0.1:${rports[1]},127.0.0.1:${rports[2]}"
rli() { redis-cli -h 127.0.0.1 -p "$1" "${@:2}"; }
bg "$D" r-x -- sleep 60 >/dev/null 2>&1
rx=$last_pid
wait_held r-x
metrics
expect "redlock: the hold counts, 3 servers agree" \
  'test "$rc" = 0 -a "$prc" = 0 && test "$(value distlock_holders lock "\"r-x\"")" = 1.0 &&
   test "$(value distlock_servers_agreeing lock "\"r-x\"")" = 3.0'
# One server loses the hold: still held (a majority), 2 agree.
rli "${rports[0]}" del "distlock:{r-x}" >/dev/null
metrics
expect "redlock: one server lost the hold: still held, 2 agree" \
  'test "$(value distlock_holders lock "\"r-x\"")" = 1.0 && test "$(value distlock_servers_agreeing lock "\"r-x\"")" = 2.0'
run "$D" top
check "redlock: top marks the disagreement" grep -qE "^r-x +lock +exclusive \\(2/3\\) +0 " "$T/out"
# A hold on one server only is no hold, but is shown as disputed.
bg "$D" --url "redis://127.0.0.1:${rports[2]}" r-minor -- sleep 60 >/dev/null 2>&1
wait_until 5 eval "\"$D\" --url redis://127.0.0.1:${rports[2]} status r-minor >/dev/null 2>&1"
metrics
expect "redlock: held on 1 of 3: 0 holders, 2 servers agree (on free)" \
  'test "$(value distlock_holders lock "\"r-minor\"")" = 0.0 &&
   test "$(value distlock_servers_agreeing lock "\"r-minor\"")" = 2.0 &&
   test "$(value distlock_held_objects lock -)" = 1.0'
run "$D" top
check "redlock: top shows it free, 2/3" grep -qE "^r-minor +lock +free \\(2/3\\) " "$T/out"
# One server down (the one that lost the hold): the other two still show it.
stop_pid "${rpids[0]}"
metrics
expect "redlock, 1 of 3 down: metrics still reads (up 1), r-x held" \
  'test "$rc" = 0 -a "$prc" = 0 && test "$(value distlock_up - -)" = 1.0 && test "$(value distlock_holders lock "\"r-x\"")" = 1.0'
# Two down: no majority.
stop_pid "${rpids[1]}"
metrics
expect "redlock, 2 of 3 down: exit 69, distlock_up 0, one line naming the count" \
  'test "$rc" = 69 -a "$prc" = 0 && test "$(value distlock_up - -)" = 0.0 && one_line_err &&
   grep -q "redlock: 1 of 3 servers answered (need 2)" "$T/err"'
run "$D" top
expect "redlock, 2 of 3 down: top exits 69, one line" 'test "$rc" = 69 && one_line_err'
stop_pid "$rx"

# ============================================================ sentinel
sport=$(dl_free_port)
mkdir -p "$S/sentinel-dir"
printf 'port %s\nbind 127.0.0.1\ndir %s\nsentinel monitor m1 127.0.0.1 %s 1\n' \
  "$sport" "$S/sentinel-dir" "$REDIS_PORT" >"$S/sentinel-dir/sentinel.conf"
redis-server "$S/sentinel-dir/sentinel.conf" --sentinel --logfile "$S/sentinel-dir/log" \
  >/dev/null 2>&1 &
srv_pids+=("$!")
wait_until 5 eval "redis-cli -h 127.0.0.1 -p $sport sentinel get-master-addr-by-name m1 2>/dev/null | grep -q $REDIS_PORT"
export DISTLOCK_URL="redis-sentinel://127.0.0.1:$sport/m1"
bg "$D" s-1 -- sleep 60 >/dev/null 2>&1
s1=$last_pid
wait_held s-1
metrics
expect "sentinel: metrics reads the master" \
  'test "$rc" = 0 -a "$prc" = 0 && test "$(value distlock_holders lock "\"s-1\"")" = 1.0'
run "$D" top
expect "sentinel: top names the master and shows the holder" \
  'grep -qE "^distlock top [0-9-]+ [0-9:]+, sentinel master m1: " "$T/out" &&
   grep -qE "^    holder $host:$s1 \\(thread $s1\\), exclusive, held " "$T/out"'

finish
