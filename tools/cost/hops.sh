#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# hops.sh - where a handoff (W3) and a condition's signal-to-wake (C1) spend
# their time, hop by hop (docs/PERFORMANCE.md, "Issue 30").
#
#   tools/cost/hops.sh [BENCH]        (default build-bench/distlock-bench)
#
# Puts uprobes (perf probe; root, or perf_event_paranoid -1 and a writable
# tracefs) on the entries and returns of the library's calls in BENCH, which
# must hold the library (cmake/bench.cmake links it in) and its symbols:
# dist_mutex_lock/unlock, dist_cond_signal/wait, dl_take (a lock call's
# Redis part), dispatch (the subscriber thread handing on a push),
# dl_take_granted (the push that grants a queued request).  Runs
# `BENCH --no-floor --no-naive W3`, then `... C1`, under perf record and
# pairs the events of each round across the two processes.  Each probe hit
# costs a few microseconds, so the sums are a little above the bench's own
# figures.  The probes are removed at the end.
#
# Then the Redis side: W3 and C1 again, without probes, against a
# redis-server of its own (tools/launch/launch.sh) that logs every command
# in its SLOWLOG; the median time Redis spent in each script (by name,
# from the SHA1s in the build's generated/dl_scripts.c next to BENCH).
set -euo pipefail
BENCH=${1:-build-bench/distlock-bench}
BENCH=$(readlink -f "$BENCH")
SCRIPTS=$(dirname "$BENCH")/generated/dl_scripts.c
TMP=$(mktemp -d)
. "$(dirname "$0")/../launch/launch.sh"
cleanup() { perf probe -q -d 'probe_distlock:*' 2>/dev/null || true; dl_redis_stop_all; rm -rf "$TMP"; }
trap cleanup EXIT
perf probe -q -d 'probe_distlock:*' 2>/dev/null || true
for f in dist_mutex_lock 'dist_mutex_lock%return' dist_mutex_unlock 'dist_mutex_unlock%return' \
         dist_cond_signal 'dist_cond_signal%return' 'dist_cond_wait%return' \
         dl_take 'dl_take%return' dispatch dl_take_granted; do
  perf probe -q -x "$BENCH" -a "$f"
done
uptime
for w in W3 C1; do
  perf record -q -e 'probe_distlock:*' --inherit -o "$TMP/$w.data" \
    "$BENCH" --no-floor --no-naive "$w" 2>&1 | grep '^RESULT' | cut -c1-160
  perf script -i "$TMP/$w.data" -F pid,time,event 2>/dev/null > "$TMP/$w.txt"
done
python3 - "$TMP/W3.txt" "$TMP/C1.txt" <<'EOF'
import sys

def load(path):
    ev = []
    for line in open(path):
        p = line.split()
        if len(p) < 3:
            continue
        ev.append((float(p[1].rstrip(':')) * 1e6, int(p[0]), p[2].split(':')[1]))
    ev.sort()
    return ev

def back(ev, i, pred):
    for j in range(i - 1, -1, -1):
        if pred(ev[j]):
            return ev[j][0]
    return None

def fwd(ev, i, pred):
    for j in range(i + 1, len(ev)):
        if pred(ev[j]):
            return ev[j][0]
    return None

