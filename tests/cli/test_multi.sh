#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# test_multi.sh DISTLOCK: distlock status, list and break beyond one Redis:
# a 3-master Redis Cluster (names on different masters), 3 independent
# servers for redlock:// (with one, then two of them down) and a sentinel
# in front of the server tools/with-redis.sh started.  Every server here is
# started by this script on a free port of 127.0.0.1 and stopped by its pid.
. "$(dirname "$0")/lib.sh"

host=$(hostname)
S=$(mktemp -d "${TMPDIR:-/tmp}/distlock-multi.XXXXXX")
# At exit: the distlock processes first (they release while the servers
# still run), then the servers (dl_redis_stop_all), then lib.sh's cleanup.
on_exit() {
  local p
  for p in "${bg_pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
  for p in "${bg_pids[@]}"; do
    wait_until 3 eval "! kill -0 $p 2>/dev/null" || kill -KILL "$p" 2>/dev/null
  done
  dl_redis_stop_all
  rm -rf "$S"
  cleanup
}
trap on_exit EXIT

valid_json() {
  command -v python3 >/dev/null 2>&1 || return 0
  python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$1"
}

# start_server NAME [redis-server options...]: a server of its own
# directory on a free port (tools/launch/launch.sh); sets $port and $pid.
start_server() {
  local name=$1
  shift
  mkdir -p "$S/$name"
  dl_redis_start "$S/$name" -- "$@" || { echo "cannot start redis-server $name" >&2; return 1; }
  port=$DL_REDIS_PORT
  pid=$DL_REDIS_PID
}

# holds NAME PID: status shows PID holding NAME (its holder line).
holds() {
  "$D" status "$1" >"$T/h.out" 2>&1 &&
    grep -qE "^holder: +$host:$2 \\(thread $2\\), held for " "$T/h.out"
}

# ============================================================ cluster
cports=()
cpids=()
for i in 1 2 3; do
  start_server "c$i" --cluster-enabled yes --cluster-config-file nodes.conf \
    --cluster-node-timeout 2000 || exit 1
  cports+=("$port")
  cpids+=("$pid")
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

# The port of the master that serves the slot of SLOT (from each node's
# "myself" line of CLUSTER NODES).
owner_of() {
  local p
  for p in "${cports[@]}"; do
    redis-cli -h 127.0.0.1 -p "$p" cluster nodes | awk -v s="$1" -v p="$p" '
      /myself/ { for (i = 9; i <= NF; i++) { n = split($i, r, "-"); lo = r[1]; hi = n > 1 ? r[2] : r[1];
                 if (s + 0 >= lo + 0 && s + 0 <= hi + 0) { print p; exit } } }'
  done
}
# One lock name per master.
declare -A name_on
for cand in a b c d e f g h i j k l m n o p q r s t; do
  slot=$(redis-cli -h 127.0.0.1 -p "${cports[0]}" cluster keyslot "distlock:{c-$cand}")
  o=$(owner_of "$slot")
  [ -n "$o" ] && [ -z "${name_on[$o]:-}" ] && name_on[$o]=c-$cand
done
cnames=("${name_on[${cports[0]}]:-}" "${name_on[${cports[1]}]:-}" "${name_on[${cports[2]}]:-}")
expect "lock names on each of the 3 masters (${cnames[*]})" \
  '[ -n "${cnames[0]}" ] && [ -n "${cnames[1]}" ] && [ -n "${cnames[2]}" ]'

# One seed only: the others are found through it.
export DISTLOCK_URL="redis-cluster://127.0.0.1:${cports[1]}"
cholders=()
for n in "${cnames[@]}"; do
  bg "$D" "$n" -- sleep 30 >/dev/null 2>&1
  cholders+=("$last_pid")
done
for n in "${cnames[@]}"; do wait_held "$n"; done
for i in 0 1 2; do
  p=${cports[$i]}
  keys=$(redis-cli -h 127.0.0.1 -p "$p" --scan --pattern "distlock:{${cnames[$i]}}*" | wc -l)
  check "cluster: status ${cnames[$i]} (keys on master $p: $keys) shows its holder" \
    holds "${cnames[$i]}" "${cholders[$i]}"
done
run "$D" status "${cnames[2]}" --json
check "cluster: status --json" grep -q "\"held\":true,\"mode\":\"exclusive\",\"holders\":\\[{\"host\":\"$host\",\"pid\":${cholders[2]}," "$T/out"
run "$D" status c-nobody
check "cluster: status of a free lock exits 1" test "$rc" = 1
run "$D" list
expect "cluster: list finds the locks on all 3 masters" \
  'test "$rc" = 0 && test "$(tail -n +2 "$T/out" | wc -l)" = 3 &&
   grep -qE "^${cnames[0]} +lock +exclusive .* $host:${cholders[0]} " "$T/out" &&
   grep -qE "^${cnames[1]} +lock +exclusive .* $host:${cholders[1]} " "$T/out" &&
   grep -qE "^${cnames[2]} +lock +exclusive .* $host:${cholders[2]} " "$T/out"'
