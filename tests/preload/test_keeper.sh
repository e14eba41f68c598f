#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# test_keeper.sh LIB BUILD_DIR - the keeper (distlock-keeper, which keeps
# a file lock's distributed hold across exec: flock -F, chpst -l, setlock,
# lckdo -e) beyond a single redis:// URL.  The keeper is a fork of the
# launcher that makes a connection of its own from DISTLOCK_URL and renews
# the launcher's hold with the launcher's token: here through a sentinel
# (redis-sentinel://, the master found through it) and on a cluster of
# three masters (redis-cluster://, the node found by the lock's slot).  For each, with
# leases of 1 s: `flock -F` on host a runs a command for 4 s; host b tries
# every 0.5 s and is refused each time (the keeper renews the hold past
# several leases), then blocks, and gets the lock at once when the
# command ends (the keeper releases it, and the release hands it on);
# nobody is told of a lapse.  Then the kept hold's
# key is deleted under it: the keeper says so.
# Starts its own servers (tools/launch/launch.sh).
. "$(dirname "$0")/lib.sh"

command -v flock >/dev/null || { echo "flock(1) not found (util-linux)"; exit 1; }
command -v redis-server >/dev/null || { echo "redis-server not found (tools/deps.sh)"; exit 1; }
export DISTLOCK_PREFIX="dlpkeep$$:"
export DISTLOCK_LEASE_MS=1000
export DISTLOCK_IO_TIMEOUT_MS=3000
unset DISTLOCK_URL

mkdir -p "$WORK/hosta" "$WORK/hostb"
HA=$WORK/hosta/jobs.lock
HB=$WORK/hostb/jobs.lock
on() {
  local h=$1; shift
  local path=$HA
  [ "$h" = b ] && path=$HB
  DISTLOCK_MAP="jobs=flock:$path" LD_PRELOAD=$LIB "$@"
}
elapsed_ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }

# A master and a sentinel that monitors it.
dl_redis_start "$WORK" || { fail "no redis-server"; finish; exit; }
MASTER=$DL_REDIS_PORT
printf 'sentinel monitor keepm 127.0.0.1 %s 1\nsentinel down-after-milliseconds keepm 5000\n' \
  "$MASTER" >"$WORK/sentinel.conf"
dl_redis_start "$WORK" -c "$WORK/sentinel.conf" -- --sentinel ||
  { fail "no sentinel"; finish; exit; }
SENTINEL=$DL_REDIS_PORT
# A cluster of three masters, the slots in thirds: the lock's slot may be
# on any of them, and the URL names the first only.
# (Each node's bus on a free port of its own: the default, port + 10000,
# may be past 65535 or taken.)
CP=()
CB=()
for i in 0 1 2; do
  up=0
  for _ in 1 2 3; do
    port=$(dl_free_port) && bus=$(dl_free_port) || continue
    [ "$port" = "$bus" ] && continue
    dl_redis_start "$WORK" -p "$port" -- --cluster-enabled yes \
      --cluster-config-file "nodes-$port.conf" --cluster-port "$bus" && { up=1; break; }
  done
  [ "$up" = 1 ] || { fail "no cluster node"; finish; exit; }
  CP+=("$port")
  CB+=("$bus")
done
redis-cli -p "${CP[0]}" CLUSTER ADDSLOTSRANGE 0 5460 >/dev/null
redis-cli -p "${CP[1]}" CLUSTER ADDSLOTSRANGE 5461 10922 >/dev/null
redis-cli -p "${CP[2]}" CLUSTER ADDSLOTSRANGE 10923 16383 >/dev/null
redis-cli -p "${CP[0]}" CLUSTER MEET 127.0.0.1 "${CP[1]}" "${CB[1]}" >/dev/null
redis-cli -p "${CP[0]}" CLUSTER MEET 127.0.0.1 "${CP[2]}" "${CB[2]}" >/dev/null
cluster_ok() {
  local p
  for p in "${CP[@]}"; do
    redis-cli -p "$p" CLUSTER INFO | grep -q 'cluster_state:ok' || return 1
    [ "$(redis-cli -p "$p" CLUSTER NODES | wc -l)" -eq 3 ] || return 1
  done
}
for _ in $(seq 200); do cluster_ok && break; sleep 0.1; done
check "the three-master cluster is up" cluster_ok
KEYSLOT=$(redis-cli -p "${CP[0]}" CLUSTER KEYSLOT "${DISTLOCK_PREFIX}{jobs}")
CPORT=${CP[0]}
[ "$KEYSLOT" -gt 5460 ] && CPORT=${CP[1]}
[ "$KEYSLOT" -gt 10922 ] && CPORT=${CP[2]}
echo "# the lock's slot $KEYSLOT is on 127.0.0.1:$CPORT"

# kept URL WHAT PORT: flock -F on host a holds for 4 s (4 leases); host b
# is kept out, then in at once.  PORT: the server that has the keys.
kept() {
  local url=$1 what=$2 port=$3 got=0 tries=0 i
  export DISTLOCK_URL=$url
  rm -f "$WORK/err.a" "$WORK/err.b"
  on a flock -F "$HA" sleep 4 2>"$WORK/err.a" &
  local holder=$!
  sleep 0.7
  for i in $(seq 4); do
    tries=$((tries + 1))
    on b flock -n "$HB" true 2>>"$WORK/err.b" && got=$((got + 1))
    sleep 0.5
  done
  # host b now waits (blocking): the keeper's release hands it the lock
  # (on the cluster, by a push on the lock's slot channel)
  rm -f "$WORK/b.in"
  on b flock -w 10 "$HB" sh -c 'date +%s%N >"$1"' sh "$WORK/b.in" 2>>"$WORK/err.b" &
  local waiter=$!
  wait "$holder"; local rc=$?
  local t_end after ms=-1
  t_end=$(date +%s%N)
  wait "$waiter"; after=$?
  [ -s "$WORK/b.in" ] && ms=$(( ($(cat "$WORK/b.in") - t_end) / 1000000 ))
  check "$what: flock -F holding 4 leases: host b kept out $((tries - got)) of $tries tries, holder rc $rc; host b's blocked flock got in $ms ms after the command ended (rc $after): $(head -c 300 "$WORK/err.a")" \
    test "$got" -eq 0 -a "$rc" -eq 0 -a "$after" -eq 0 -a "$ms" -ge -100 -a "$ms" -lt 1500
  check "$what: nobody was told of a lapse ($(head -c 300 "$WORK/err.b"))" \
    bash -c "! grep -q 'lease ran out\\|lapsed' '$WORK/err.a' '$WORK/err.b'"
  # The kept hold deleted under the command: the keeper says so.
  on a flock -F "$HA" sleep 3 2>"$WORK/err.loss" &
  holder=$!
  sleep 1.2
  redis-cli -p "$port" DEL "${DISTLOCK_PREFIX}{jobs}" >/dev/null
  wait "$holder"; rc=$?
  check "$what: the kept hold deleted: the keeper tells it (rc $rc): $(head -c 300 "$WORK/err.loss")" \
    bash -c "[ $rc -eq 0 ] && grep -q 'kept for pid .* found lapsed in Redis' '$WORK/err.loss'"
  on b flock -w 10 "$HB" true 2>/dev/null
  check "$what: free afterwards" test $? -eq 0
  unset DISTLOCK_URL
}
kept "redis-sentinel://127.0.0.1:$SENTINEL/keepm" "sentinel" "$MASTER"
kept "redis-cluster://127.0.0.1:${CP[0]}" "cluster" "$CPORT"

finish
