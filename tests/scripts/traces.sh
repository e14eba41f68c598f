#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# traces.sh SRC_DIR: the death trace (the meta hash's wh, wr, wf, wp:
# lua/common.lua) at the script level, against the redis-server of
# DISTLOCK_URL (tools/with-redis.sh).  A withdrawal that runs after the
# grant it undoes lapsed takes back that grant's trace only
# (trace_lapsed_unclaimed): request ids are numbered per process, so the
# trace of another hold of the same process, with the same number, stays,
# and the next holder hears of that holder's death.
set -uo pipefail
src=$1
url=${DISTLOCK_URL:?DISTLOCK_URL: run under tools/with-redis.sh}
hp=${url#redis://}; host=${hp%:*}; port=${hp##*:}
R=(redis-cli -h "$host" -p "$port")
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
for op in acquire withdraw touch; do
  cmake -DLUA_DIR="$src/lua" -DOP=$op -P "$src/cmake/lua_assemble.cmake" >"$work/$op.lua" 2>&1 ||
    { echo "FAIL - assembling $op.lua: $(head -c 300 "$work/$op.lua")"; exit 1; }
done
K=(t:{t} t:{t}:r t:{t}:ri t:{t}:q t:{t}:w t:{t}:m)
# ev OP ARGS...: the script with the lock's six keys
ev() { local op=$1; shift; "${R[@]}" --eval "$work/$op.lua" "${K[@]}" , "$@"; }
fails=0
check() {
  local what=$1; shift
  if "$@"; then echo "ok   - $what"; else echo "FAIL - $what"; fails=$((fails + 1)); fi
}
"${R[@]}" DEL "${K[@]}" >/dev/null

# D takes the lock with request 5 and a 100 ms lease, and dies.
ev acquire 'n:' D w 100 "hD	1	1" 1 5 3000 3000 >/dev/null
# Y queues (request 6); after D's lapse, Z's try serves the queue: Y is
# granted by push over D's trace (a pending grant writes only the fence).
ev acquire 'n:' Y w 100000 "hY	2	2" 1 6 60000 10000 >/dev/null
sleep 0.3
ev acquire 'n:' Z w 100000 "hZ	3	3" 0 1 60000 10000 >/dev/null
f=$("${R[@]}" HGET t:{t} fence)
owner=$("${R[@]}" HGET t:{t} owner)
check "Y was granted the lock by push (owner $owner)" test "$owner" = Y
# Y claims it (lease 200 ms), holds it, and dies.
claimed=$("${R[@]}" EVAL "$(cat "$work/touch.lua")" 4 t:{t} t:{t}:r t:{t}:ri t:{t}:m Y w 200 "$f" 1)
check "Y's claim names it in the trace (touch: $claimed)" test "$claimed" = 1
sleep 0.4
# A late withdrawal of an earlier request of Y's, numbered 5 as D's was.
ev withdraw 'n:' Y w 5 >/dev/null
wh=$("${R[@]}" HGET t:{t}:m wh)
check "a withdrawal of another request of Y's leaves Y's trace (wh $wh)" test "$wh" = Y
reply=($(ev acquire 'n:' Z w 100000 "hZ	3	3" 0 2 60000 10000))
check "the next holder is told of Y's death (reply ${reply[*]}: ownerdead ${reply[2]:-})" \
  test "${reply[0]:-}" = 1 -a "${reply[2]:-}" = 1

"${R[@]}" DEL "${K[@]}" >/dev/null
echo "$(( 4 - fails )) passed, $fails failed"
[ "$fails" -eq 0 ]