run "$D" list --json
check "cluster: list --json is valid JSON" valid_json "$T/out"
run "$D" list "${cnames[1]}"
check "cluster: list PATTERN" test "$(tail -n +2 "$T/out" | cut -d' ' -f1)" = "${cnames[1]}"
run "$D" --url "redis-cluster://127.0.0.1:${cports[2]},127.0.0.1:${cports[0]}" status "${cnames[0]}"
check "cluster: --url with other seeds" test "$rc" = 0
bg "$D" "${cnames[1]}" -- true >/dev/null 2>&1
cw=$last_pid
wait_waiting "${cnames[1]}" 1 && ok "cluster: status counts a waiter"
kill -TERM "$cw"
t=$(now)
wait_until 1 has_waiting "${cnames[1]}" 0
dt=$(elapsed "$t")
check "cluster: a waiter killed by SIGTERM leaves the queue at once (${dt}s)" between "$dt" 0 0.9
run "$D" break "${cnames[0]}" --force
check "cluster: break a lock on another master than the seed" \
  grep -q "^broke \"${cnames[0]}\": removed the hold of $host:${cholders[0]} (thread ${cholders[0]}); the next holder gets EOWNERDEAD$" "$T/out"
run "$D" status "${cnames[0]}"
expect "cluster: status after the break: free, broken" \
  'test "$rc" = 1 && grep -q "^note: *broken by distlock break" "$T/out"'
run "$D" break "${cnames[0]}" --force
check "cluster: break a free lock exits 1" test "$rc" = 1
run "$D" list --all
check "cluster: list --all shows the broken lock as free" grep -qE "^${cnames[0]} +lock +free " "$T/out"
for p in "${cholders[@]}"; do dl_stop_pid "$p"; done
for p in "${cpids[@]}"; do dl_redis_stop "$p"; done

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

bg "$D" r-x -- sleep 30 >/dev/null 2>&1
rx=$last_pid
bg "$D" -s r-s -- sleep 30 >/dev/null 2>&1
bg "$D" -s r-s -- sleep 30 >/dev/null 2>&1
wait_held r-x
wait_until 5 eval "\"$D\" status r-s 2>/dev/null | grep -q 'held shared by 2'"
run "$D" status r-x
expect "redlock: status shows the holder, all 3 servers agree" \
  'test "$rc" = 0 && grep -qE "^holder: +$host:$rx \\(thread $rx\\), held for .*, fence [0-9]+$" "$T/out" &&
   grep -q "^servers: *3 of 3 agree (2 needed)$" "$T/out" && ! grep -q "^server:" "$T/out"'
run "$D" status r-x --json
expect "redlock: status --json, with each server's view" \
  'valid_json "$T/out" && grep -q "\"held\":true,\"mode\":\"exclusive\",\"holders\":\\[{\"host\":\"$host\",\"pid\":$rx," "$T/out" &&
   grep -q "\"redlock\":{\"need\":2,\"agree\":3,\"servers\":\\[{\"server\":\"127.0.0.1:${rports[0]}\",\"answered\":true,\"mode\":\"exclusive\"" "$T/out"'
run "$D" status r-s
check "redlock: a shared lock, held shared by 2" grep -q '^state: *held shared by 2$' "$T/out"
run "$D" list
expect "redlock: list shows both locks once" \
  'test "$rc" = 0 && test "$(tail -n +2 "$T/out" | wc -l)" = 2 &&
   grep -qE "^r-x +lock +exclusive +[0-9.]+s +0 +$host:$rx " "$T/out" && grep -qE "^r-s +lock +shared\\(2\\) " "$T/out"'

# The servers disagree: one loses the hold.
rli "${rports[0]}" del "distlock:{r-x}" >/dev/null
run "$D" status r-x
expect "redlock: one server lost the hold: still held, per-server lines" \
  'test "$rc" = 0 && grep -q "^servers: *2 of 3 agree (2 needed)$" "$T/out" &&
   grep -q "^server: *127.0.0.1:${rports[0]}: free$" "$T/out" &&
   grep -q "^server: *127.0.0.1:${rports[1]}: held exclusive by $host:$rx (thread $rx)$" "$T/out"'
run "$D" list
check "redlock: list marks the disagreement" grep -qE "^r-x +lock +exclusive \\(2/3\\) " "$T/out"

