#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# protofuzz.sh: the protocol fuzzer (tests/protofuzz/) at any length.
#
# Builds distlock-protofuzz in its own build directory, starts a private
# redis-server (tools/with-redis.sh: 127.0.0.1, free port, no persistence,
# stopped afterwards) and runs seed, seed+1, ... until the time or the
# number of runs is used up.  Each run drives the Lua scripts of lua/ as P
# simulated processes for N steps and checks every invariant after every
# step.  Prints a progress line every 2 s and one line per seed; on a
# failure prints the seed, the invariant, and the shortest failing sequence
# found, with the --replay argument that runs it again.  Exits 0 only if
# every run passed.
#
#   bash tools/protofuzz.sh                        # 10 minutes, 3 processes
#   bash tools/protofuzz.sh -t 3600 -p 4 -n 20000
#   bash tools/protofuzz.sh -S 1234 -r 1           # one seed
#   bash tools/protofuzz.sh -g -w stale-release    # scripts before hold ids
#   bash tools/protofuzz.sh -R -p 4               # processes as redlock clients
#   bash tools/protofuzz.sh -C -p 4               # the condition variable's scripts
#   bash tools/protofuzz.sh -- --replay 'A0wt0,R01,...'
#
# Options: -t SECONDS in all (600)  -r RUNS at most  -n STEPS per run (5000)
#   -p PROCS (3, 2..8)  -S FIRST_SEED (the time)
#   -g gated: leave out the lost requests that scripts before hold and
#     registration ids mishandle  -w KIND with -g, draw that kind again
#     (stale-release, stale-cancel, bare-acquire, stale-mark)
#   -L no lost acquires (what test_protofuzz runs for now)
#   -R redlock: each process a redlock:// client of the one server (no
#     queue, the waiting writer's mark: acquire ARGV[10], cancel/renew 'm')
#   -C the condition variable's scripts (pf_cond.h: no lost wake-up; a
#     failure prints its last steps, no shrinking)
#   -o INVARIANT report only this one  -k SHRINK_SECONDS (120)
#   -b BUILD_DIR (build-protofuzz)  -s build with ASan+UBSan
#   Arguments after -- go to distlock-protofuzz as they are.
# Set DISTLOCK_URL to use a Redis of your own (then nothing is started).
set -euo pipefail
cd "$(dirname "$0")/.."

secs=600 runs="" steps=5000 procs=3 seed=$(date +%s) shrink=120
build=build-protofuzz sanitize=OFF
extra=()
usage() { sed -n '3,36p' "$0" | sed 's/^# \{0,1\}//'; exit 64; }
while getopts "t:r:n:p:S:gLRCw:o:k:b:sh" opt; do
  case $opt in
    t) secs=$OPTARG ;;
    r) runs=$OPTARG ;;
    n) steps=$OPTARG ;;
    p) procs=$OPTARG ;;
    S) seed=$OPTARG ;;
    g) extra+=(--gated) ;;
    L) extra+=(--no-late-acquire) ;;
    R) extra+=(--redlock) ;;
    C) extra+=(--cond) ;;
    w) extra+=(--with "$OPTARG") ;;
    o) extra+=(--only "$OPTARG") ;;
    k) shrink=$OPTARG ;;
    b) build=$OPTARG ;;
    s) sanitize=ON ;;
    *) usage ;;
  esac
done
shift $((OPTIND - 1))
[ -n "$runs" ] && extra+=(--runs "$runs")

echo "== building distlock-protofuzz in $build (sanitizers $sanitize)"
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDISTLOCK_TESTS=ON \
  -DDISTLOCK_SANITIZE="$sanitize" >/dev/null
cmake --build "$build" --target distlock-protofuzz -j "${DISTLOCK_JOBS:-2}" >/dev/null

start=$(date +%s)
status=0
bash tools/with-redis.sh "$build/distlock-protofuzz" --seed "$seed" --steps "$steps" \
  --procs "$procs" --time "$secs" --shrink "$shrink" "${extra[@]}" "$@" || status=$?
echo "== protofuzz finished in $(( $(date +%s) - start )) s: $([ $status -eq 0 ] && echo PASS || echo "FAIL (status $status)")"
exit $status
