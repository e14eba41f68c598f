#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# test_inspect.sh DISTLOCK: distlock status, list and break, against locks
# held by running distlock processes.
. "$(dirname "$0")/lib.sh"

host=$(hostname)
# valid_json FILE: when python3 is there, the file parses as JSON.
valid_json() {
  command -v python3 >/dev/null 2>&1 || return 0
  python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$1"
}
json_field() { sed -n "s/.*\"$1\":\\([^,}]*\\).*/\\1/p" "$T/out" | head -n 1; }

# --- a lock nobody used
run "$D" status i1
expect "status of a free lock: exit 1, 'state: free', 0 waiting" \
  'test "$rc" = 1 && grep -q '\''^state: *free$'\'' "$T/out" && grep -q '\''^waiting: *0$'\'' "$T/out"'
run "$D" status i1 --json
check "status --json of a free lock" \
  test "$rc" = 1 -a "$out" = '{"name":"i1","kind":"lock","held":false,"mode":"free","holders":[],"waiting":0,"waiters":[],"last_fence":null,"next_gets_ownerdead":false,"broken":false,"unrecoverable":false}'

# --- while an exclusive holder runs
bg "$D" i1 -- sleep 30 >/dev/null 2>&1
h1=$last_pid
wait_held i1
run "$D" status i1
check "status while held: exit 0" test "$rc" = 0
check "status: 'state: held exclusive'" grep -q '^state: *held exclusive$' "$T/out"
check "status: holder host:pid (thread T), held for, lease left, fence" \
  grep -qE "^holder: +$host:$h1 \\(thread $h1\\), held for [0-9.]+s, lease left [0-9.]+s of 30.0s, fence [0-9]+$" "$T/out"
run "$D" status i1 --json
check "status --json is valid JSON" valid_json "$T/out"
check "status --json: held, exclusive, the holder's pid and host" \
  grep -q "\"held\":true,\"mode\":\"exclusive\",\"holders\":\\[{\"host\":\"$host\",\"pid\":$h1,\"thread\":$h1," "$T/out"
held1=$(json_field held_ms)
left=$(json_field lease_left_ms)
expect "status --json: lease 30000 ms, lease left in (0, 30000] ($left)" \
  'grep -q '\''"lease_ms":30000,'\'' "$T/out" && test "$left" -gt 0 -a "$left" -le 30000'
sleep 0.3
run "$D" status i1 --json
held2=$(json_field held_ms)
check "status --json: held_ms grows ($held1 -> $held2)" test "$held2" -gt "$held1"

# --- waiters, in queue order, with their mode
bg "$D" i1 -- true >/dev/null 2>&1
w1=$last_pid
wait_waiting i1 1
bg "$D" -w 30 i1 -- true >/dev/null 2>&1
w2=$last_pid
wait_waiting i1 2
run "$D" status i1
expect "status: 'waiting: 2' and one waiter line each, in order" \
  'grep -q '\''^waiting: *2$'\'' "$T/out" && test "$(grep '\''^waiter:'\'' "$T/out" | sed -E '\''s/.*:([0-9]+) \(thread.*/\1/'\'' | tr '\''\n'\'' '\'' '\'')" = "$w1 $w2 "'
check "status: a waiter line says host:pid (thread T), exclusive" \
  grep -qE "^waiter: +$host:$w1 \\(thread $w1\\), exclusive$" "$T/out"
run "$D" status i1 --json
check "status --json: the waiters" \
  grep -q "\"waiting\":2,\"waiters\":\\[{\"host\":\"$host\",\"pid\":$w1,\"thread\":$w1,\"mode\":\"exclusive\"}," "$T/out"

# --- list
bg "$D" -s i2 -- sleep 30 >/dev/null 2>&1
r1=$last_pid
bg "$D" -s i2 -- sleep 30 >/dev/null 2>&1
r2=$last_pid
wait_until 5 eval "\"$D\" status i2 | grep -q 'held shared by 2'"
run "$D" status i2
check "status of a shared lock: 'held shared by 2', two holder lines" \
  test "$rc" = 0 -a "$(grep -c '^holder:' "$T/out")" = 2
run "$D" status i2 --json
expect "status --json of a shared lock: mode shared, lease_ms null" \
  'grep -q '\''"mode":"shared"'\'' "$T/out" && grep -q '\''"lease_ms":null'\'' "$T/out"'
