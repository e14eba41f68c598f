#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# w9_profile.sh OUT BENCH-ARGS...: a W9 run of distlock-bench under
# `perf record` (every process the bench forks: its workers and the
# redis-servers it starts), then where the CPU went: by program, and the
# hottest symbols of the workers and of Redis.  The profile behind each
# bend named in docs/PERFORMANCE.md ("W9: where the curves bend"):
#
#   tools/bench/w9_profile.sh /tmp/w9p64 build-bench/distlock-bench \
#       --no-naive --w9-procs 64 --w9-masters 0 --w9-seconds 4 W9
#
# OUT.data is perf's file, OUT.txt the report; OUT.out/.err the bench's.
# W9 runs W9P's step, then W9O's, then W9M: W9_PROFILE_TIME=5%-35% (perf
# report --time) keeps a slice of the run, e.g. W9P's step alone.
# Needs perf (Debian linux-perf) and kernel.perf_event_paranoid <= 2.
set -eu
slice=${W9_PROFILE_TIME:+--time=$W9_PROFILE_TIME}
out=${1:?usage: w9_profile.sh OUT BENCH [ARGS...]}
shift
[ $# -ge 1 ] || { echo "usage: w9_profile.sh OUT BENCH [ARGS...]" >&2; exit 2; }
perf record -q -F 999 -o "$out.data" -- "$@" --no-progress >"$out.out" 2>"$out.err"
{
  echo "# $*${W9_PROFILE_TIME:+ (perf report --time $W9_PROFILE_TIME)}"
  grep '^RESULT' "$out.out" | sed -E 's/ extra=.*procs=([0-9]+),.*/ procs=\1/'
  echo
  echo "## CPU by program (samples at 999 Hz, every CPU)"
  perf report -q -i "$out.data" $slice --stdio --sort comm 2>/dev/null | head -8
  echo
  echo "## the workers (distlock-bench), by symbol"
  perf report -q -i "$out.data" $slice --stdio --comm distlock-bench --sort dso,sym 2>/dev/null | head -25
  echo
  echo "## Redis, by symbol"
  perf report -q -i "$out.data" $slice --stdio --comm redis-server --sort dso,sym 2>/dev/null | head -25
} >"$out.txt"
cat "$out.txt"
