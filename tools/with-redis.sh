#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# with-redis.sh CMD [ARG...]
# Runs CMD with DISTLOCK_URL pointing at a redis-server of its own: started
# on a free port of 127.0.0.1, without persistence, stopped (by its pid)
# when CMD ends or this script is interrupted (tools/launch/launch.sh).
# Exits with CMD's status.  If DISTLOCK_URL is already set, only runs CMD.
set -u

if [ $# -eq 0 ]; then
  echo "usage: $0 CMD [ARG...]" >&2
  exit 2
fi
if [ -n "${DISTLOCK_URL:-}" ]; then
  exec "$@"
fi
command -v redis-server >/dev/null 2>&1 || {
  echo "with-redis: redis-server not found (run tools/deps.sh)" >&2; exit 127; }
. "$(dirname "$0")/launch/launch.sh"

dir=$(mktemp -d "${TMPDIR:-/tmp}/distlock-redis.XXXXXX")
# shellcheck disable=SC2317  # called from the traps
cleanup() { dl_redis_stop_all; rm -rf "$dir"; }
trap cleanup EXIT
trap 'cleanup; trap - INT; kill -INT $$' INT
trap 'cleanup; trap - TERM; kill -TERM $$' TERM

dl_redis_start "$dir" || exit 1

export DISTLOCK_URL="redis://127.0.0.1:$DL_REDIS_PORT"
"$@"
exit $?
