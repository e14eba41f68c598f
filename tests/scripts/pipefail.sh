#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# pipefail.sh SRC_DIR: no script of the project that runs under
# `set -o pipefail` pipes a producer into a consumer that may stop reading
# before the end (grep -q, grep -m, head, sed with q).  When the consumer
# stops early, the producer can die of SIGPIPE on its next write, and
# pipefail then fails the pipeline although the consumer found what it
# looked for: a failure that comes and goes with the machine's load (the
# install check's `ldd ... | grep -q ...`, issue 28).  Instead: read the
# output whole first (out=$(cmd); grep -q X <<<"$out"), let the command
# stop itself (find -print -quit), or use a consumer that reads to the end
# (sed -n 1,20p rather than head -n 20).
#
# Checked: every shell script that sets pipefail, and the launcher sourced
# by other scripts (tools/launch/launch.sh), which may be sourced under it.
set -u
src=${1:-.}
cd "$src" || exit 2
early='(grep[[:space:]]([^|]*[[:space:]])?-[a-zA-Z]*[qm]|head([[:space:]]|$)|sed[[:space:]][^|]*[0-9/]q)'
bad=0 n=0
while IFS= read -r f; do
  case $f in build*/*|*/build*/*) continue ;; esac
  if [ "$f" != tools/launch/launch.sh ] && ! grep -qE '^[^#]*set -[a-z]*o pipefail|^[^#]*set -o pipefail' "$f"; then
    continue
  fi
  n=$((n + 1))
  # a pipe (not ||) into an early-stopping consumer, outside comments
  hits=$(grep -nE "(^|[^|])\\|[[:space:]]*$early" "$f" | grep -vE '^[0-9]+:[[:space:]]*#')
  if [ -n "$hits" ]; then
    bad=1
    while IFS= read -r h; do echo "$f:$h"; done <<<"$hits"
  fi
done < <({ find . -name '*.sh' -type f; [ -f .ci/run ] && echo ./.ci/run; } | sed 's|^\./||' | sort)
if [ "$bad" -ne 0 ]; then
  echo "pipefail: the lines above pipe into a consumer that may stop early (see this script's header)" >&2
  exit 1
fi
echo "pipefail: $n scripts checked, no producer piped into an early-stopping consumer"
