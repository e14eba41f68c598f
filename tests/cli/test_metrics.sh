#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# test_metrics.sh DISTLOCK: distlock metrics against locks held and waited
# on by running distlock processes, its output read by the Prometheus
# client library's own text-format parser (tests/cli/promparse.py, with
# Debian's python3-prometheus-client), its caps, and bad input.
. "$(dirname "$0")/lib.sh"

PY=/usr/bin/python3
PARSE="$(dirname "$0")/promparse.py"
if ! "$PY" -c 'import prometheus_client.parser' 2>/dev/null; then
  nok "python3-prometheus-client is not installed (tools/deps.sh --test)"
  finish
  exit 1
fi

# metrics [ARGS...]: runs distlock metrics; $rc, $out, $err, and $T/parsed
# (promparse.py's lines), $prc its status; $m_start and $m_end, the times
# just before and after distlock ran.
metrics() {
  m_start=$(now)
  run "$D" metrics "$@"
  m_end=$(now)
  "$PY" "$PARSE" <"$T/out" >"$T/parsed" 2>"$T/parse.err"
  prc=$?
}
# secs_between A B: B - A, in seconds.
secs_between() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'; }
# value SAMPLE KIND NAME_JSON: the value the parser read ('' if none).
# (Through the environment: awk -v would read escapes in the JSON.)
value() {
  S="$1" K="$2" N="$3" awk -F'\t' '$1 == ENVIRON["S"] && $2 == ENVIRON["K"] && $3 == ENVIRON["N"] { print $4 }' "$T/parsed"
}
# samples SAMPLE: how many samples of that name.
samples() { awk -F'\t' -v s="$1" '$1 == s' "$T/parsed" | wc -l; }
# le A B / ge: numeric comparisons of the parser's floats.
le() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a + 0 <= b + 0) }'; }
lt() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a + 0 < b + 0) }'; }

# --- nothing held
metrics
expect "no lock: exit 0, parses, distlock_up 1, no object" \
  'test "$rc" = 0 -a "$prc" = 0 && test "$(value distlock_up - -)" = 1.0 &&
   test "$(value distlock_objects lock -)" = 0.0 && test "$(samples distlock_holders)" = 0'
check "every family is a gauge" bash -c "! grep -P '^TYPE\\t' '$T/parsed' | grep -vP '\\tgauge\$'"

# --- a holder and two waiters, a shared lock with two holders
t_hold=$(now)
bg "$D" m-x -- sleep 60 >/dev/null 2>&1
hx=$last_pid
wait_held m-x
t_wait=$(now)
bg "$D" m-x -- true >/dev/null 2>&1
bg "$D" -s m-x -- true >/dev/null 2>&1
wait_waiting m-x 2
t_queued=$(now)
bg "$D" -s m-s -- sleep 60 >/dev/null 2>&1
bg "$D" -s m-s -- sleep 60 >/dev/null 2>&1
wait_until 5 eval "\"$D\" status m-s | grep -q 'held shared by 2'"
sleep 0.3                       # so that the waits are visibly more than 0
metrics
# Redis read the state at some moment between m_start and m_end.
since_hold=$(secs_between "$t_hold" "$m_end")
since_wait=$(secs_between "$t_wait" "$m_end")
since_queued=$(secs_between "$t_queued" "$m_start")
expect "held: exit 0 and the parser reads it" 'test "$rc" = 0 -a "$prc" = 0'
expect "held: distlock_holders 1 for m-x, 2 for m-s" \
  'test "$(value distlock_holders lock "\"m-x\"")" = 1.0 && test "$(value distlock_holders lock "\"m-s\"")" = 2.0'
expect "held: distlock_waiters 2 for m-x, 0 for m-s" \
  'test "$(value distlock_waiters lock "\"m-x\"")" = 2.0 && test "$(value distlock_waiters lock "\"m-s\"")" = 0.0'
w=$(value distlock_longest_wait_seconds lock '"m-x"')
# The waiters queued after t_wait and before t_queued: the longest wait is
# at least the time since t_queued and at most the time since t_wait.
expect "the longest wait ($w s) lies between the test's own clocks ($since_queued .. $since_wait s)" \
  'le "$since_queued" "$w" && le "$w" "$since_wait"'
a=$(value distlock_hold_age_seconds lock '"m-x"')
expect "the hold age ($a s) is at most the time since the holder started ($since_hold s), and more than the wait" \
  'le "$a" "$since_hold" && lt "$w" "$a"'
