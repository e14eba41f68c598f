#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# subdir.sh [add_subdirectory|FetchContent]: builds tests/install/consumer.c
# in a project that takes distlock in from its sources
# (tests/install/subdir/CMakeLists.txt), by add_subdirectory (the default)
# or FetchContent, in a temporary tree; then runs the consumers against a
# private redis-server when redis-server is there.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
via=${1:-add_subdirectory}
jobs=${DISTLOCK_JOBS:-2}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/distlock-subdir.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

echo "-- configuring a project that takes distlock in by $via"
if ! { cmake -S "$root/tests/install/subdir" -B "$tmp/build" -DCMAKE_BUILD_TYPE=Release \
         -DDISTLOCK_SOURCE_DIR="$root" -DDL_VIA="$via" &&
       cmake --build "$tmp/build" -j "$jobs" --target consumer consumer_static; } \
     >"$tmp/build.log" 2>&1; then
  cat "$tmp/build.log" >&2
  echo "subdir: the project failed to configure or build" >&2
  exit 1
fi

if command -v redis-server >/dev/null 2>&1; then
  echo "-- running the consumers against redis"
  bash "$root/tools/with-redis.sh" sh -c '
    set -e
    for exe in "$@"; do "$exe"; done' sh \
    "$tmp/build/consumer" "$tmp/build/consumer_static"
else
  echo "-- redis-server not found: built, not run"
fi
echo "subdir check ($via): ok"
