#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# loadtest.sh: the test suites beside a CPU hog, as a busy CI machine runs
# them.  ROUNDS rounds of ctest (or of COMMAND) while HOGS busy loops keep
# every core busy; at the end, for each suite that failed, in how many
# rounds, and where the logs of those rounds are.  Exits 0 only if every
# round passed.
#
#   bash tools/loadtest.sh -b build -n 5                 # 5 rounds of the whole ctest
#   bash tools/loadtest.sh -b build -n 10 -R 'test_(lease|wait)'
#   bash tools/loadtest.sh -n 5 -- .ci/run               # the CI itself, 5 times
#
# Options: -b BUILD_DIR (build: a configured and built tree with
#   -DDISTLOCK_TESTS=ON)  -n ROUNDS (5)  -c HOGS: busy loops (one per core)
#   -N NICE: the niceness of both the tests and the hogs (10): equal to
#      each other, so the hogs take half of every core from the tests,
#      and below the machine's other work, which they then disturb less
#   -j JOBS: suites at a time (2, as tools/test.sh)  -R REGEX / -E REGEX:
#      only / not these suites (ctest -R / -E)  -o DIR: logs
#      (BUILD_DIR/loadtest)
#   -- COMMAND...: run this each round instead of ctest (its failures
#      are tallied from BUILD_DIR's ctest list when it ran ctest there,
#      e.g. DISTLOCK_CI_BUILD_DIR=BUILD_DIR .ci/run)
set -uo pipefail
cd "$(dirname "$0")/.."

build=build rounds=5 hogs=$(nproc 2>/dev/null || echo 2) nice=10 jobs=2 only="" except="" out=""
usage() { sed -n '3,23p' "$0" | sed 's/^# \{0,1\}//'; exit 64; }
while getopts "b:n:c:N:j:R:E:o:h" opt; do
  case $opt in
    b) build=$OPTARG ;; n) rounds=$OPTARG ;; c) hogs=$OPTARG ;; N) nice=$OPTARG ;;
    j) jobs=$OPTARG ;; R) only=$OPTARG ;; E) except=$OPTARG ;; o) out=$OPTARG ;; *) usage ;;
  esac
done
shift $((OPTIND - 1))
cmd=("$@")
[ -n "$out" ] || out="$build/loadtest"
if [ ${#cmd[@]} -eq 0 ] && [ ! -f "$build/CTestTestfile.cmake" ]; then
  echo "loadtest: $build is no built test tree (cmake -DDISTLOCK_TESTS=ON, then build it)" >&2
  exit 64
fi
mkdir -p "$out"
out=$(cd "$out" && pwd)
failed_list="$build/Testing/Temporary/LastTestsFailed.log"

# The hogs: busy loops, stopped by their pids however this script ends.
hog_pids=()
stop_hogs() {
  for p in "${hog_pids[@]}"; do kill "$p" 2>/dev/null; done
  for p in "${hog_pids[@]}"; do wait "$p" 2>/dev/null; done
  hog_pids=()
}
trap stop_hogs EXIT
trap 'exit 130' INT TERM
for _ in $(seq "$hogs"); do
  nice -n "$nice" bash -c 'while :; do :; done' &
  hog_pids+=($!)
done

declare -A fails=()
bad_rounds=0
start=$(date +%s)
echo "== loadtest: $rounds round(s) beside $hogs busy loop(s), nice $nice; logs in $out"
for r in $(seq "$rounds"); do
  log="$out/round-$r.log"
  rm -f "$failed_list"
  t0=$(date +%s)
  if [ ${#cmd[@]} -gt 0 ]; then
    nice -n "$nice" "${cmd[@]}" >"$log" 2>&1
  else
    args=(--output-on-failure --no-tests=error -j "$jobs")
    [ -n "$only" ] && args+=(-R "$only")
    [ -n "$except" ] && args+=(-E "$except")
    (cd "$build" && nice -n "$nice" ctest "${args[@]}") >"$log" 2>&1
  fi
  st=$?
  names=""
  if [ -s "$failed_list" ]; then
    names=$(cut -d: -f2- "$failed_list" | tr '\n' ' ')
    for n in $names; do fails[$n]=$(( ${fails[$n]:-0} + 1 )); done
  fi
  load=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)
  if [ "$st" -ne 0 ]; then
    bad_rounds=$((bad_rounds + 1))
    echo "round $r: FAILED in $(( $(date +%s) - t0 )) s (load $load): ${names:-exit $st} -> $log"
  else
    echo "round $r: passed in $(( $(date +%s) - t0 )) s (load $load)"
  fi
done
stop_hogs
echo "== loadtest: $bad_rounds of $rounds round(s) failed, $(( $(date +%s) - start )) s in all"
for n in "${!fails[@]}"; do
  echo "  $n: failed in ${fails[$n]} of $rounds round(s)"
done | sort
[ "$bad_rounds" -eq 0 ]
