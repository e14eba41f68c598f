#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# demo.sh [distlock-demo options]: installs what is missing (Debian), builds
# a Release tree in build/ and runs distlock-demo against a private
# redis-server.  Options go to distlock-demo, e.g. -p 8 -t 4 -n 500 -f.
set -euo pipefail
cd "$(dirname "$0")/.."

bash tools/deps.sh
build=${DISTLOCK_BUILD_DIR:-build}
jobs=${DISTLOCK_JOBS:-$(nproc 2>/dev/null || echo 2)}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" --target distlock-demo -j "$jobs"
echo
exec bash tools/with-redis.sh "$build/distlock-demo" "$@"
