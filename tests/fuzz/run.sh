#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# tests/fuzz/run.sh [SECONDS]: builds the libFuzzer targets (cmake/fuzz.cmake)
# with clang in a build directory of their own, then fuzzes each one for
# SECONDS (default 20) starting from its committed corpus (fuzz/corpus/<t>/).
# Fails on any crash, sanitizer report, leak, time-out or failed check; the
# input that did it is left in <build>/fuzz-artifacts/<target>/ and its path
# printed.
#
# Environment:
#   DISTLOCK_FUZZ_TIME        seconds per target (default 20; the argument wins)
#   DISTLOCK_FUZZ_TARGETS     which targets (default "url env map demangle")
#   DISTLOCK_FUZZ_BUILD_DIR   build directory (default build-fuzz)
#   DISTLOCK_FUZZ_JOBS        parallel build jobs (default 2)
#   DISTLOCK_FUZZ_ARGS        extra libFuzzer flags, e.g. "-dict=... -max_len=4096"
#   FUZZ_STRICT=1             also require printable messages (see fuzz/fuzz_common.h)
# New inputs the fuzzer finds go to a scratch directory (printed, kept only
# with DISTLOCK_FUZZ_KEEP=1): the committed corpus is only read.
set -euo pipefail
cd "$(dirname "$0")/../.."

secs=${1:-${DISTLOCK_FUZZ_TIME:-20}}
targets=${DISTLOCK_FUZZ_TARGETS:-url env map demangle}
build=${DISTLOCK_FUZZ_BUILD_DIR:-build-fuzz}
jobs=${DISTLOCK_FUZZ_JOBS:-2}

cc=${DISTLOCK_FUZZ_CC:-}
if [ -z "$cc" ]; then
  for c in clang clang-18 clang-17 clang-16 clang-15 clang-14; do
    if command -v "$c" >/dev/null 2>&1; then cc=$c; break; fi
  done
fi
if [ -z "$cc" ]; then
  echo "fuzz: clang not found (apt-get install clang)" >&2
  exit 1
fi

# cmake/fuzz.cmake is included by the top-level CMakeLists.txt; until it is
# (or in a tree where it is not), load it as a project include: it has an
# include guard, so both at once are fine.
extra=()
if ! grep -q 'fuzz' CMakeLists.txt; then
  extra+=("-DCMAKE_PROJECT_INCLUDE=$PWD/cmake/fuzz.cmake")
fi
cmake -S . -B "$build" -DCMAKE_C_COMPILER="$cc" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DDISTLOCK_FUZZ=ON -DDISTLOCK_TESTS=OFF -DDISTLOCK_SANITIZE=OFF -DDISTLOCK_TSAN=OFF \
  "${extra[@]}" >/dev/null
build_targets=()
for t in $targets; do build_targets+=("fuzz_$t"); done
cmake --build "$build" -j "$jobs" --target "${build_targets[@]}"

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

status=0
summary=()
for t in $targets; do
  corpus=fuzz/corpus/$t
  art="$build/fuzz-artifacts/$t"
  work=$(mktemp -d "${TMPDIR:-/tmp}/distlock-fuzz-$t.XXXXXX")
  log="$build/fuzz-$t.log"
  mkdir -p "$art"
  echo "== fuzz_$t: ${secs}s from $corpus ($(find "$corpus" -type f | wc -l) seeds)"
  rc=0
  # shellcheck disable=SC2086  # DISTLOCK_FUZZ_ARGS is a list of flags
  "$build/fuzz_$t" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$art/" ${DISTLOCK_FUZZ_ARGS:-} \
    "$work" "$corpus" >"$log" 2>&1 || rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
  cov=$(grep -oE 'cov: [0-9]+' "$log" | tail -n 1 || true)
  if [ "$rc" -ne 0 ]; then
    status=1
    echo "fuzz_$t: FAILED (exit $rc) after ${execs:-?} runs; log: $log"
    grep -E 'ERROR|fuzz check failed|SUMMARY|runtime error|Test unit written' "$log" | sed -n 1,20p || true
    summary+=("fuzz_$t: FAILED, reproducer in $art/")
  else
    echo "fuzz_$t: ok, ${execs:-?} runs, ${cov:-cov ?}, $(find "$work" -type f | wc -l) new inputs"
    summary+=("fuzz_$t: ok (${execs:-?} runs)")
  fi
  if [ "${DISTLOCK_FUZZ_KEEP:-0}" = 1 ]; then
    echo "   new inputs kept in $work"
  else
    rm -rf "$work"
  fi
done

echo
echo "== fuzz summary"
printf '%s\n' "${summary[@]}"
exit "$status"