def show(title, names, rows):
    rows = rows[10:]                      # the bench's warm-up rounds
    print('%s: %d rounds' % (title, len(rows)))
    for k, n in enumerate(names):
        v = sorted(r[k] for r in rows)
        print('  %-50s p50 %7.1f us   p90 %7.1f us' % (n, v[len(v) // 2], v[int(len(v) * .9)]))

# W3: A unlocks, B (queued) is granted by the push the release publishes.
ev = load(sys.argv[1])
rows = []
for i, (t, pid, e) in enumerate(ev):
    if e != 'dl_take_granted':
        continue
    ue = back(ev, i, lambda x: x[1] != pid and x[2] == 'dist_mutex_unlock')
    disp = back(ev, i, lambda x: x[1] == pid and x[2] == 'dispatch')
    lr = fwd(ev, i, lambda x: x[1] == pid and x[2] == 'dist_mutex_lock__return')
    if ue is None or disp is None or lr is None or disp < ue:
        continue
    ur = fwd(ev, [k for k, x in enumerate(ev) if x[0] == ue][0],
             lambda x: x[1] != pid and x[2] == 'dist_mutex_unlock__return')
    rows.append((disp - ue, t - disp, lr - t, lr - ue, (ur or ue) - ue))
show('W3 (handoff)', ['unlock called -> push reaches the waiter (dispatch)',
                      'dispatch -> the grant is found (dl_take_granted)',
                      'grant -> the waiting lock call returns',
                      'unlock called -> lock returns (a W3 sample)',
                      'the unlock call itself (holder)'], rows)

# C1: A signals, B's condition wait is woken by the push and retakes the mutex.
ev = load(sys.argv[2])
rows = []
for i, (t, pid, e) in enumerate(ev):
    if e != 'dist_cond_wait__return':
        continue
    tr = back(ev, i, lambda x: x[1] == pid and x[2] == 'dl_take__return')
    te = back(ev, i, lambda x: x[1] == pid and x[2] == 'dl_take')
    disp = back(ev, i, lambda x: x[1] == pid and x[2] == 'dispatch')
    se = back(ev, i, lambda x: x[1] != pid and x[2] == 'dist_cond_signal')
    sr = back(ev, i, lambda x: x[1] != pid and x[2] == 'dist_cond_signal__return')
    if None in (tr, te, disp, se, sr) or not (se <= disp <= te <= tr <= t):
        continue
    rows.append((disp - se, te - disp, tr - te, t - se, sr - se))
show('C1 (signal to wake)', ['signal called -> push reaches the waiter (dispatch)',
                             'dispatch -> the woken thread asks for the mutex',
                             'the mutex retaken (dl_take: a round trip)',
                             'signal called -> wait returns (a C1 sample)',
                             'the signal call itself (signaller)'], rows)
EOF

mkdir -p "$TMP/redis"
dl_redis_start "$TMP/redis" -- --slowlog-log-slower-than 0 --slowlog-max-len 1000000
for w in W3 C1; do
  redis-cli -p "$DL_REDIS_PORT" SLOWLOG RESET >/dev/null
  "$BENCH" --url "redis://127.0.0.1:$DL_REDIS_PORT" --no-floor --no-naive "$w" 2>&1 |
    grep '^RESULT' | cut -c1-120
  redis-cli -p "$DL_REDIS_PORT" SLOWLOG GET -1 > "$TMP/$w.slow"
done
python3 - "$SCRIPTS" "$TMP/W3.slow" "$TMP/C1.slow" <<'EOF'
import re, sys
names = dict((sha, n) for n, sha in
             re.findall(r'\{ "(\w+)", "([0-9a-f]{40})"', open(sys.argv[1], encoding='latin-1').read()))
for w, path in (('W3', sys.argv[2]), ('C1', sys.argv[3])):
    lines = open(path, encoding='latin-1').read().split('\n')
    by = {}
    # SLOWLOG GET, one value a line: id, time, duration (us), the arguments...
    for k, x in enumerate(lines):
        if x.upper() == 'EVALSHA' and k + 1 < len(lines):
            try:
                by.setdefault(names.get(lines[k + 1], lines[k + 1][:8]), []).append(int(lines[k - 1]))
            except ValueError:
                pass
    print('%s, time in Redis per script call (SLOWLOG):' % w)
    for n, v in sorted(by.items(), key=lambda kv: -len(kv[1])):
        v.sort()
        print('  %-14s %5d calls  p50 %5d us  p90 %5d us' % (n, len(v), v[len(v) // 2], v[int(len(v) * .9)]))
EOF