# A hold on one server only is no hold.
bg "$D" --url "redis://127.0.0.1:${rports[2]}" r-minor -- sleep 30 >/dev/null 2>&1
rm1=$last_pid
wait_until 5 eval "\"$D\" --url redis://127.0.0.1:${rports[2]} status r-minor >/dev/null 2>&1"
run "$D" status r-minor
expect "redlock: held on 1 of 3 servers: free (exit 1), that server named" \
  'test "$rc" = 1 && grep -q "^state: *free$" "$T/out" && grep -q "^servers: *2 of 3 agree" "$T/out" &&
   grep -q "^server: *127.0.0.1:${rports[2]}: held exclusive by $host:$rm1 " "$T/out"'
run "$D" list
check "redlock: list shows it as free, 2 of 3 agreeing" grep -qE "^r-minor +lock +free \\(2/3\\) " "$T/out"
dl_stop_pid "$rm1"

run "$D" break r-x --force
check "redlock: break" \
  grep -q "^broke \"r-x\": removed the hold of $host:$rx (thread $rx); the next holder gets EOWNERDEAD$" "$T/out"
run "$D" status r-x
expect "redlock: status after the break: free on every server, broken" \
  'test "$rc" = 1 && grep -q "^note: *broken by distlock break" "$T/out" && grep -q "^servers: *3 of 3 agree" "$T/out"'
for p in "${rports[@]}"; do
  check "redlock: no hold left on 127.0.0.1:$p" test "$(rli "$p" exists "distlock:{r-x}")" = 0
done
run "$D" break r-x --force
check "redlock: break a free lock exits 1" test "$rc" = 1

# One server down: a majority still answers.
dl_redis_stop "${rpids[2]}"
bg "$D" r-y -- sleep 30 >/dev/null 2>&1
ry=$last_pid
wait_held r-y
run "$D" status r-y
expect "redlock, 1 of 3 down: status shows the holder, and the server down" \
  'test "$rc" = 0 && grep -qE "^holder: +$host:$ry " "$T/out" && grep -q "^servers: *2 of 3 agree" "$T/out" &&
   grep -q "^server: *127.0.0.1:${rports[2]}: unreachable: " "$T/out"'
run "$D" status r-y --json
check "redlock, 1 of 3 down: --json" \
  grep -q "{\"server\":\"127.0.0.1:${rports[2]}\",\"answered\":false,\"mode\":null,\"holders\":\\[\\],\"agrees\":false,\"error\":\"" "$T/out"
run "$D" list
expect "redlock, 1 of 3 down: list" \
  'test "$rc" = 0 && grep -qE "^r-y +lock +exclusive \\(2/3\\) .* $host:$ry " "$T/out" && grep -q "^r-s " "$T/out"'
run "$D" break r-y --force
check "redlock, 1 of 3 down: break" grep -q "^broke \"r-y\": removed the hold of $host:$ry " "$T/out"
run "$D" status r-y
check "redlock, 1 of 3 down: free after the break" test "$rc" = 1

# Two down: no majority.
dl_redis_stop "${rpids[1]}"
for sub in "status r-y" "list" "break r-y --force"; do
  # shellcheck disable=SC2086
  run "$D" $sub
  expect "redlock, 2 of 3 down: $sub exits 69, one line" \
    'test "$rc" = 69 && one_line_err && grep -q "redlock: 1 of 3 servers answered (need 2)" "$T/err"'
done

# ============================================================ sentinel
# Its port, address and directory are the launcher's (the command line's
# over the file's); the file is the sentinel's own, which it rewrites.
mkdir -p "$S/sentinel-dir"
printf 'sentinel monitor m1 127.0.0.1 %s 1\n' "$REDIS_PORT" >"$S/sentinel-dir/sentinel.conf"
dl_redis_start "$S/sentinel-dir" -c "$S/sentinel-dir/sentinel.conf" -- --sentinel ||
  { nok "the sentinel did not start"; finish; exit 1; }
sport=$DL_REDIS_PORT
wait_until 5 eval "redis-cli -h 127.0.0.1 -p $sport sentinel get-master-addr-by-name m1 2>/dev/null | grep -q $REDIS_PORT"
export DISTLOCK_URL="redis-sentinel://127.0.0.1:$sport/m1"
bg "$D" s-1 -- sleep 30 >/dev/null 2>&1
s1=$last_pid
wait_held s-1
check "sentinel: status shows the holder" holds s-1 "$s1"
run "$D" list
check "sentinel: list" grep -qE "^s-1 +lock +exclusive .* $host:$s1 " "$T/out"
run "$D" break s-1 --force
check "sentinel: break" grep -q "^broke \"s-1\": removed the hold of $host:$s1 " "$T/out"

finish