l=$(value distlock_lease_left_seconds lock '"m-x"')
expect "the lease left ($l s) is within the 30 s lease" 'lt 0 "$l" && le "$l" 30'
expect "totals: 2 objects read, 2 held, none summed" \
  'test "$(value distlock_objects lock -)" = 2.0 && test "$(value distlock_held_objects lock -)" = 2.0 &&
   test "$(value distlock_other_names lock -)" = 0.0'
expect "a lock read from one server has no distlock_servers_agreeing" 'test "$(samples distlock_servers_agreeing)" = 0'
metrics 'm-s*'
expect "PATTERN: only m-s" \
  'test "$(samples distlock_holders)" = 1 && test "$(value distlock_holders lock "\"m-s\"")" = 2.0'

# --- a semaphore: m-pool's two leased permits held by distlock -N 2, a
# third command queued for one
t_sem=$(now)
bg "$D" -N 2 m-pool -- sleep 60 >/dev/null 2>&1
hs1=$last_pid
wait_sem m-pool :l 1
bg "$D" -N 2 m-pool -- sleep 60 >/dev/null 2>&1
hs2=$last_pid
wait_sem m-pool :l 2
t_swait=$(now)
bg "$D" -N 2 m-pool -- true >/dev/null 2>&1
ws=$last_pid
wait_sem m-pool :q 1
t_squeued=$(now)
sleep 0.3                       # so that the wait is visibly more than 0
metrics
expect "semaphore: exit 0 and the parser reads it" 'test "$rc" = 0 -a "$prc" = 0'
expect "semaphore: distlock_holders 2 and distlock_waiters 1 for m-pool, kind sem" \
  'test "$(value distlock_holders sem "\"m-pool\"")" = 2.0 && test "$(value distlock_waiters sem "\"m-pool\"")" = 1.0'
w=$(value distlock_longest_wait_seconds sem '"m-pool"')
expect "semaphore: the longest wait ($w s) lies between the test's own clocks ($(secs_between "$t_squeued" "$m_start") .. $(secs_between "$t_swait" "$m_end") s)" \
  'le "$(secs_between "$t_squeued" "$m_start")" "$w" && le "$w" "$(secs_between "$t_swait" "$m_end")"'
a=$(value distlock_hold_age_seconds sem '"m-pool"')
expect "semaphore: the hold age ($a s) is at most the time since the first holder started, and more than the wait" \
  'le "$a" "$(secs_between "$t_sem" "$m_end")" && lt "$w" "$a"'
l=$(value distlock_lease_left_seconds sem '"m-pool"')
expect "semaphore: the lease left ($l s) is within the 30 s lease" 'lt 0 "$l" && le "$l" 30'
i=$(value distlock_incarnation_age_seconds sem '"m-pool"')
expect "semaphore: its incarnation's age ($i s) is at least the hold age, at most the time since its first user started" \
  'le "$a" "$i" && le "$i" "$(secs_between "$t_sem" "$m_end")"'
expect "locks have no incarnation age" 'test -z "$(value distlock_incarnation_age_seconds lock "\"m-x\"")"'
expect "semaphore: the totals by kind (1 read, 1 held), the locks' unchanged" \
  'test "$(value distlock_objects sem -)" = 1.0 && test "$(value distlock_held_objects sem -)" = 1.0 &&
   test "$(value distlock_held_objects lock -)" = 2.0'
metrics 'm-s*'
expect "PATTERN m-s*: not the semaphore m-pool" 'test "$(samples distlock_waiters)" = 1'
# The holders leave: the waiter takes a permit, runs, and the semaphore
# has nobody left.
kill -TERM "$hs1" "$hs2"
wait_pid "$ws"
wait_sem m-pool :l 0
metrics
expect "semaphore left: no series for m-pool, none held" \
  'test "$rc" = 0 -a "$prc" = 0 && test -z "$(value distlock_holders sem "\"m-pool\"")" &&
   test "$(value distlock_held_objects sem -)" = 0.0'

# --- names that need escaping: '"', '\', a newline, a byte that is not
# UTF-8, and UTF-8 itself.  The label value shows the name as distlock
# shows names: '\' doubled, other bytes as \xNN.
odd=$'q"b\\s\nn\xffe\xc3\xa9'
bg "$D" "$odd" -- sleep 60 >/dev/null 2>&1
wait_held "$odd"
metrics
expect "odd name: the parser reads the file" 'test "$rc" = 0 -a "$prc" = 0'
want='"q\"b\\\\s\\x0an\\xffe\u00e9"'
expect "odd name: its label value is $want" 'test "$(value distlock_holders lock "$want")" = 1.0'
stop_pid() { kill -TERM "$1" 2>/dev/null; wait_pid "$1"; }
stop_pid "${bg_pids[-1]}"

