#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# smoke.sh BENCH: a tiny distlock-bench run (--quick) of the floor, W1, W2
# (with its serial ceiling), W3, W3b, S1, S1l and C1 (a condition's
# signal-to-wake latency) against the redis-server the bench
# starts itself; then a ctest-sized W9 (the scaling curves: 1 and 4
# processes, on the bench's server and on a cluster of 3 masters it starts,
# the memory step, the charts) and W9L (100 locks, a short lease).  Checks the RESULT line format, that every selected
# workload reported, that no counter update was lost, and that the targets
# of W2, W3 and W3b are checked against the figures of the same run; then
# --json and --help.  Speed is never checked
# here: the targets are figures of the benchmark output.
set -u
bench=${1:?usage: smoke.sh path/to/distlock-bench}
out=$(mktemp "${TMPDIR:-/tmp}/bench-smoke.XXXXXX")
svg=$(mktemp "${TMPDIR:-/tmp}/bench-smoke-svg.XXXXXX")
svgdir=$(mktemp -d "${TMPDIR:-/tmp}/bench-smoke-w9.XXXXXX")
trap 'rm -f "$out" "$out.json" "$svg"; rm -rf "$svgdir"' EXIT
fail=0
bad() { echo "FAIL: $*" >&2; fail=1; }

help=$("$bench" --help) || bad "--help exited with $?"
for w in W2 W3 W3b C1 W9 "serial ceiling"; do
  [[ "$help" == *"$w"* ]] || bad "--help does not mention $w"
done
"$bench" --no-such-option >/dev/null 2>&1 && bad "an unknown option was accepted"

"$bench" --quick --no-progress --svg "$svg" floor W1 W2 W3 W3b S1 S1l C1 >"$out"
rc=$?
cat "$out"
[ "$rc" -eq 0 ] || bad "distlock-bench exited with $rc"

num='[0-9]+(\.[0-9]+)?'
line_re="^RESULT peer=(distlock|naive|floor) workload=[A-Za-z0-9]+ ops_per_s=$num p50_us=$num p99_us=$num extra=[A-Za-z0-9_]+=[^ ,]+(,[A-Za-z0-9_]+=[^ ,]+)*$"
skip_re="^RESULT peer=[a-z]+ workload=[A-Za-z0-9]+ ops_per_s=- p50_us=- p99_us=- extra=skipped=1(,[A-Za-z0-9_]+=[^ ,]+)*$"
while IFS= read -r l; do
  case "$l" in
    RESULT*) [[ "$l" =~ $line_re || "$l" =~ $skip_re ]] || bad "malformed: $l" ;;
    TARGET*) ;;
    *) bad "unexpected stdout line: $l" ;;
  esac
done <"$out"

for want in "floor EVALSHA" "floor PING" "floor W2serial" "naive W1" "distlock W1" "naive W2" \
            "distlock W2" "naive W3" "distlock W3" "naive W3b" "distlock W3b" "distlock S1" \
            "distlock S1l" "distlock C1"; do
  set -- $want
  grep -Eq "^RESULT peer=$1 workload=$2 " "$out" || bad "no RESULT for peer=$1 workload=$2"
done
# the semaphore's permits are never over-granted
for w in S1 S1l; do
  grep -Eq "^RESULT peer=distlock workload=$w .*[=,]overgrants=0," "$out" || bad "$w over-granted"
done
# a missing redis-benchmark would only skip the floor; this test needs it
grep -q "^RESULT peer=floor workload=EVALSHA ops_per_s=[0-9]" "$out" || bad "floor not measured"

for p in naive distlock floor; do
  l=$(grep -E "^RESULT peer=$p workload=W2(serial)? " "$out")
  [[ "$l" == *"lost_updates=0,"* || "$l" == *"lost_updates=0" ]] || bad "$p W2 lost updates: $l"
done
for p in naive distlock; do
  l=$(grep -E "^RESULT peer=$p workload=W2 " "$out")
  [[ "$l" == *"over_serial="* ]] || bad "$p W2 without over_serial"
  for w in W3 W3b; do
    l=$(grep -E "^RESULT peer=$p workload=$w " "$out")
    [[ "$l" == *"ping_p50_us="* ]] || bad "$p $w without the PING p50 of the run"
  done
  l=$(grep -E "^RESULT peer=$p workload=W1 " "$out")
  [[ "$l" == *"redis_cmds_per_op="* ]] || bad "$p W1 without redis_cmds_per_op"
done
grep -q "^TARGET workload=W1 " "$out" || bad "no TARGET line for W1"
# C1: every round's waiter woken (by push, or by asking Redis), against the
# PING of the run
l=$(grep -E "^RESULT peer=distlock workload=C1 " "$out")
[[ "$l" == *"ping_p50_us="* ]] || bad "C1 without the PING p50 of the run"
[[ "$l" =~ woken_by_push=([0-9]+),woken_by_asking=([0-9]+) ]] &&
  [ $((BASH_REMATCH[1] + BASH_REMATCH[2])) -ge 30 ] || bad "C1: its waiter was not woken each round: $l"
for t in 'W2 check="ops_per_s >= 0.9 \* serial ceiling" value=' 'W2 check="min_share >= 0.9" value=' \
         'W3 check="p50_us <= 4 \* PING p50" value=' 'W3b check="p50_us <= 4 \* PING p50" value=' \
         'W3b check="p99_us <= 1000" value=' 'C1 check="p50_us <= 4 \* PING p50" value='; do
  grep -q "^TARGET workload=$t" "$out" || bad "no checked TARGET line: $t"
