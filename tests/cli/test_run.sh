#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# test_run.sh DISTLOCK: distlock NAME -- COMMAND: exit codes, every option,
# exclusive vs shared, waiting, the lease, losing the hold, EOWNERDEAD.
. "$(dirname "$0")/lib.sh"

# --- the command's status passes through; the lock is released after
run "$D" r1 -- true
expect_rc 0 "true -> 0"
run "$D" r1 -- false
expect_rc 1 "false -> 1"
run "$D" r1 -- sh -c 'exit 7'
expect_rc 7 "exit 7 -> 7"
run "$D" r1 -c 'exit 5'
expect_rc 5 "-c 'exit 5' -> 5"
run "$D" r1 --command 'echo a | tr a b'
check "--command runs a shell pipeline" test "$rc" = 0 -a "$out" = b
run "$D" r1 -- printf '%s|' a 'b c' '' '$HOME'
expect "arguments reach the command verbatim" \
  'test "$out" = '\''a|b c||$HOME|'\'''
run "$D" r1 printf '%s|' x -y
check "the command may follow NAME without -- (as flock)" test "$rc" = 0 -a "$out" = 'x|-y|'
run "$D" -n r1 -w 5 -- true
expect_rc 0 "options after NAME too"
out=$(echo data | "$D" r1 -- cat)
check "stdin reaches the command" test "$out" = data
run "$D" r1 -c 'kill -TERM $$'
expect_rc 143 "command killed by SIGTERM -> 128+15"
run "$D" r1 -c 'kill -KILL $$'
expect_rc 137 "command killed by SIGKILL -> 128+9"
check "lock free after a killed command" free r1
run "$D" r1 -- /nonexistent/command
expect "command not found -> 127, one line" \
  'test "$rc" = 127 && one_line_err'
check "not found: the message says so" grep -q 'command not found' "$T/err"
run "$D" r1 -- no-such-command-anywhere
expect_rc 127 "command not in PATH -> 127"
printf 'echo hi\n' >"$T/noexec"
chmod 644 "$T/noexec"
run "$D" r1 -- "$T/noexec"
expect "not executable -> 126, one line" \
  'test "$rc" = 126 && one_line_err'
run "$D" r1 -c 'no-such-command-anywhere'
expect_rc 127 "-c with a missing command -> the shell's 127"
check "lock free after all of these" free r1

# --- -n, -w, -E while an exclusive holder runs
bg "$D" r2 -- sleep 30 >/dev/null 2>&1
holder=$last_pid
wait_held r2
run "$D" -n r2 -- echo ran
check "-n on a held lock -> 1, silent, not run" test "$rc" = 1 -a -z "$out" -a -z "$err"
run "$D" --nonblock -E 42 r2 -- true
expect_rc 42 "-E 42 sets the conflict code"
run "$D" -E 0 -n r2 -- true
check "-E 0 is allowed" test "$rc" = 0 -a -z "$out"
t=$(now)
run "$D" -w 0 r2 -- true
w0=$(elapsed "$t")
check "-w 0 is -n (fails at once)" test "$rc" = 1
check "-w 0 took under 1s ($w0)" between "$w0" 0 1
t=$(now)
run "$D" -w 0.4 -E 3 r2 -- true
wt=$(elapsed "$t")
expect_rc 3 "-w 0.4 times out with the -E code"
check "-w 0.4 waited 0.4s to 2s ($wt)" between "$wt" 0.4 2
run "$D" -v -n r2 -- true
expect "-v says why -n failed" \
  'test "$rc" = 1 && one_line_err'
run "$D" -v --timeout 0.2 r2 -- true
check "-v says it timed out" grep -q 'timed out' "$T/err"
run "$D" -s -n r2 -- true
expect_rc 1 "-s -n on an exclusive hold -> 1"
kill -TERM "$holder"
wait "$holder" 2>/dev/null
wait_until 5 free r2
check "the holder's lock is free after it was stopped" free r2

