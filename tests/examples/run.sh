#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# run.sh BINDIR [PRELOAD_SO]: runs each example of examples/ built in
# BINDIR against the Redis of DISTLOCK_URL (ctest starts one with
# tools/with-redis.sh); each example checks its own outcome.  The preload
# map example runs when PRELOAD_SO is given.
set -u
bindir=${1:?usage: $0 BINDIR [PRELOAD_SO]}
preload=${2:-}
src=$(cd "$(dirname "$0")/../../examples" && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/distlock-examples.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
# Each run uses fresh lock names: a previous run's lapsed hold would turn
# the expected 0 into EOWNERDEAD.
export DISTLOCK_PREFIX="examples-$$:"
fail=0
run() {
  local name=$1; shift
  if out=$("$@" 2>&1); then
    echo "ok   $name"
  else
    echo "FAIL $name"; fail=1
  fi
  sed 's/^/       | /' <<<"$out"
}

run hello_lock "$bindir/example_hello_lock" example:hello
mkdir -p "$tmp/cfg"
run config_swap "$bindir/example_config_swap" "$tmp/cfg"
run fenced_write "$bindir/example_fenced_write" "$tmp/store"
run job_runner "$bindir/example_job_runner" "$tmp/journal"
if [ -n "$preload" ]; then
  run preload_map bash "$src/preload_map.sh" "$preload" "$bindir/legacy_counter"
fi
exit "$fail"