"$D" i-free -- true                          # used once, free now
run "$D" list
expect "list: exit 0, a header and the two held locks" \
  'test "$rc" = 0 -a "$(printf '\''%s\n'\'' "$out" | wc -l)" = 3 && grep -q '\''^NAME '\'' "$T/out"'
check "list: i1 exclusive with 2 waiting and its holder" \
  grep -qE "^i1 +lock +exclusive +[0-9.]+s +2 +$host:$h1 \\(thread $h1\\)$" "$T/out"
check "list: i2 shared by 2" grep -qE "^i2 +lock +shared\\(2\\) +[0-9.]+s +0 +$host:[0-9]+ \\(thread [0-9]+\\) \\+1 more$" "$T/out"
check "list: a free lock is not listed" bash -c "! grep -q '^i-free' '$T/out'"
run "$D" list --all
check "list --all: the free lock too" grep -qE '^i-free +lock +free +- +0 +-$' "$T/out"
run "$D" list 'i2*'
check "list PATTERN: only the matching locks" test "$(printf '%s\n' "$out" | tail -n +2 | cut -d' ' -f1)" = i2
run "$D" list 'nothing-*'
check "list with no match: exit 0, the header and a line saying so" \
  test "$rc" = 0 -a "$out" = "$(printf 'NAME  KIND  STATE         HELD FOR  WAITING  HOLDER\n(nothing held or waited on)')" -a -z "$err"
run "$D" list --json
expect "list --json: valid JSON, an array of both locks" \
  'valid_json "$T/out" && grep -q '\''^\[{"name":"i1",.*},{"name":"i2",.*}\]$'\'' "$T/out"'

# --- odd names: spaces, braces, the key suffixes, a newline
for name in 'a b{c}' 'x}:r' 'y}:m}' "$(printf 'nl\nx')"; do
  bg "$D" "$name" -- sleep 30 >/dev/null 2>&1
  wait_held "$name"
done
run "$D" list --json
expect "list: names with braces and key suffixes come out whole" \
  'grep -q '\''"name":"a b{c}"'\'' "$T/out" && grep -q '\''"name":"x}:r"'\'' "$T/out" && grep -q '\''"name":"y}:m}"'\'' "$T/out" && grep -q '\''"name":"nl\\nx"'\'' "$T/out"'
run "$D" list
check "list: a newline in a name is escaped, one line per lock" grep -q '^nl\\x0ax ' "$T/out"
run "$D" status "$(printf 'nl\nx')"
check "status: the name quoted and escaped" grep -q '^lock: *"nl\\x0ax"$' "$T/out"

# --- SCAN, never KEYS: list works for a user who may not run KEYS
if rcli ACL SETUSER lister on '>pw' '~*' '&*' '+@all' '-keys' >/dev/null 2>&1; then
  keys=$(redis-cli -h 127.0.0.1 -p "$REDIS_PORT" --user lister --pass pw --no-auth-warning KEYS '*' 2>&1)
  run "$D" --url "redis://lister:pw@127.0.0.1:$REDIS_PORT" list
  expect "list works without the KEYS command (KEYS: ${keys%% *})" \
    'test "$rc" = 0 && grep -q '\''^i1 '\'' "$T/out" && [[ "$keys" == *NOPERM* ]]'
else
  ok "SCAN-only check: skipped (no ACL in this redis-server)"
fi

# --- DISTLOCK_PREFIX and the database number separate locks
run env DISTLOCK_PREFIX=other: "$D" status i1
check "another DISTLOCK_PREFIX does not see the lock" test "$rc" = 1
run env DISTLOCK_PREFIX='g*[x]:' "$D" g -- "$D" list
check "list with glob characters in the prefix (run under the lock g)" grep -qE '^g +lock +exclusive ' "$T/out"
bg env DISTLOCK_PREFIX='g*[x]:' "$D" g -- sleep 30 >/dev/null 2>&1
wait_until 5 env DISTLOCK_PREFIX='g*[x]:' "$D" status g >/dev/null 2>&1
run env DISTLOCK_PREFIX='g*[x]:' "$D" list
check "... lists exactly its own lock" test "$(printf '%s\n' "$out" | tail -n +2 | cut -d' ' -f1)" = g
bg "$D" --url "$DISTLOCK_URL/3" i-db -- sleep 30 >/dev/null 2>&1
wait_until 5 "$D" --url "$DISTLOCK_URL/3" status i-db >/dev/null
run "$D" status i-db
check "a lock in database 3 is not in database 0" test "$rc" = 1
run "$D" --url "$DISTLOCK_URL/3" status i-db
check "... and status --url .../3 sees it" test "$rc" = 0