# --- --names: series for the busiest names only, the rest summed under name=""
bg "$D" m-y -- sleep 60 >/dev/null 2>&1
wait_held m-y
metrics --names 1
expect "--names 1: one name of its own (m-x, the most waiters), the other two under name=\"\"" \
  'test "$rc" = 0 -a "$prc" = 0 && test "$(samples distlock_holders)" = 2 &&
   test "$(value distlock_waiters lock "\"m-x\"")" = 2.0 &&
   test "$(value distlock_holders lock "\"\"")" = 3.0 && test "$(value distlock_other_names lock -)" = 2.0'
metrics
all=$(awk -F'\t' '$1 == "distlock_holders" { s += $4 } END { print s }' "$T/parsed")
metrics --names 2
some=$(awk -F'\t' '$1 == "distlock_holders" { s += $4 } END { print s }' "$T/parsed")
expect "--names 2: the sum of distlock_holders is the same as without a cap ($some = $all)" \
  'test "$some" = "$all"'

# --- a huge key space: 3000 held locks (made directly in Redis) and the cap
rcli eval "for i = 1, 3000 do
  local k = 'distlock:{h-' .. i .. '}'
  redis.call('HSET', k, 'owner', 'tok' .. i, 'info', 'elsewhere\t1\t1', 'since', '0', 'fence', i, 'lease', 60000)
  redis.call('PEXPIRE', k, 60000)
end" 0 >/dev/null
metrics
expect "3000 more locks: 100 names of their own (--names' default), the rest summed" \
  'test "$rc" = 0 -a "$prc" = 0 && test "$(samples distlock_holders)" = 101 &&
   test "$(value distlock_objects lock -)" = 3003.0 && test "$(value distlock_truncated - -)" = 0.0'
lines=$(wc -l <"$T/out")
expect "the output stays small ($lines lines)" 'test "$lines" -lt 1000'
metrics --limit 1000
expect "--limit 1000: 1000 read, distlock_truncated 1, one warning line" \
  'test "$rc" = 0 -a "$prc" = 0 && test "$(value distlock_objects lock -)" = 1000.0 &&
   test "$(value distlock_truncated - -)" = 1.0 && one_line_err && grep -q "more than 1000 objects" "$T/err"'
rcli eval "for i = 1, 3000 do redis.call('DEL', 'distlock:{h-' .. i .. '}') end" 0 >/dev/null

# --- --output FILE: written whole (write and rename), parses
run "$D" metrics --output "$T/distlock.prom"
expect "--output: exit 0, nothing on stdout, the file parses" \
  'test "$rc" = 0 -a -z "$out" && "$PY" "$PARSE" <"$T/distlock.prom" >/dev/null &&
   test -z "$(ls "$T" | grep "distlock.prom.tmp")"'
run "$D" metrics --output "$T/no/such/dir/x.prom"
expect "--output in a missing directory: exit 73, one line" 'test "$rc" = 73 && one_line_err'

# --- Redis unreachable: distlock_up 0 (so a scrape sees it), exit 69, one line
run "$D" --url redis://127.0.0.1:1 metrics
"$PY" "$PARSE" <"$T/out" >"$T/parsed" 2>"$T/parse.err"
prc=$?
expect "a URL that cannot connect: exit 69, one line, distlock_up 0 on stdout" \
  'test "$rc" = 69 -a "$prc" = 0 && one_line_err && test "$(value distlock_up - -)" = 0.0'
run "$D" metrics --url redis://127.0.0.1:1 --output "$T/down.prom"
expect "unreachable with --output: the file says distlock_up 0" \
  'test "$rc" = 69 && grep -qx "distlock_up 0" "$T/down.prom"'

# --- bad input
expect_usage "an unknown option" metrics --bogus
expect_usage "an unknown short option" metrics -x
expect_usage "a top option" metrics -d 1
expect_usage "--names 0" metrics --names 0
expect_usage "--names not a number" metrics --names many
expect_usage "--limit -1" metrics --limit -1
expect_usage "--limit without a value" metrics --limit
expect_usage "two patterns" metrics a b
expect_usage "--output empty" metrics --output ''
expect_usage "--url that does not parse" --url 'http://x' metrics

finish
