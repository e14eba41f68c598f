#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# test_kinds.sh DISTLOCK HELPER: status, list and break know every kind of
# object, not only locks.  A leased semaphore with 2 permits held and 3
# waiting (status, --json, list; break --holder frees one holder's permit
# at once, break frees them all, and the incarnation stays); a counting
# semaphore (break sets it back to its initial value as a new incarnation:
# the process inside and its waiters get ENOLCK and dist_onlost); a condition's
# waiters; a name that is a lock and a condition at once (status shows
# both, --kind one), and a lock and a semaphore (break asks which); list
# with nothing held; a mistyped subcommand is not taken for a lock name.
# HELPER (tests/cli/kinds_helper.c) makes what the command cannot.
. "$(dirname "$0")/lib.sh"
H=${2:?usage: $0 DISTLOCK HELPER}
export DISTLOCK_PREFIX="clikinds$$:"
host=$(hostname)
valid_json() {
  command -v python3 >/dev/null 2>&1 || return 0
  python3 -c 'import json, sys; [json.loads(l) for l in open(sys.argv[1]) if l.strip()]' "$1"
}
# A waiter whose refresh comes late on a loaded machine drops out of
# Redis's view until its next one (a condition's is woken spuriously and
# registers again): each check that counts waiters polls.  `settles
# ARGS... -- TEST` runs distlock ARGS until TEST holds, 5 s at most.
settles() {
  local args=() t
  while [ "$1" != -- ]; do args+=("$1"); shift; done
  shift
  t="$*"
  poll_once() { run "$D" "${args[@]}"; eval "$t"; }
  wait_until 5 poll_once || run "$D" "${args[@]}"
}
cond_count() { rcli ZCARD "${DISTLOCK_PREFIX}{"$'\x01'"c$1}"; }
has_cond() { [ "$(cond_count "$1")" = "$2" ]; }

# --- a leased semaphore: 2 permits held, 3 waiting
bg "$D" -N 2 --kill-on-loss enc -- sleep 60 >/dev/null 2>"$T/h1.err"
h1=$last_pid
bg "$D" -N 2 enc -- sleep 60 >/dev/null 2>&1
h2=$last_pid
wait_sem enc :l 2
for _ in 1 2 3; do bg "$D" -N 2 enc -- true >/dev/null 2>&1; done
wait_sem enc :q 3
settles status enc -- 'grep -q "^waiting: *3$" "$T/out"'
expect "status of a leased semaphore: exit 0, named a semaphore, 2 of 2 permits held" \
  'test "$rc" = 0 && grep -q "^semaphore: *\"enc\"$" "$T/out" && grep -q "^state: *leased, 2 of 2 permits held, value 0$" "$T/out"'
expect "status: a line per holder: host:pid, its permits, held for, lease left, fence" \
  'test "$(grep -c "^holder:" "$T/out")" = 2 && grep -qE "^holder: +$host:$h1 \\(thread [0-9]+\\), 1 permit, held for [0-9.]+s, lease left [0-9.]+s, fence [0-9]+$" "$T/out"'
expect "status: 3 waiting, a line each" \
  'grep -q "^waiting: *3$" "$T/out" && test "$(grep -cE "^waiter: +$host:[0-9]+ \\(thread [0-9]+\\), waiting [0-9.]+s$" "$T/out")" = 3'
check "status: no lock of that name is shown" bash -c "! grep -q '^lock:' '$T/out'"
settles status enc --json -- 'grep -q "\"waiting\":3," "$T/out"'
expect "status --json: valid, kind sem, leased, value 0 of 2 permits, 3 waiting, its incarnation" \
  'valid_json "$T/out" && grep -q "^{\"name\":\"enc\",\"kind\":\"sem\",\"type\":\"leased\",\"value\":0,\"permits\":2,\"held\":2,\"holders\":\[{\"host\":\"$host\"," "$T/out" && grep -q "\"waiting\":3," "$T/out" && grep -qE ",\"incarnation\":[0-9]+,\"incarnation_age_ms\":[0-9]+}$" "$T/out"'
run "$D" status enc --kind lock
expect "status --kind lock: the lock of that name, free (exit 1)" \
  'test "$rc" = 1 && grep -q "^lock: *\"enc\"$" "$T/out" && ! grep -q "^semaphore:" "$T/out"'
