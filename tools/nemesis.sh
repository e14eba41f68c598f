#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# nemesis.sh: the nemesis (tests/test_nemesis.c) at any length: RUNS runs
# with consecutive seeds, each injecting faults for DURATION seconds into
# client processes that take random locks and write to a fenced store, then
# checking the history.  Prints each run's verdict and, at the end, for
# every check that failed, in how many runs, the seeds, and after how many
# runs and seconds of faults it was first found.  Exits 0 only if every run
# is clean.
#
#   bash tools/nemesis.sh -b build                     # 10 runs of 60 s, seeds 1..10
#   bash tools/nemesis.sh -b build -s 7 -n 1           # seed 7 again
#   bash tools/nemesis.sh -b /tmp/old -n 50 -d 30 -f restart,break,stop
#
# Options: -b BUILD_DIR (build; it must hold test_nemesis, made with
#   -DDISTLOCK_TESTS=ON; it is built there if it is missing)
#   -s FIRST_SEED (1)  -n RUNS (10)  -d SECONDS of faults per run (60)
#   -c CASE: single (default: one server behind the proxy), redlock (three,
#      a fault of a server hits one of them), netns (each client in a
#      network namespace, cut by nftables; needs root), or all
#   -f KINDS: only these faults (kill,stop,stopgrantee,restart,flush,break,
#      pause,clientkill,delay,freeze,jitter,blackhole,mute,srvstop,srvclock,
#      clock,late,delkey,partition)
#   -R ROLES: only these clients beside the locks (cond,sem,lockall; none)
#   -p PROCS (4)  -t THREADS (3)  -r FAULTS_PER_S (0.8)
#   -S slow mode: 6 processes, lease 6000 ms, I/O time-out 8000 ms, a
#      fault every 2 s (a loaded machine, or a sanitizer build)
#   -k keep every run's logs and history (else only those of failed runs;
#      tools/nemesis-outcomes.sh DIR counts what each fault did in them)
#   -o DIR for the logs (BUILD_DIR/nemesis-runs)
set -uo pipefail
cd "$(dirname "$0")/.."

build=build first=1 runs=10 dur=60 case=single kinds="" roles="" procs="" threads="" rate="" slow=0 keep=0 out=
usage() { sed -n '3,30p' "$0" | sed 's/^# \{0,1\}//'; exit 64; }
while getopts "b:s:n:d:c:f:R:p:t:r:Sko:h" opt; do
  case $opt in
    b) build=$OPTARG ;; s) first=$OPTARG ;; n) runs=$OPTARG ;; d) dur=$OPTARG ;;
    c) case=$OPTARG ;; f) kinds=$OPTARG ;; R) roles=$OPTARG ;; p) procs=$OPTARG ;; t) threads=$OPTARG ;;
    r) rate=$OPTARG ;; S) slow=1 ;; k) keep=1 ;; o) out=$OPTARG ;; *) usage ;;
  esac
done
case $case in
  single|redlock|netns) filter="test_nemesis_$case" ;;
  all) filter="test_nemesis_*" ;;
  *) echo "nemesis: -c single|redlock|netns|all" >&2; exit 64 ;;
esac
bin="$build/test_nemesis"
[ -n "$out" ] || out="$build/nemesis-runs"
if [ ! -x "$bin" ]; then
  echo "== building test_nemesis in $build"
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDISTLOCK_TESTS=ON >/dev/null &&
    cmake --build "$build" --target test_nemesis -j "${DISTLOCK_JOBS:-2}" >/dev/null || exit 2
fi
mkdir -p "$out"
summary="$out/summary"
: >"$summary"
export NEMESIS_DURATION_MS=$((dur * 1000))
[ -n "$kinds" ] && export NEMESIS_FAULTS=$kinds
[ -n "$roles" ] && export NEMESIS_ROLES=$roles
[ -n "$procs" ] && export NEMESIS_PROCS=$procs
[ -n "$threads" ] && export NEMESIS_THREADS=$threads
[ -n "$rate" ] && export NEMESIS_RATE_MILLI=$(awk -v r="$rate" 'BEGIN { printf "%d", r * 1000 }')
if [ $slow = 1 ]; then
  export NEMESIS_PROCS=${NEMESIS_PROCS:-6} NEMESIS_LEASE_MS=6000 NEMESIS_IO_TIMEOUT_MS=8000
  export NEMESIS_RATE_MILLI=${NEMESIS_RATE_MILLI:-500}
fi
# the runner's own limit of one test: the run, its end and checks
export TH_TEST_TIMEOUT=$((dur + 300))
failed=0
start=$(date +%s)
for i in $(seq 0 $((runs - 1))); do
  seed=$((first + i))
  log="$out/run-$seed.log"
  NEMESIS_SEED=$seed NEMESIS_KEEP=1 NEMESIS_DIR="$out/seed-$seed" TH_FILTER="$filter" \
    "$bin" >"$log" 2>&1
  st=$?
  # one NEMESIS-RESULT line per case run
  grep '^NEMESIS-RESULT' "$log" | sed "s/^/run=$((i + 1)) /" >>"$summary"
  res=$(grep '^NEMESIS-RESULT' "$log" | sed 's/.*violations=\([0-9]*\) checks=\(.*\)/\1 \2/' | tr '\n' ' ')
  if [ $st -ne 0 ]; then
    failed=$((failed + 1))
    echo "run $((i + 1)) seed $seed: FAILED ($res) -> $log"
  else
    echo "run $((i + 1)) seed $seed: ok ($res)"
    [ $keep = 1 ] || rm -rf "$out/seed-$seed"
  fi
done
echo "== nemesis: $runs run(s) of $dur s ($case), $failed failed, $(( $(date +%s) - start )) s in all"
# per check: runs that showed it, their seeds, and when it was first found
awk -v dur="$dur" '
  { run = ""; seed = ""; checks = "";
    for (i = 1; i <= NF; i++) {
      split($i, kv, "=");
      if (kv[1] == "run") run = kv[2];
      if (kv[1] == "seed") seed = kv[2];
      if (kv[1] == "checks") checks = kv[2];
    }
    if (checks == "none" || checks == "") next;
    n = split(checks, cs, ",");
    for (j = 1; j <= n; j++) {
      split(cs[j], p, "[:@]");
      name = p[1];
      if (!(name in runs)) { first_run[name] = run; first_t[name] = p[3]; }
      runs[name]++; count[name] += p[2];
      seeds[name] = seeds[name] (seeds[name] == "" ? "" : " ") seed;
    }
  }
  END {
    for (k in runs)
      printf "  %-18s in %d run(s), %d violation(s); first in run %d after %.1f s of its faults (%.0f s of faults in all); seeds: %s\n",
             k, runs[k], count[k], first_run[k], first_t[k], (first_run[k] - 1) * dur + first_t[k], seeds[k];
  }' "$summary" | sort
[ $failed -eq 0 ]
