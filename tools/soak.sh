#!/usr/bin/env bash
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
# Set DISTLOCK_URL to use a Redis of your own (then nothing is started).
set -euo pipefail
cd "$(dirname "$0")/.."

procs=8 threads=4 ops=100000 kind=both write=25 hold=0 verify=0
build=build-soak sanitize=OFF max_s=3600
usage() { sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit 64; }
while getopts "p:t:n:k:w:H:Vb:sm:h" opt; do
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
    *) usage ;;
  esac
done
case $kind in mutex|rwlock|both) ;; *) echo "soak: -k mutex|rwlock|both" >&2; exit 64 ;; esac

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