settles list -- 'grep -qE "^enc .* 3 " "$T/out"'
expect "list: a KIND column; the semaphore with its permits, waiters and holder" \
  'test "$rc" = 0 && grep -qE "^NAME +KIND +STATE " "$T/out" && grep -qE "^enc +sem +2/2 permits +[0-9.]+s +3 +$host:[0-9]+ \\(thread [0-9]+\\) \\+1 more$" "$T/out"'
run "$D" list --json
expect "list --json: the semaphore, with its kind" 'valid_json "$T/out" && grep -q "\"name\":\"enc\",\"kind\":\"sem\"" "$T/out"'

# --- break --holder: one holder's permit, at once (its lease has 30 s left)
run "$D" status enc
inc0=$(sed -n 's/^made: .*(incarnation \([0-9]*\))$/\1/p' "$T/out")
check "status: the leased semaphore's incarnation" test -n "$inc0"
run "$D" break enc --force --holder "nohost:1"
expect "break --holder of nobody: exit 1, one line, nothing broken" \
  'test "$rc" = 1 && one_line_err && test "$(sem_count enc :l)" = 2'
t=$(now)
run "$D" break enc --force --holder "$host:$h1"
expect "break --holder HOST:PID: exit 0, says whose hold went and that the waiters were woken" \
  'test "$rc" = 0 && grep -qE "^broke semaphore \"enc\": removed the hold of $host:$h1 \(thread [0-9]+\) \(1 permit\); woke its waiters \(3\)" "$T/out"'
wait_sem enc :q 0
dt=$(elapsed "$t")
expect "the waiters took the freed permit one after the other at once ($dt s, lease 30 s)" 'between "$dt" 0 5'
wait_pid "$h1" 10
expect "the holder whose permit was broken is told, and --kill-on-loss ends its command (143)" \
  'test "$rc" = 143 && grep -q "lost the permit of semaphore \"enc\"" "$T/h1.err"'
run "$D" status enc
check "status after: 1 of 2 permits held" grep -q "^state: *leased, 1 of 2 permits held, value 1$" "$T/out"
check "the leased semaphore keeps its incarnation (the holder whose permit went is the one told)" \
  grep -q "(incarnation $inc0)$" "$T/out"
run "$D" break enc --force
expect "break without --holder: every hold" \
  'test "$rc" = 0 && grep -qE "^broke semaphore \"enc\": removed the hold of $host:$h2 \(thread [0-9]+\) \(1 permit\)" "$T/out"'
run "$D" break enc --force
expect "break with no holder left: exit 1, one line" 'test "$rc" = 1 && one_line_err && test -z "$out"'
kill -TERM "$h2"; wait_pid "$h2"

# --- a counting semaphore: break sets it back to its initial value, as a
# new incarnation: everyone that used it (inside, or waiting) is told, as
# after a loss in Redis (ENOLCK, dist_onlost); a newcomer takes a permit
run "$H" semtake cnt 2 1
expect_rc 0 "a permit of counting semaphore cnt taken (and never given back)"
bg "$H" semhold cnt 2 "$T/cnt.go" >"$T/cnt.hold" 2>&1
c0=$last_pid
wait_until 10 test -e "$T/cnt.go.in" || nok "10 s without the holder inside"
bg "$H" semwait cnt 2 >/dev/null 2>"$T/c1.err"
c1=$last_pid
bg "$H" semwait cnt 2 >/dev/null 2>"$T/c2.err"
c2=$last_pid
wait_sem cnt :q 2
settles status cnt -- 'grep -q "^waiting: *2$" "$T/out"'
expect "status of a counting semaphore: its value, its incarnation, 2 waiting, exit 0 (waited on)" \
  'test "$rc" = 0 && grep -q "^semaphore: *\"cnt\"$" "$T/out" && grep -q "^state: *counting, value 0$" "$T/out" && grep -qE "^made: +[0-9.]+[a-z]+ ago \(incarnation [0-9]+\)$" "$T/out" && grep -q "^waiting: *2$" "$T/out"'