# --- -w gets the lock when it frees in time; a blocking wait too
bg "$D" r3 -- sleep 0.6
wait_held r3
t=$(now)
run "$D" -w 10 r3 -- echo got
wt=$(elapsed "$t")
check "-w 10 gets the lock when the holder ends" test "$rc" = 0 -a "$out" = got
check "... after the holder ended, not at once ($wt)" between "$wt" 0.2 5
bg "$D" r3 -c "echo first >>$T/order; sleep 0.5; echo first-end >>$T/order"
wait_held r3
"$D" r3 -c "echo second >>$T/order"
check "a blocking wait runs after the holder ended" \
  test "$(tr '\n' ' ' <"$T/order")" = "first first-end second "

# --- exclusive: never two at once
: >"$T/overlap"
for i in 1 2 3 4; do
  bg "$D" r4 -c "mkdir $T/inside 2>/dev/null || echo overlap >>$T/overlap; sleep 0.1; rmdir $T/inside; echo $i >>$T/ran"
done
for p in "${bg_pids[@]: -4}"; do wait "$p"; done
check "4 exclusive runs: all ran" test "$(wc -l <"$T/ran")" -eq 4
check "4 exclusive runs: never two inside at once" test ! -s "$T/overlap"

# --- shared: together; exclusive and shared exclude each other
barrier() {  # each shared holder marks itself, then waits for the other
  echo "touch $T/sh.\$\$; n=0; while [ \$(ls $T | grep -c '^sh\.') -lt 2 ] && [ \$n -lt 60 ]; do sleep 0.05; n=\$((n+1)); done; [ \$n -lt 60 ]"
}
bg "$D" -s r5 -c "$(barrier)"
a=$last_pid
bg "$D" --shared r5 -c "$(barrier)"
b=$last_pid
wait "$a"; ra=$?
wait "$b"; rb=$?
check "two -s holders run at the same time" test "$ra" = 0 -a "$rb" = 0
bg "$D" -s r5 -- sleep 30
reader=$last_pid
wait_held r5
run "$D" -s -n r5 -- true
expect_rc 0 "-s -n while shared held -> runs"
run "$D" -x -n r5 -- true
expect_rc 1 "-x -n while shared held -> 1"
bg "$D" -x r5 -- echo writer >"$T/writer.out"
writer=$last_pid
wait_waiting r5 1
run "$D" -s -n r5 -- true
expect_rc 1 "a waiting writer holds back new readers (-s -n -> 1)"
kill -TERM "$reader"
wait "$writer"
check "the writer ran once the reader was gone" test "$(cat "$T/writer.out")" = writer

# --- first come, first served (also with --fair)
for fair in "" --fair; do
  : >"$T/fifo"
  rm -f "$T/go"
  # The holder keeps the lock until all three wait (not for a fixed time:
  # on a loaded machine starting a waiter can take longer than that).
  bg "$D" $fair r6 -c "until [ -e '$T/go' ]; do sleep 0.05; done"
  wait_held r6
  for x in A B C; do
    bg "$D" $fair r6 -c "echo $x >>$T/fifo"
    n=$(( $(printf ABC | sed "s/$x.*//" | wc -c) + 1 ))
    wait_waiting r6 "$n"
  done
  touch "$T/go"
  for p in "${bg_pids[@]: -4}"; do wait "$p"; done
  check "waiters get the lock in arrival order ${fair:-(default)}" \
    test "$(tr -d '\n' <"$T/fifo")" = ABC
done

# --- the fence reaches the command, and grows
run "$D" r7 -c 'echo "$DISTLOCK_FENCE"'
f1=$out
run "$D" r7 -c 'echo "$DISTLOCK_FENCE"'
f2=$out
check "DISTLOCK_FENCE is set and grows ($f1 < $f2)" \
  bash -c "[[ '$f1' =~ ^[0-9]+$ && '$f2' =~ ^[0-9]+$ ]] && [ '$f1' -lt '$f2' ]"
bg "$D" r7 -c "echo \$DISTLOCK_FENCE >$T/fence; exec sleep 30"
fholder=$last_pid
wait_until 5 test -s "$T/fence"
run "$D" status r7 --json
check "the fence status shows is the command's" grep -q "\"fence\":$(cat "$T/fence")," "$T/out"
kill -TERM "$fholder"

