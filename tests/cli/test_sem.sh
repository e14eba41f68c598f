#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# test_sem.sh DISTLOCK - distlock -N COUNT NAME -- COMMAND: one of COUNT
# leased permits of semaphore NAME held while COMMAND runs.  At most COUNT
# commands at once (and more without it: the check can fail); -n, -w and
# -E on a full semaphore; the command's status passes through; a holder
# killed with SIGKILL gives its permit back within its lease (not at
# once); a permit lost in Redis (FLUSHALL) is noticed and --kill-on-loss
# ends the command; a semaphore and a lock of one name are apart; bad -N
# values and options that do not go with it are usage errors.
. "$(dirname "$0")/lib.sh"
export DISTLOCK_PREFIX="clisem$$:"

# --- at most COUNT at once
mkdir -p "$T/in"
SECTION='f="$0/in/$$"; : >"$f"; sleep 0.3; ls "$0/in" | wc -l >>"$0/max"; rm -f "$f"'
pids=()
for _ in 1 2 3 4 5 6; do
  "$D" -N 2 pool -- sh -c "$SECTION" "$T" >/dev/null 2>&1 &
  pids+=($!)
done
bad=0
for p in "${pids[@]}"; do wait "$p" || bad=$((bad + 1)); done
max=$(sort -n "$T/max" | tail -1)
ran=$(wc -l <"$T/max")
expect "6 commands under -N 2: all ran ($ran), at most $max inside at once, $bad failed" \
  '[ "$bad" = 0 ] && [ "$ran" = 6 ] && [ "$max" -le 2 ]'
rm -f "$T/max"
pids=()
for _ in 1 2 3 4 5 6; do
  sh -c "$SECTION" "$T" &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p"; done
max=$(sort -n "$T/max" | tail -1)
expect "the same 6 without distlock: $max inside at once (the check can fail)" '[ "$max" -gt 2 ]'

# --- a full semaphore: -n, -w, -E; the status passes through
bg "$D" -N 1 full -- sleep 30
wait_until 5 eval '! "$D" -N 1 -n full -- true 2>/dev/null'
run "$D" -v -N 1 -n -E 7 full -- echo no
expect_rc 7 "-n on a full semaphore: -E's code"
expect "and says no permit is free" '[[ "$err" == *"no permit"* ]] && [ -z "$out" ]'
t0=$(now)
run "$D" -N 1 -w 0.5 full -- echo no
expect_rc 1 "-w 0.5 on a full semaphore: time-out, 1"
expect "not before 0.5 s ($(elapsed "$t0") s)" 'between "$(elapsed "$t0")" 0.5 10'
run "$D" -N 2 other -- sh -c 'exit 5'
expect_rc 5 "the command's status passes through"
kill -TERM "$last_pid"; wait "$last_pid" 2>/dev/null

# --- a holder killed with SIGKILL: its permit comes back within its lease
"$D" -N 1 --lease 1500 dead -- sleep 60 >/dev/null 2>&1 &
dpid=$!
bg_pids+=($dpid)
wait_until 5 eval '! "$D" -N 1 -n dead -- true 2>/dev/null'
child=$(pgrep -P "$dpid" sleep)
kill -KILL "$dpid"
[ -n "$child" ] && kill -KILL "$child" 2>/dev/null
t0=$(now)
run "$D" -N 1 -n dead -- true
expect_rc 1 "right after the kill the permit is still leased (-n fails)"
run "$D" -N 1 -w 10 dead -- true
back=$(elapsed "$t0")
expect_rc 0 "the killed holder's permit came back"
# The lease (1.5 s) and a third of the waiter's registration life between
# its asks, with room for a loaded machine.
expect "within its lease: ${back} s after the kill (lease 1.5 s)" 'between "$back" 0 4.5'

# --- a permit lost in Redis: noticed, --kill-on-loss ends the command
run "$D" -N 1 --lease 1500 --kill-on-loss lost -- sh -c 'redis-cli -h 127.0.0.1 -p '"$REDIS_PORT"' FLUSHALL >/dev/null; sleep 20; exit 0'
expect_rc 143 "a permit lost in Redis: --kill-on-loss sent the command SIGTERM (143)"
expect "and said it lost it" '[[ "$err" == *"lost"* ]]'

# --- names apart from locks
bg "$D" apart -- sleep 30
wait_held apart
run "$D" -N 1 -n apart -- echo sem
expect "a semaphore named as a held lock is another object" '[ "$rc" = 0 ] && [ "$out" = sem ]'
kill -TERM "$last_pid"; wait "$last_pid" 2>/dev/null

# --- usage
expect_usage "-N 0" -N 0 x -- true
expect_usage "-N not a number" -N two x -- true
expect_usage "-N above INT_MAX" -N 2147483648 x -- true
expect_usage "-N with -s" -N 2 -s x -- true
expect_usage "-N with --fair" -N 2 --fair x -- true
run "$D" -N 3 kind -- true
run "$D" -N 3 kind -- true
expect_rc 0 "a second -N with the same count"

# --- redlock:// cannot keep one count: a configuration error, said
run env DISTLOCK_URL="redlock://127.0.0.1:$REDIS_PORT,127.0.0.1:1,127.0.0.1:2" "$D" -N 2 x -- echo no
expect_rc 78 "-N with redlock://: 78"
expect "saying why, running nothing" '[[ "$err" == *redlock* ]] && [ -z "$out" ]'


finish