inc0=$(sed -n 's/^made: .*(incarnation \([0-9]*\))$/\1/p' "$T/out")
settles list cnt -- 'grep -qE "^cnt .* 2 " "$T/out"'
check "list: the counting semaphore's value" grep -qE '^cnt +sem +value 0 +- +2 +-$' "$T/out"
run "$D" break cnt --force --holder "$host:1"
expect "--holder on a counting semaphore: exit 1, one line" 'test "$rc" = 1 && one_line_err'
run "$D" break cnt --force
expect "break a counting semaphore: its value back to 2, as a new incarnation; its waiters and users told" \
  'test "$rc" = 0 && grep -qE "^reset semaphore \"cnt\": value 0 -> 2 \(the value it was created with\), as a new incarnation \([0-9]+\): every process that used it, its 2 waiters too, gets ENOLCK until it initializes it again$" "$T/out"'
wait_pid "$c1" 10
r1=$rc
wait_pid "$c2" 10
expect "both waiters are told at once: ENOLCK, the semaphore reset ($r1, $rc)" \
  'test "$r1" = 2 -a "$rc" = 2 && grep -q "reset by distlock break" "$T/c1.err" && grep -q "reset by distlock break" "$T/c2.err"'
touch "$T/cnt.go"
wait_pid "$c0" 10
expect "the process inside is told: its post says ENOLCK (adds nothing), its dist_onlost function is called once with the name" \
  'test "$rc" = 0 && grep -qx "post: ENOLCK" "$T/cnt.hold" && grep -qx "onlost: 1 cnt" "$T/cnt.hold"'
run "$D" status cnt
expect "status after the reset: value 2, another incarnation" \
  'grep -q "^state: *counting, value 2$" "$T/out" && grep -qE "^made: .*\(incarnation [0-9]+\)$" "$T/out" && ! grep -q "(incarnation $inc0)" "$T/out"'
run "$H" semtake cnt 2 2
expect_rc 0 "a process that never used the old incarnation takes both permits of the reset value"
run "$D" break cnt --force
run "$D" break cnt --force
expect "a counting semaphore at its initial value: nothing to reset, exit 1" \
  'test "$rc" = 1 && one_line_err && grep -q "initial value (2)" "$T/err"'

# --- a condition's waiters; the name is its mutex's too
bg "$H" condwait jobs 60 "$T/signalled"
cw1=$last_pid
bg "$H" condwait jobs 60 "$T/signalled"
cw2=$last_pid
wait_until 5 has_cond jobs 2 || nok "5 s without 2 waiters on condition jobs"
settles status jobs -- 'test "$(grep -c "^waiter:" "$T/out")" = 2'
expect "status of a name that is a lock and a condition: both, exit 0 (waited on)" \
  'test "$rc" = 0 && grep -q "^lock: *\"jobs\"$" "$T/out" && grep -q "^condition: *\"jobs\"$" "$T/out"'
expect "the condition's 2 waiters, each named by its process's token" \
  'test "$(grep -cE "^waiter: +process [0-9a-f]{8}, waiting [0-9.]+s$" "$T/out")" = 2'
settles status jobs --kind cond -- 'grep -q "^waiting: *2$" "$T/out"'
expect "status --kind cond: the condition alone" \
  'grep -q "^condition:" "$T/out" && ! grep -q "^lock:" "$T/out" && grep -q "^waiting: *2$" "$T/out"'
settles status jobs --json -- 'grep -q "\"waiting\":2," "$T/out"'
expect "status --json: one object per kind, each valid" \
  'valid_json "$T/out" && test "$(wc -l <"$T/out")" = 2 && grep -q "^{\"name\":\"jobs\",\"kind\":\"cond\",\"waiting\":2,\"waiters\":\[{\"token\":\"" "$T/out"'
settles list -- 'grep -qE "^jobs +cond +waited on +- +2 +-$" "$T/out"'
check "list: the condition, waited on by 2" grep -qE '^jobs +cond +waited on +- +2 +-$' "$T/out"
run "$D" list --kind lock
check "list --kind lock: not the condition" bash -c "! grep -q ' cond ' '$T/out'"
expect_usage "break --kind cond: a condition holds nothing" break jobs --force --kind cond
: >"$T/signalled"
run "$H" broadcast jobs
wait_pid "$cw1" 10
r1=$rc
wait_pid "$cw2" 10
expect "the broadcast woke both waiters ($r1, $rc)" 'test "$r1" = 0 -a "$rc" = 0'
wait_until 5 has_cond jobs 0
run "$D" status jobs --kind cond
expect "after a broadcast: no waiter, exit 1" 'test "$rc" = 1 && grep -q "^waiting: *0$" "$T/out"'

