# SPDX-License-Identifier: BSD-3-Clause
# lib.sh - shared by the preload test scripts (sourced).
#   $1: path of libdistlock_preload.so   $2: the build directory (test programs)
# Provides: LIB, BIN, WORK (a temporary directory removed at exit), ok/fail,
# check, preload (runs a command with the interposer), finish; and the
# servers of tools/launch/launch.sh (dl_free_port, dl_redis_start ...),
# stopped at exit.
set -u
. "$(dirname "${BASH_SOURCE[0]}")/../../tools/launch/launch.sh"

if [ $# -lt 2 ]; then
  echo "usage: $0 LIBDISTLOCK_PRELOAD_SO BUILD_DIR" >&2
  exit 2
fi
LIB=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
BIN=$(cd "$2" && pwd)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/distlock-preload.XXXXXX")
PASSED=0
FAILED=0
DLP_PIDS=()

dlp_cleanup() {
  local p
  for p in "${DLP_PIDS[@]}"; do
    kill "$p" 2>/dev/null
  done
  dl_redis_stop_all
  rm -rf "$WORK"
}
trap dlp_cleanup EXIT

ok()   { PASSED=$((PASSED + 1)); echo "ok   - $*"; }
fail() { FAILED=$((FAILED + 1)); echo "FAIL - $*"; }
# check DESCRIPTION COMMAND...: passes when COMMAND succeeds.
check() {
  local what=$1; shift
  if "$@"; then ok "$what"; else fail "$what"; fi
}

# preload CMD...: CMD with the interposer (and whatever DISTLOCK_* is set).
preload() { LD_PRELOAD=$LIB "$@"; }

finish() {
  echo "$PASSED passed, $FAILED failed"
  [ "$FAILED" -eq 0 ]
}

# Reads the counter a legacy run left in FILE (0 if none).
counter() {
  local v
  v=$(head -c 20 "$1" 2>/dev/null | tr -dc 0-9)
  echo $((10#${v:-0}))
}
