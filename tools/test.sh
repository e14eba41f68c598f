#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# test.sh: installs what is missing (Debian), builds with AddressSanitizer +
# UndefinedBehaviorSanitizer, runs every test suite (each starts its own
# servers), runs the single-server suites under valgrind memcheck
# (tests/valgrind.sh) and each libFuzzer target for DISTLOCK_FUZZ_TIME
# seconds (tests/fuzz/run.sh, default 20), then checks that an installed
# distlock can be used by another project (tests/install/check.sh) and that
# the Debian packages build, pass lintian and work unpacked
# (tests/packages/check.sh).  The manual pages are checked by ctest
# (man_pages).  Exits non-zero on any failure.
#
# Environment: DISTLOCK_CI_BUILD_DIR (default build-ci), DISTLOCK_JOBS
# (default 2), DISTLOCK_CMAKE_ARGS (extra configure arguments, e.g.
# "-DDISTLOCK_SANITIZE=OFF -DDISTLOCK_TSAN=ON"), and ctest's own variables
# such as CTEST_PARALLEL_LEVEL.
set -euo pipefail
cd "$(dirname "$0")/.."

bash tools/deps.sh --test

build=${DISTLOCK_CI_BUILD_DIR:-build-ci}
jobs=${DISTLOCK_JOBS:-2}
# shellcheck disable=SC2086  # DISTLOCK_CMAKE_ARGS is a list of words
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDISTLOCK_SANITIZE=ON \
  -DDISTLOCK_TESTS=ON ${DISTLOCK_CMAKE_ARGS:-}
cmake --build "$build" -j "$jobs"

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

log="$build/ctest.log"
# ctest's own list of the suites that failed in its last run (a run with
# none leaves no file): removed first, so that an old list is never shown
failed_list="$build/Testing/Temporary/LastTestsFailed.log"
rm -f "$failed_list"
status=0
# Two suites at a time: each starts its own servers on free ports.
(cd "$build" && ctest --output-on-failure --no-tests=error -j "${CTEST_PARALLEL_LEVEL:-2}") \
  2>&1 | tee "$log" || status=1
summary=$(grep -E 'tests passed, [0-9]+ tests? failed out of' "$log" | tail -n 1 || true)
# The names of the failed suites ("NUMBER:NAME" lines), for the summary:
# the log of a long run is long, and a red run must say what failed.
failed_suites=""
if [ -s "$failed_list" ]; then
  failed_suites=$(cut -d: -f2- "$failed_list" | tr '\n' ' ')
  failed_suites=${failed_suites% }
elif [ "$status" -ne 0 ]; then
  failed_suites="(ctest failed without a list of failed suites: see $log)"
fi

echo
echo "== valgrind (memcheck, single-server suites)"
vg_status=0
bash tests/valgrind.sh || vg_status=1

echo
echo "== fuzz (short run of each libFuzzer target over its corpus)"
fuzz_status=0
bash tests/fuzz/run.sh "${DISTLOCK_FUZZ_TIME:-20}" || fuzz_status=1

echo
echo "== install check"
install_status=0
bash tests/install/check.sh || install_status=1

echo
echo "== packages check (cpack DEB, lintian, unpacked and used)"
packages_status=0
bash tests/packages/check.sh || packages_status=1

echo
echo "== summary"
echo "ctest: ${summary:-no summary (ctest did not run)}"
[ -z "$failed_suites" ] || echo "ctest: FAILED suites: $failed_suites"
if [ "$install_status" -eq 0 ]; then
  echo "install check: passed"
else
  echo "install check: FAILED"
fi
[ "$packages_status" -eq 0 ] && echo "packages check: passed" || echo "packages check: FAILED"
[ "$vg_status" -eq 0 ] && echo "valgrind: passed" || echo "valgrind: FAILED"
[ "$fuzz_status" -eq 0 ] && echo "fuzz: passed" || echo "fuzz: FAILED"
[ "$status" -eq 0 ] && [ "$install_status" -eq 0 ] && [ "$packages_status" -eq 0 ] &&
  [ "$vg_status" -eq 0 ] && [ "$fuzz_status" -eq 0 ]