# --- a lock and a semaphore of one name: break asks which
bg "$D" both -- sleep 60 >/dev/null 2>&1
wait_held both
bg "$D" -N 1 both -- sleep 60 >/dev/null 2>&1
wait_sem both :l 1
run "$D" status both
check "status: the lock and the semaphore" \
  bash -c "grep -q '^lock: *\"both\"$' '$T/out' && grep -q '^semaphore: *\"both\"$' '$T/out'"
expect_usage "break of a name that is a lock and a semaphore: which?" break both --force
check "the message says how to choose" grep -q -- "--kind lock or --kind sem" "$T/err"
run "$D" break both --force --kind lock
expect "break --kind lock breaks the lock alone" \
  'test "$rc" = 0 && grep -q "^broke \"both\": removed the hold of" "$T/out" && test "$(sem_count both :l)" = 1'

# --- nothing held: list says so
run env DISTLOCK_PREFIX="empty$$:" "$D" list
expect "list with nothing held: the header and a line saying so" \
  'test "$rc" = 0 && test "$(printf "%s\n" "$out" | wc -l)" = 2 && grep -q "^NAME " "$T/out" && grep -q "^(nothing held or waited on)$" "$T/out"'
run env DISTLOCK_PREFIX="empty$$:" "$D" list --json
expect "list --json with nothing held: []" 'test "$rc" = 0 && test "$out" = "[]"'

# --- a mistyped subcommand is not a lock name
for typo in "stauts:status" "lsit:list" "braek:break" "Status:status" "tpo:top" "metric:metrics"; do
  word=${typo%%:*}
  expect_usage "'$word' is a typo of '${typo#*:}'" "$word" x
  check "... and says so" grep -q "unknown command '$word'; did you mean '${typo#*:}'?" "$T/err"
done
run "$D" stauts -- echo ran
expect "with --, the word is a lock's name" 'test "$rc" = 0 && test "$out" = ran'
run "$D" -x stauts echo ran
expect "after a run option too" 'test "$rc" = 0 && test "$out" = ran'
run "$D" tip echo ran
expect "'tip' is no typo of 'top' (three letters: only a swap)" 'test "$rc" = 0 && test "$out" = ran'

# --- redlock://: a condition's waiter is read (the server that shows the
# most speaks for all); a semaphore is refused there, and break says so
dl_redis_start "$T" || { nok "no second redis-server"; finish; exit 1; }
p2=$DL_REDIS_PORT
dl_redis_start "$T" || { nok "no third redis-server"; finish; exit 1; }
p3=$DL_REDIS_PORT
RL="redlock://127.0.0.1:$REDIS_PORT,127.0.0.1:$p2,127.0.0.1:$p3"
bg env DISTLOCK_URL="$RL" "$H" condwait rjobs 60 "$T/rsignalled"
rcw=$last_pid
settles --url "$RL" status rjobs --kind cond -- 'grep -q "^waiting: *1$" "$T/out"'
expect "redlock: status of a condition with a waiter, exit 0" \
  'test "$rc" = 0 && grep -q "^waiting: *1$" "$T/out" && grep -qE "^waiter: +process [0-9a-f]{8}, waiting " "$T/out"'
settles --url "$RL" list -- 'grep -qE "^rjobs +cond +waited on +- +1 +-$" "$T/out"'
check "redlock: list shows it" grep -qE '^rjobs +cond +waited on +- +1 +-$' "$T/out"
run "$D" --url "$RL" break x --force --kind sem
expect "redlock: break of a semaphore is a configuration error (78), one line" \
  'test "$rc" = 78 && one_line_err && [[ "$err" == *redlock* ]]'
: >"$T/rsignalled"
run env DISTLOCK_URL="$RL" "$H" broadcast rjobs
wait_pid "$rcw" 10
expect_rc 0 "redlock: the broadcast woke the waiter"

finish