done
grep -q "<svg" "$svg" || bad "--svg wrote no chart"

# --json: one document (checked by python3 when there is one)
"$bench" --quick --no-progress --json W1 --no-naive --no-floor >"$out.json" || bad "--json run failed"
if command -v python3 >/dev/null 2>&1; then
  python3 - "$out.json" <<'PY' || bad "--json output is not the expected JSON"
import json, sys
d = json.load(open(sys.argv[1]))
r = [x for x in d["results"] if x["peer"] == "distlock" and x["workload"] == "W1"]
assert r and r[0]["ops_per_s"] > 0 and "redis_cmds_per_op" in r[0]["extra"], d
PY
else
  grep -q '"workload": "W1"' "$out.json" || bad "--json output has no W1"
fi

# --repeat: every repetition reports (rep=K), and each TARGET line sums
# them up (reps=, met_reps= no more than reps=, one margin per repetition)
"$bench" --repeat 0 W4 >/dev/null 2>&1 && bad "--repeat 0 was accepted"
"$bench" --quick --no-progress --repeat 3 W4 >"$out" || bad "--repeat 3 W4 run failed"
cat "$out"
for k in 1 2 3; do
  grep -Eq "^RESULT peer=distlock workload=W4 .* extra=rep=$k," "$out" || bad "no W4 RESULT for rep=$k"
done
n=$(grep -c "^TARGET workload=W4 " "$out")
[ "$n" -ge 2 ] || bad "expected a W4 TARGET line per check, got $n"
while IFS= read -r l; do
  [[ "$l" =~ reps=3\ met_reps=([0-3])\ margins=([0-9.]+),([0-9.]+),([0-9.]+)( |$) ]] ||
    bad "TARGET line without its repetitions: $l"
done < <(grep "^TARGET workload=W4 " "$out")

# W9, ctest-sized: every step of both curves for both peers on the server
# and on the cluster, no lost update, the memory step, and the two charts
"$bench" --quick --no-progress --w9-procs 1,4 --w9-masters 0,3 --w9-seconds 0.2 \
  --svg-dir "$svgdir" W9 >"$out" || bad "W9 --quick run failed"
cat "$out"
while IFS= read -r l; do
  case "$l" in
    RESULT*) [[ "$l" =~ $line_re ]] || bad "malformed: $l" ;;
    TARGET*) ;;
    *) bad "unexpected stdout line: $l" ;;
  esac
done <"$out"
for wl in W9P W9O W9P3 W9O3; do
  for p in distlock naive; do
    for n in 1 4; do
      l=$(grep -E "^RESULT peer=$p workload=$wl .*extra=procs=$n," "$out")
      [ -n "$l" ] || { bad "no RESULT for $p $wl at $n processes"; continue; }
      for f in lost_updates=0, fairness= wait_max_us= redis_cpu_us_per_op= client_cpu_us_per_op= \
               conns_per_proc= rss_kb_mean=; do
        [[ "$l" == *"$f"* ]] || bad "$p $wl $n: no $f: $l"
      done
    done
  done
done
l=$(grep -E "^RESULT peer=distlock workload=W9M " "$out")
for f in bytes_per_held_lock= bytes_per_waiter= bytes_per_idle_name= bytes_per_connected_process=; do
  [[ "$l" == *"$f"* ]] || bad "W9M without $f: $l"
done
grep -q '^TARGET workload=W9 check="lost_updates == 0 (every step)" value=0.00 .* met=yes' "$out" ||
  bad "W9: no met lost_updates TARGET"
for f in w9-one-lock.svg w9-own-locks.svg; do
  grep -q "<svg" "$svgdir/$f" 2>/dev/null || bad "W9 wrote no $f"
done
# the tables of PERFORMANCE.md come from the same lines
if command -v python3 >/dev/null; then
  tbl=$(python3 "$(dirname "$0")/../../tools/bench/w9_table.py" "$out") || bad "w9_table.py failed"
  for h in "#### W9P distlock" "#### W9O3 naive" "#### W9M"; do
    [[ "$tbl" == *"$h"* ]] || bad "w9_table.py printed no $h"
  done
fi
# W9L, ctest-sized: 100 locks held for 3 leases of 1 s, all kept, its chart
"$bench" --quick --no-progress --w9-lease-ms 1000 --w9-locks 100 --svg-dir "$svgdir" W9L >"$out" ||
  bad "W9L --quick run failed"
grep -qE '^RESULT peer=distlock workload=W9L .*extra=locks=100,.*all_still_held=1,.*lost=0,unlock_errors=0,' "$out" ||
  bad "W9L: 100 locks not all kept: $(cat "$out")"
grep -q "<svg" "$svgdir/w9-many-locks-lease1000ms.svg" 2>/dev/null || bad "W9L wrote no chart"
"$bench" --w9-procs 0 W9 >/dev/null 2>&1 && bad "--w9-procs 0 was accepted"
"$bench" --w9-masters 4 W9 >/dev/null 2>&1 && bad "--w9-masters 4 was accepted"

[ "$fail" -eq 0 ] && echo "bench smoke: passed"
exit "$fail"
