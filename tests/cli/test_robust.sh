#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# test_robust.sh DISTLOCK HELPER: a lock left unrecoverable (a robust
# holder's unlock after EOWNERDEAD without dist_mutex_consistent) as the
# command shows it: status says "unrecoverable" and how to clear it, with
# no holder; --json and list say so; a lock call (exclusive or shared: a
# read-write lock shares the name's state) is refused with the same hint
# and leaves the state as it was; break clears it; so does a destroy by a
# program that was told.  On redlock:// too (the servers' views merged).
# HELPER (tests/cli/kinds_helper.c) makes the state.
. "$(dirname "$0")/lib.sh"
H=${2:?usage: $0 DISTLOCK HELPER}
export DISTLOCK_PREFIX="clirobust$$:"
valid_json() {
  command -v python3 >/dev/null 2>&1 || return 0
  python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$1"
}
# The holder that dies frees the lock within its lease: a short one.
unrecoverable() { DISTLOCK_LEASE_MS=300 "$H" unrecoverable "$@" 2>/dev/null; }

# --- the state, as status, --json and list show it
unrecoverable rb1
check "the helper left rb1 unrecoverable" test $? = 0
run "$D" status rb1
expect "status: exit 0 (not free), 'state: unrecoverable for ...'" \
  'test "$rc" = 0 && grep -qE "^state: +unrecoverable for [0-9.]+s: a robust holder unlocked it after EOWNERDEAD without dist_mutex_consistent; every lock call on it, in every process, gets ENOTRECOVERABLE$" "$T/out"'
check "status: a hint says break --force clears it, and a destroy by a process told so" \
  grep -qE '^hint: +`distlock break rb1 --force` clears it .*; so does a process that was told ENOTRECOVERABLE destroying its mutex and initializing it again$' "$T/out"
expect "status: no holder line, nothing waiting" \
  '! grep -q "^holder:" "$T/out" && grep -q "^waiting: *0$" "$T/out"'
run "$D" status rb1 --json
expect "status --json: valid; held false, mode unrecoverable, no holders, unrecoverable true" \
  'valid_json "$T/out" && grep -q "\"held\":false,\"mode\":\"unrecoverable\",\"holders\":\[\]" "$T/out" && grep -qE "\"unrecoverable\":true,\"unrecoverable_ms\":[0-9]+}$" "$T/out"'
run "$D" list
check "list: STATE unrecoverable, for how long, nobody as the holder" \
  grep -qE '^rb1 +lock +unrecoverable +[0-9.]+s +0 +-$' "$T/out"
run "$D" list --json
expect "list --json: valid, the lock unrecoverable" \
  'valid_json "$T/out" && grep -q "\"mode\":\"unrecoverable\"" "$T/out"'

# --- refused, and left so: the command's refusal clears nothing
run "$D" rb1 -- echo ran
expect "a lock call: exit 70, one line that names the state and the break that clears it" \
  'test "$rc" = 70 -a -z "$out" && one_line_err && [[ "$err" == *"is unrecoverable"* ]] && [[ "$err" == *"distlock break \"rb1\" --force"* ]]'
run "$D" -s rb1 -- echo ran
expect "a shared lock call (read-write lock: the same state): refused too" \
  'test "$rc" = 70 -a -z "$out" && [[ "$err" == *"is unrecoverable"* ]]'
run "$D" status rb1
check "still unrecoverable after the refused calls (their exit cleared nothing)" \
  grep -qE '^state: +unrecoverable for ' "$T/out"

# --- break clears it; the next holder is told of the break
run "$D" break rb1 --force
expect "break: exit 0, says it cleared the unrecoverable state" \
  'test "$rc" = 0 && grep -q "^broke \"rb1\": cleared its unrecoverable state; the next holder gets EOWNERDEAD$" "$T/out"'
run "$D" status rb1
expect "status after break: free (exit 1), broken" \
  'test "$rc" = 1 && grep -q "^state: *free$" "$T/out" && grep -q "^note: *broken by distlock break" "$T/out"'
run "$D" rb1 -- echo ran
expect "a lock call after break: runs the command, warns of EOWNERDEAD" \
  'test "$rc" = 0 -a "$out" = ran && [[ "$err" == *"lease ran out"* ]]'

# --- a destroy in a program that was told clears it too
unrecoverable rb2
"$H" recover rb2 2>"$T/recover.err"
check "the helper was told ENOTRECOVERABLE and destroyed its mutex" test $? = 0
run "$D" status rb2
expect "status after the destroy: free (exit 1), no note" \
  'test "$rc" = 1 && grep -q "^state: *free$" "$T/out" && ! grep -q "^note:" "$T/out"'
run "$D" rb2 -- echo ran
expect "a lock call after it: the command runs, no warning" \
  'test "$rc" = 0 -a "$out" = ran -a -z "$err"'

# --- redlock://: each server's view shows it; the majority's says so
dl_redis_start "$T" || { nok "no second redis-server"; finish; exit 1; }
p2=$DL_REDIS_PORT
dl_redis_start "$T" || { nok "no third redis-server"; finish; exit 1; }
p3=$DL_REDIS_PORT
RL="redlock://127.0.0.1:$REDIS_PORT,127.0.0.1:$p2,127.0.0.1:$p3"
DISTLOCK_URL="$RL" unrecoverable rb3
check "redlock: the helper left rb3 unrecoverable" test $? = 0
run "$D" --url "$RL" status rb3
# (the unlock marks the servers where its hold was: a majority at least)
expect "redlock: status says unrecoverable, a majority agrees, no holder line" \
  'test "$rc" = 0 && grep -qE "^state: +unrecoverable for " "$T/out" && grep -qE "^servers: *[23] of 3 agree" "$T/out" && ! grep -q "^holder:" "$T/out"'
expect "redlock: a server line that shows it says unrecoverable" \
  '! grep -q "^server:" "$T/out" || grep -qE "^server: +127.0.0.1:[0-9]+: unrecoverable$" "$T/out"'
run "$D" --url "$RL" status rb3 --json
expect "redlock: --json, each server's mode" \
  'valid_json "$T/out" && grep -q "\"mode\":\"unrecoverable\",\"holders\":\[\],\"agrees\"" "$T/out"'
run "$D" --url "$RL" list
check "redlock: list says unrecoverable" grep -qE '^rb3 +lock +unrecoverable( \(3/3\))? ' "$T/out"
run "$D" --url "$RL" break rb3 --force
check "redlock: break clears it" test "$rc" = 0
run "$D" --url "$RL" status rb3
expect_rc 1 "redlock: free after break"

finish