# --- break
run "$D" break i-never --force
expect "break a free lock: exit 1, one line" \
  'test "$rc" = 1 -a -z "$out" && one_line_err'
bg "$D" --lease 300 i3 -- sleep 30 >/dev/null 2>"$T/broken.err"
b1=$last_pid
wait_held i3
bg "$D" -v i3 -- echo waiter-ran >"$T/bwaiter.out" 2>"$T/bwaiter.err"
bw=$last_pid
wait_waiting i3 1
t=$(now)
run "$D" break i3 --force
expect "break a held lock: exit 0, says whose hold went" \
  'test "$rc" = 0 && grep -q "^broke \"i3\": removed the hold of $host:$b1 (thread $b1); handed it to the waiters (1); the next holder gets EOWNERDEAD$" "$T/out"'
wait_pid "$bw" 5
dt=$(elapsed "$t")
expect "break wakes the waiter at once ($dt s), which runs its command" \
  'test "$rc" = 0 -a "$(cat "$T/bwaiter.out")" = waiter-ran && between "$dt" 0 1.5'
check "... and, as the next holder, warns of the broken lock" \
  grep -q 'warning: "i3": the previous holder' "$T/bwaiter.err"
wait_until 3 grep -q 'lost the lock "i3"' "$T/broken.err"
check "the broken holder says at once that it lost the lock" grep -q 'lost the lock "i3"' "$T/broken.err"
kill -TERM "$b1"
wait_pid "$b1"
check "... and exits with its command's status (143)" test "$rc" = 143

bg "$D" i4 -- sleep 30 >/dev/null 2>&1
wait_held i4
run "$D" break i4 --force
run "$D" status i4
expect "status after a break: free, 'broken by distlock break'" \
  'test "$rc" = 1 && grep -q '\''^note: *broken by distlock break; the next holder gets EOWNERDEAD$'\'' "$T/out"'
run "$D" status i4 --json
check "status --json after a break: next_gets_ownerdead, broken" \
  grep -q '"next_gets_ownerdead":true,"broken":true,"unrecoverable":false}$' "$T/out"
run "$D" i4 -- true
expect "the next distlock on it warns (one line) and runs" \
  'test "$rc" = 0 && one_line_err && grep -q '\''or the lock was broken'\'' "$T/err"'
run "$D" i4 -- true
check "the one after does not" test "$rc" = 0 -a -z "$err"

bg "$D" -s i5 -- sleep 30 >/dev/null 2>&1
bg "$D" -s i5 -- sleep 30 >/dev/null 2>&1
wait_until 5 eval "\"$D\" status i5 | grep -q 'held shared by 2'"
run "$D" break i5 --force
expect "break a shared lock: removes every hold" \
  'test "$rc" = 0 && grep -q '\''^broke "i5": removed 2 holds; the next holder gets EOWNERDEAD$'\'' "$T/out"'

# --- a holder that died: status tells, until the next one takes it
bg "$D" --lease 300 i6 -- sleep 30 >/dev/null 2>&1
dead=$last_pid
wait_held i6
orphan=$(pgrep -P "$dead")
kill -KILL "$dead" ${orphan:+"$orphan"}
wait_pid "$dead"
wait_until 3 free i6
run "$D" status i6
expect "status of a lapsed lock: free, names the holder whose lease ran out" \
  'test "$rc" = 1 && grep -q "^note: *the lease of $host:$dead (thread $dead) ran out before it unlocked; the next holder gets EOWNERDEAD$" "$T/out"'
run "$D" status i6 --json
check "status --json of a lapsed lock: next_gets_ownerdead, not broken" \
  grep -q '"next_gets_ownerdead":true,"broken":false,"unrecoverable":false}$' "$T/out"

finish