# --- what the command's environment holds
run env -u DISTLOCK_LEASE_MS -u DISTLOCK_LOG "$D" --lease 500 --url "$DISTLOCK_URL" r8 \
  -c 'echo "lease=${DISTLOCK_LEASE_MS-unset} log=${DISTLOCK_LOG-unset} url=${DISTLOCK_URL-unset}"'
check "--lease and the log level stay distlock's; --url is passed on" \
  test "$out" = "lease=unset log=unset url=$DISTLOCK_URL"
run env DISTLOCK_LEASE_MS=4000 "$D" --lease 500 r8 -c 'echo "lease=$DISTLOCK_LEASE_MS"'
check "the command gets the DISTLOCK_LEASE_MS distlock was started with" test "$out" = lease=4000

# --- --lease: a short lease renewed while the command runs
bg "$D" --lease 300 r9 -- sleep 1.2 >"$T/lease.out" 2>"$T/lease.err"
lholder=$last_pid
wait_held r9
sleep 0.5
run "$D" status r9 --json
check "--lease 300: the hold's lease is 300 ms" grep -q '"lease_ms":300,' "$T/out"
left=$(sed -n 's/.*"lease_left_ms":\([0-9-]*\).*/\1/p' "$T/out")
check "--lease 300: lease left <= 300 ms ($left)" test "${left:-999}" -le 300
wait "$lholder"
lrc=$?
check "--lease 300: a 1.2 s command keeps its hold (renewed), status 0" \
  test "$lrc" = 0 -a ! -s "$T/lease.err"

# --- losing the hold while the command runs
bg "$D" --lease 300 r10 -- sleep 1.5 >/dev/null 2>"$T/lost.err"
lost=$last_pid
wait_held r10
t=$(now)
rcli DEL 'distlock:{r10}' >/dev/null
wait_until 3 grep -q 'lost the lock' "$T/lost.err"
lt=$(elapsed "$t")
check "a deleted hold is reported at once ($lt s)" between "$lt" 0 1
wait "$lost"
lrc=$?
check "... in one line, and the exit status stays the command's" \
  test "$lrc" = 0 -a "$(wc -l <"$T/lost.err")" -eq 1
bg "$D" --lease 300 --kill-on-loss r10 -c 'trap "echo TERM; kill \$!; exit 9" TERM; sleep 20 & wait' \
  >"$T/kill.out" 2>"$T/kill.err"
lost=$last_pid
wait_held r10
t=$(now)
rcli DEL 'distlock:{r10}' >/dev/null
wait "$lost"
lrc=$?
lt=$(elapsed "$t")
check "--kill-on-loss: the command gets SIGTERM ($lt s), exit status its own" \
  test "$lrc" = 9 -a "$(cat "$T/kill.out")" = TERM
check "--kill-on-loss: the message says so" grep -q 'sending the command SIGTERM' "$T/kill.err"

# --- a holder that dies: the lock frees within the lease, the next is warned
bg "$D" --lease 300 r11 -- sleep 30
dead=$last_pid
wait_held r11
orphan=$(pgrep -P "$dead")
kill -KILL "$dead"
[ -n "$orphan" ] && kill -KILL "$orphan"
t=$(now)
run "$D" r11 -- echo ran
dt=$(elapsed "$t")
expect "after its holder died, the lock comes within the lease ($dt s)" \
  'test "$rc" = 0 -a "$out" = ran && between "$dt" 0 2'
expect "... with one warning line about the lapse" \
  'one_line_err && grep -q '\''warning: "r11": the previous holder'\'' "$T/err"'
run "$D" r11 -- true
check "the one after gets no warning" test "$rc" = 0 -a -z "$err"

# --- -v tells the story
run "$D" -v r12 -- true
expect "-v: got (with fence), running, exit status, released" \
  'grep -q '\''got "r12" (exclusive, fence'\'' "$T/err" && grep -q '\''running the command'\'' "$T/err" && grep -q '\''exited with status 0'\'' "$T/err" && grep -q '\''released "r12"'\'' "$T/err"'

finish
