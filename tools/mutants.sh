#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# mutants.sh: how often the nemesis catches a broken library.  For each
# mutant (a decision of the library broken on purpose, built in only with
# -DDISTLOCK_MUTANT=NAME: CMakeLists.txt, docs/RELIABILITY.md "Mutants"),
# builds the nemesis against it in a tree of its own (RelWithDebInfo, no
# sanitizer; never installed), runs it RUNS times (tools/nemesis.sh, seeds
# FIRST..), and prints the share of runs that found a violation, with the
# checks that found it and how soon.  "none" is the library as it is: the
# runs that fail there are the nemesis's false alarms (or real findings).
#
#   bash tools/mutants.sh                         # every mutant, 10 runs of 25 s (CI length)
#   bash tools/mutants.sh -m sempost,none -d 45   # the semaphore's: CI's single case (two late faults)
#   bash tools/mutants.sh -n 10 -d 60             # nightly length
#   bash tools/mutants.sh -m trust,fence -n 3 -d 15
#
# Mutants: trust (a hold trusted without Redis, whatever the signs), release
#   (an unlock's release never reaches Redis), fence (a thread that takes a
#   lock again gets its first hold's fence), enolck (an unlock of a lapsed
#   hold says 0), sempost (a semaphore post that got no reply is completed
#   as a new post: counted twice when the first ran)
# Options: -m LIST of mutants (all; "none" too for the library as it is)
#   -n RUNS per mutant (10)  -d SECONDS of faults per run (25)
#   -c CASE single|netns (single: the semaphore role needs a topology
#      that has semaphores)  -s FIRST_SEED (1)  -o DIR for the build trees
#      and the runs' logs (build-mutants)  -j JOBS to build (2)
#   -r FAULTS_PER_S (the nemesis's default)  -k keep every run's history
# Runs under nice; exits 0 when every mutant was caught in at least
# 9 runs of 10 (the goal) and "none" (if asked) in none.
set -uo pipefail
cd "$(dirname "$0")/.."

all="trust release fence enolck sempost"
list="" runs=10 dur=25 case=single first=1 out=build-mutants jobs=2 rate="" keep=""
usage() { sed -n '3,28p' "$0" | sed 's/^# \{0,1\}//'; exit 64; }
while getopts "m:n:d:c:s:o:j:r:kh" opt; do
  case $opt in
    m) list=$OPTARG ;; n) runs=$OPTARG ;; d) dur=$OPTARG ;; c) case=$OPTARG ;;
    s) first=$OPTARG ;; o) out=$OPTARG ;; j) jobs=$OPTARG ;; r) rate=$OPTARG ;; k) keep=-k ;;
    *) usage ;;
  esac
done
[ -n "$list" ] || list=$all
list=${list//,/ }
mkdir -p "$out"
out=$(cd "$out" && pwd)
src=$(pwd)

results=()
status=0
for m in $list; do
  tree="$out/$m"
  echo "== $m: building the nemesis in $tree"
  args=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DDISTLOCK_TESTS=ON -DDISTLOCK_SANITIZE=OFF -DDISTLOCK_TSAN=OFF)
  [ "$m" = none ] && args+=(-DDISTLOCK_MUTANT=) || args+=("-DDISTLOCK_MUTANT=$m")
  if ! { nice cmake -S "$src" -B "$tree" "${args[@]}" &&
         nice cmake --build "$tree" --target test_nemesis -j "$jobs"; } >"$out/build-$m.log" 2>&1; then
    echo "$m: the build failed (see $out/build-$m.log)"
    results+=("$m build-failed")
    status=1
    continue
  fi
  echo "== $m: $runs run(s) of $dur s ($case)"
  rflag=()
  [ -n "$rate" ] && rflag=(-r "$rate")
  nice bash tools/nemesis.sh -b "$tree" -o "$tree/runs" -c "$case" -s "$first" -n "$runs" -d "$dur" \
    "${rflag[@]}" $keep | sed "s/^/   /"
  # each run's verdict: one NEMESIS-RESULT line per run (nemesis.sh's summary)
  summary="$tree/runs/summary"
  caught=$(awk '/violations=/ { for (i = 1; i <= NF; i++) if ($i ~ /^violations=/) { split($i, v, "=");
                if (v[2] > 0) n++ } } END { print n + 0 }' "$summary")
  done_runs=$(grep -c 'violations=' "$summary")
  checks=$(awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^checks=/) { sub("checks=", "", $i);
                  if ($i == "none") next; n = split($i, cs, ",");
                  for (j = 1; j <= n; j++) { split(cs[j], p, "[:@]"); seen[p[1]]++; t[p[1]] += p[3] } } }
                END { for (k in seen) printf "%s%s (%d, first after %.1f s)", sep, k, seen[k],
                      t[k] / seen[k], sep = "; " }' "$summary")
  first_t=$(awk '{ best = -1; for (i = 1; i <= NF; i++) if ($i ~ /^checks=/) { sub("checks=", "", $i);
                  if ($i == "none") next; n = split($i, cs, ",");
                  for (j = 1; j <= n; j++) { split(cs[j], p, "[:@]"); if (best < 0 || p[3] < best) best = p[3] } }
                  if (best >= 0) { s += best; k++ } } END { if (k) printf "%.1f", s / k; else printf "-" }' "$summary")
  results+=("$m $caught/$done_runs ${first_t}s ${checks:-none}")
  if [ "$m" = none ]; then
    [ "$caught" -eq 0 ] || status=1
  elif [ "$done_runs" -eq 0 ] || [ $((caught * 10)) -lt $((done_runs * 9)) ]; then
    status=1
  fi
done

echo
echo "== mutants: runs of $dur s of faults ($case), seeds $first.., caught = a run with a violation"
printf '%-9s %-8s %-12s %s\n' mutant caught "first (mean)" "checks that caught it (runs, mean time of the first)"
for r in "${results[@]}"; do
  read -r m c t rest <<<"$r"
  printf '%-9s %-8s %-12s %s\n' "$m" "$c" "${t:-}" "${rest:-}"
done
exit $status
