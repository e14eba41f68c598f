#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# test_w8.sh LIB BUILD_DIR - W8 of bench/WORKLOADS.md: 10^7
# pthread_mutex_lock/unlock pairs on an unmapped mutex, plain and with the
# interposer preloaded (with a map, so the address table is not empty).
# Runs alternate, several rounds; the best round of each side is compared
# (the machine's noise only ever adds time).  Prints the RESULT line of
# WORKLOADS.md.  It checks that both sides ran and measured, not the 1.5x
# target: speed targets belong to the benchmark (distlock-bench W8), never
# to a timed test.  Needs no Redis: nothing mapped is locked.
. "$(dirname "$0")/lib.sh"

ROUNDS=${DLP_W8_ROUNDS:-7}
PAIRS=${DLP_W8_PAIRS:-10000000}
W8=$BIN/preload_w8
export DISTLOCK_MAP="other=mutex:g_mapped;jobs=flock:$WORK/jobs.lock"

best() { sort -g | head -1; }
plain=() pre=() p50s=() p50p=() p99s=() p99p=()
for r in $(seq "$ROUNDS"); do
  out=$(env -u DISTLOCK_MAP "$W8" "$PAIRS") || { fail "plain run"; break; }
  plain+=("$(sed -n 's/.*ns_per_pair=\([0-9.]*\).*/\1/p' <<<"$out")")
  p50s+=("$(sed -n 's/.*p50_ns=\([0-9.]*\).*/\1/p' <<<"$out")")
  p99s+=("$(sed -n 's/.*p99_ns=\([0-9.]*\).*/\1/p' <<<"$out")")
  out=$(preload "$W8" "$PAIRS") || { fail "preloaded run"; break; }
  pre+=("$(sed -n 's/.*ns_per_pair=\([0-9.]*\).*/\1/p' <<<"$out")")
  p50p+=("$(sed -n 's/.*p50_ns=\([0-9.]*\).*/\1/p' <<<"$out")")
  p99p+=("$(sed -n 's/.*p99_ns=\([0-9.]*\).*/\1/p' <<<"$out")")
  echo "round $r: plain ${plain[-1]} ns/pair, preloaded ${pre[-1]} ns/pair"
done
bp=$(printf '%s\n' "${plain[@]}" | best)
bq=$(printf '%s\n' "${pre[@]}" | best)
ratio=$(awk -v a="$bq" -v b="$bp" 'BEGIN { printf "%.2f", a / b }')
ops=$(awk -v a="$bq" 'BEGIN { printf "%.0f", 1e9 / a }')
p50=$(printf '%s\n' "${p50p[@]}" | best)
p99=$(printf '%s\n' "${p99p[@]}" | best)
echo "RESULT peer=distlock workload=W8 ops_per_s=$ops p50_us=$(awk -v x="$p50" 'BEGIN { printf "%.5f", x / 1000 }') p99_us=$(awk -v x="$p99" 'BEGIN { printf "%.5f", x / 1000 }') extra=ns_per_pair_plain=$bp,ns_per_pair_preloaded=$bq,ratio=$ratio"
check "W8 measured both sides: preloaded $bq ns/pair, plain $bp ns/pair (ratio $ratio)" \
  awk -v a="$bq" -v b="$bp" 'BEGIN { exit !(a > 0 && b > 0) }'
finish
