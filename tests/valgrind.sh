#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# tests/valgrind.sh [--all | SUITE...]: the cmocka suites under valgrind memcheck.
#
# Configures a plain build (no sanitizers: valgrind and ASan do not mix) in
# build-valgrind, builds the test_* suites and runs each under
#   valgrind --leak-check=full --errors-for-leak-kinds=definite,indirect
#            --error-exitcode=1 --trace-children=yes
# Every suite starts its own redis-server, as under ctest (not traced:
# --trace-children-skip).  Forked children are traced too; a memcheck error
# or a definite/indirect leak in any process fails the run: the exit code
# covers the suite's own process, and every process's log
# (<build>/valgrind/<suite>.<pid>.log) is scanned, since a test may expect a
# child to die or ignore how it ended.
#
# Default: the single-server suites (about 1.5 min under valgrind on 2
# cores, most of it waiting on Redis like the suites themselves).
# --all adds every other tests/test_*.c: the fault-injection and
# multi-server suites (test_faults*, test_wait, test_cluster,
# test_sentinel, test_redlock), about 2.5 min more, several servers each.
# The timing-sensitive suites (test_lease, test_wakeup, test_fair) pass
# under valgrind and are in the default set.
# Or name suites: tests/valgrind.sh test_mutex test_lease
#
# Environment: DISTLOCK_VG_BUILD_DIR (default build-valgrind),
# DISTLOCK_JOBS (build jobs, default 2), DISTLOCK_VG_ARGS (more valgrind
# flags), DISTLOCK_VG_TIMEOUT (seconds per suite, default 900).
set -euo pipefail
cd "$(dirname "$0")/.."

command -v valgrind >/dev/null 2>&1 || {
  echo "valgrind.sh: valgrind not found (apt-get install valgrind)" >&2; exit 1; }

build=${DISTLOCK_VG_BUILD_DIR:-build-valgrind}
jobs=${DISTLOCK_JOBS:-2}
per_suite=${DISTLOCK_VG_TIMEOUT:-900}
default_suites=(test_mutex test_rwlock test_fence test_fork test_keys test_errors
                test_lease test_wakeup test_fair test_linger test_checker test_badinput test_security)
if [ "${1:-}" = --all ]; then
  suites=()
  for f in tests/test_*.c; do suites+=("$(basename "$f" .c)"); done
elif [ $# -gt 0 ]; then
  suites=("$@")
else
  suites=()
  for s in "${default_suites[@]}"; do
    [ -f "tests/$s.c" ] && suites+=("$s")
  done
fi

cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDISTLOCK_SANITIZE=OFF \
  -DDISTLOCK_TSAN=OFF -DDISTLOCK_TESTS=ON >/dev/null
cmake --build "$build" -j "$jobs" --target "${suites[@]}"

logs="$build/valgrind"
rm -rf "$logs"
mkdir -p "$logs"

# Allocations a test's forked child leaves behind when it returns without
# destroying its lock objects are the test's, not the library's: each such
# child ends in _exit() right after, with the objects' names (one malloc in
# dl_obj_init) on a stack frame that is gone.
supp="$logs/distlock.supp"
cat >"$supp" <<'EOF'
{
   test-child-objects-not-destroyed
   Memcheck:Leak
   match-leak-kinds: definite
   fun:malloc
   fun:dl_obj_init
   ...
   fun:th_fork_child
}
EOF

unset DISTLOCK_URL               # each suite starts its own server
export DISTLOCK_LOG=${DISTLOCK_LOG:-error}
# Suites whose subject is a timing heuristic may skip a case that valgrind's
# slowdown keeps from happening (test_linger: a relock within 50 us).
export DISTLOCK_TEST_SLOW=1

# shellcheck disable=SC2054  # the commas are inside option values
vg=(valgrind --tool=memcheck --leak-check=full --errors-for-leak-kinds=definite,indirect
    --show-leak-kinds=definite,indirect --error-exitcode=1 --trace-children=yes
    --trace-children-skip='*redis-server*,*redis-cli*' --child-silent-after-fork=no
    --track-origins=no --num-callers=30 --suppressions="$supp")
# shellcheck disable=SC2206  # DISTLOCK_VG_ARGS is a list of flags
vg+=(${DISTLOCK_VG_ARGS:-})

status=0
summary=()
t_all=$(date +%s)
for s in "${suites[@]}"; do
  exe="$build/$s"
  [ -x "$exe" ] || { echo "valgrind.sh: no $exe" >&2; status=1; summary+=("$s: missing"); continue; }
  echo "== $s"
  t0=$(date +%s)
  rc=0
  timeout -k 10 "$per_suite" "${vg[@]}" --log-file="$logs/$s.%p.log" "$exe" \
    >"$logs/$s.out" 2>&1 || rc=$?
  secs=$(( $(date +%s) - t0 ))
  # every process's verdict: memcheck errors (leaks included), by log
  bad=()
  for f in "$logs/$s".*.log; do
    [ -e "$f" ] || continue
    if grep -qE 'ERROR SUMMARY: [1-9]' "$f"; then bad+=("$f"); fi
  done
  tests=$(grep -E '^\[  (PASSED|FAILED)  \]' "$logs/$s.out" | tr '\n' ' ' || true)
  if [ "$rc" -ne 0 ] || [ ${#bad[@]} -gt 0 ]; then
    status=1
    why="exit $rc"
    [ "$rc" -eq 124 ] && why="timed out after ${per_suite}s"
    echo "$s: FAILED ($why, ${#bad[@]} process(es) with memcheck errors) in ${secs}s; $tests"
    for f in "${bad[@]}"; do
      echo "--- $f"
      { grep -E -A14 'Invalid|uninitialised|Uninitialised|definitely lost in|indirectly lost in|Mismatched|overlap|Syscall param' "$f" || true; } | sed -n 1,60p
    done
    if [ "$rc" -ne 0 ] && [ ${#bad[@]} -eq 0 ]; then
      { grep -E 'FAILED|ERROR|error' "$logs/$s.out" || true; } | sed -n 1,20p
    fi
    summary+=("$s: FAILED ($why; ${#bad[@]} process(es) with errors), ${secs}s")
  else
    nlogs=$(find "$logs" -name "$s.*.log" | wc -l)
    echo "$s: ok in ${secs}s ($nlogs processes checked)"
    summary+=("$s: ok, ${secs}s, $nlogs processes")
  fi
done

echo
echo "== valgrind summary ($(( $(date +%s) - t_all ))s)"
printf '%s\n' "${summary[@]}"
exit "$status"
