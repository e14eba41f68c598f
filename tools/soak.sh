#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# soak.sh: the mutual-exclusion checker (tests/test_checker.c) at soak size.
#
# Builds tests/test_checker in its own build directory, starts a private
# redis-server (tools/with-redis.sh: 127.0.0.1, free port, no persistence,
# stopped afterwards) and runs P processes x T threads that take one
# dist_mutex_t, then one dist_rwlock_t, N times in total each, recording
# every hold in shared memory.  Prints progress every 2 s and the totals:
# holds checked, overlaps, fence inversions, lost updates, errors, ops/s.
# Exits 0 only if every run is clean.
#
#   bash tools/soak.sh                 # 8 x 4, 100000 operations, mutex and rwlock
#   bash tools/soak.sh -p 4 -t 8 -n 20000 -k mutex
#
# Options: -p PROCS (8)  -t THREADS (4)  -n OPS, total per lock kind (100000)
#   -k mutex|rwlock|both (both)  -w WRITE_PERCENT for the rwlock (25)
#   -H HOLD_US, time inside each hold (0)  -V check in Redis during every
#   hold that it has our hold (one extra command per hold)
#   -b BUILD_DIR (build-soak)  -s build with ASan+UBSan (slower)
#   -m MAX_SECONDS per run before the children are killed (3600)
#   -a RUNS: instead, run the checker against an adversarial network and
#   stopped processes (tests/test_checker_net.c) RUNS times, and count per
#   case how many runs failed (TH_FILTER picks cases, CHECKER_NET_ROUNDS
#   the rounds of each, CHECKER_NET_SKIP_FIXES=1 skips the cases that need
#   the protocol-hardening fixes); each run starts its own redis-server
# Set DISTLOCK_URL to use a Redis of your own (then nothing is started).
set -euo pipefail
cd "$(dirname "$0")/.."

procs=8 threads=4 ops=100000 kind=both write=25 hold=0 verify=0
build=build-soak sanitize=OFF max_s=3600
adversary=0
usage() { sed -n '3,27p' "$0" | sed 's/^# \{0,1\}//'; exit 64; }
while getopts "p:t:n:k:w:H:Vb:sm:a:h" opt; do
  case $opt in
    p) procs=$OPTARG ;;
    t) threads=$OPTARG ;;
    n) ops=$OPTARG ;;
    k) kind=$OPTARG ;;
    w) write=$OPTARG ;;
    H) hold=$OPTARG ;;
    V) verify=1 ;;
    b) build=$OPTARG ;;
    s) sanitize=ON ;;
    m) max_s=$OPTARG ;;
    a) adversary=$OPTARG ;;
    *) usage ;;
  esac
done
case $kind in mutex|rwlock|both) ;; *) echo "soak: -k mutex|rwlock|both" >&2; exit 64 ;; esac

if [ "$adversary" -gt 0 ]; then
  echo "== building test_checker_net in $build (sanitizers $sanitize)"
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDISTLOCK_TESTS=ON \
    -DDISTLOCK_SANITIZE="$sanitize" >/dev/null
  cmake --build "$build" --target test_checker_net -j "${DISTLOCK_JOBS:-2}" >/dev/null
  logs="$build/adversary"
  rm -rf "$logs" && mkdir -p "$logs"
  log="$logs/summary"
  : >"$log"
  for i in $(seq 1 "$adversary"); do
    # one random-delay seed per run; the scripted cases vary by timing
    CHECKER_NET_SEED=$i "$build/test_checker_net" >"$logs/run$i.log" 2>&1 || true
    # "run N STATUS case", once per case (cmocka lists failures twice)
    sed -nE "s/^\[ +(OK|FAILED|SKIPPED) +\] (test_[a-z0-9_]+).*/run $i \1 \2/p" "$logs/run$i.log" |
      sort -u >>"$log"
    echo "run $i: $(grep -c "^run $i FAILED" "$log") case(s) failed ($logs/run$i.log)"
  done
  echo "== adversarial checker, $adversary run(s): failed / passed per case"
  awk '{ st=$3; name=$4; if (st == "FAILED") f[name]++; else if (st == "OK") o[name]++; else s[name]++; n[name]=1 }
       END { for (k in n) printf "%-40s failed %d  passed %d  skipped %d\n", k, f[k], o[k], s[k] }' "$log" | sort
  if grep -q FAILED "$log"; then exit 1; fi
  exit 0
fi

echo "== building test_checker in $build (sanitizers $sanitize)"
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDISTLOCK_TESTS=ON \
  -DDISTLOCK_SANITIZE="$sanitize" >/dev/null
cmake --build "$build" --target test_checker -j "${DISTLOCK_JOBS:-2}" >/dev/null

echo "== soak: $procs processes x $threads threads, $ops operations per lock kind ($kind)"
start=$(date +%s)
status=0
CHECKER_SOAK=1 CHECKER_PROCS=$procs CHECKER_THREADS=$threads CHECKER_OPS=$ops \
CHECKER_KIND=$kind CHECKER_WRITE_PCT=$write CHECKER_HOLD_US=$hold \
CHECKER_VERIFY_REDIS=$verify CHECKER_MAX_S=$max_s \
  bash tools/with-redis.sh "$build/test_checker" || status=$?
echo "== soak finished in $(( $(date +%s) - start )) s: $([ $status -eq 0 ] && echo PASS || echo "FAIL (status $status)")"
exit $status
