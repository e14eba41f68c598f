#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# preload_map.sh PRELOAD_SO LEGACY_COUNTER: runs 3 copies of an unmodified
# program at once, its global pthread mutex g_counter_lock turned into the
# distributed lock "example:counter" by the interposer, and checks that no
# update was lost.  Needs DISTLOCK_URL (or a redis-server on 127.0.0.1:6379).
#
#   bash preload_map.sh /usr/lib/x86_64-linux-gnu/libdistlock_preload.so ./legacy_counter
set -eu
preload=${1:?usage: $0 PRELOAD_SO LEGACY_COUNTER}
legacy=${2:?usage: $0 PRELOAD_SO LEGACY_COUNTER}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
echo 0 >"$dir/counter"

# NAME=KIND:TARGET[@PROGRAM]: @legacy_counter keeps launchers (timeout, sh)
# out of the entry; the map applies to the program of that name only.
export DISTLOCK_MAP="example:counter=mutex:g_counter_lock@$(basename "$legacy")"
n=100
for _ in 1 2 3; do
  LD_PRELOAD=$preload timeout 120 "$legacy" "$dir/counter" "$n" &
done
wait    # (a failed copy shows in the count)
# Without LD_PRELOAD the copies lose updates: one run here counted 24 of 300.

count=$(cat "$dir/counter")
echo "preload_map: counter $count, expected $((3 * n))"
[ "$count" -eq $((3 * n)) ]
