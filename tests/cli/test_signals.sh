#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# test_signals.sh DISTLOCK: signals sent to distlock reach the command and
# the lock is released when it ends; a signal while waiting ends distlock
# and takes it out of the queue; a terminal's Ctrl-C is not delivered twice;
# the waiting line on a terminal.
. "$(dirname "$0")/lib.sh"

# A command that writes its parent's pid (distlock's) when ready, reports
# the signals it gets, and exits with a status of its own per signal.
# Perl is in every Debian (perl-base is essential); sh traps cannot show
# SIGINT in a background job, where the shell ignores it.
cat >"$T/child" <<'EOF'
#!/usr/bin/perl
# child READYFILE: $SIG{X} -> prints "got X" and exits with a code per X;
# SIGINT is only counted, and the count printed on SIGTERM.
$| = 1;
my $ints = 0;
my %code = (TERM => 3, HUP => 4, USR1 => 5, QUIT => 6);
$SIG{INT} = sub { $ints++ };
for my $s (keys %code) {
  $SIG{$s} = sub { print "got $s ints=$ints\n"; exit $code{$s} };
}
open(my $f, '>', "$ARGV[0].tmp") or die; print $f getppid(); close $f;
rename("$ARGV[0].tmp", $ARGV[0]);
sleep 1 while 1;
EOF
chmod +x "$T/child"

# A background job of a script starts with SIGINT and SIGQUIT ignored (bash
# does that without job control); `env --default-signal` undoes it, so that
# distlock starts as it would from a terminal.  env execs: $! is distlock.
dflt=()
if env --default-signal=INT,QUIT true 2>/dev/null; then
  # shellcheck disable=SC2054  # one argument: a comma-separated list
  dflt=(env --default-signal=INT,QUIT)
fi

# start_child NAME TAG [distlock options]: distlock NAME -- child, ready.
start_child() {
  local name=$1 tag=$2
  shift 2
  rm -f "$T/$tag.ready"
  bg "${dflt[@]}" "$D" "$@" "$name" -- "$T/child" "$T/$tag.ready" >"$T/$tag.out" 2>"$T/$tag.err"
  wait_until 5 test -s "$T/$tag.ready" || nok "child $tag never started"
}

# --- each signal reaches the command; the lock is free when it ended
sigs="TERM HUP USR1"
[ ${#dflt[@]} -gt 0 ] && sigs="$sigs QUIT"
for sig in $sigs; do
  start_child s1 "$sig"
  pid=$last_pid
  check "distlock is the command's parent ($sig)" test "$(cat "$T/$sig.ready")" = "$pid"
  kill -s "$sig" "$pid"
  wait_pid "$pid"
  code=$(grep -o 'got [A-Z0-9]*' "$T/$sig.out")
  check "SIG$sig is passed on to the command, whose status distlock returns ($rc)" \
    test "$code" = "got $sig" -a "$rc" = "$(case $sig in TERM) echo 3;; HUP) echo 4;; USR1) echo 5;; QUIT) echo 6;; esac)"
  check "the lock is free at once after SIG$sig" free s1
done

# --- a signal ignored when distlock started (here SIGINT, as bash starts
# background jobs) stays ignored: distlock neither dies nor passes it on
rm -f "$T/ign.ready"
bg "$D" s2 -- "$T/child" "$T/ign.ready" >"$T/ign.out" 2>&1
pid=$last_pid
wait_until 5 test -s "$T/ign.ready"
kill -INT "$pid"
sleep 0.3
check "SIGINT ignored at start: distlock keeps running" kill -0 "$pid"
kill -TERM "$pid"
wait_pid "$pid"
check "... and the command never saw it (ints=0)" grep -q 'got TERM ints=0' "$T/ign.out"
# ... and with SIGINT at its default, it is passed on, once.
if [ ${#dflt[@]} -gt 0 ]; then
  start_child s2 int
  pid=$last_pid
  kill -INT "$pid"
  sleep 0.3
  kill -TERM "$pid"
  wait_pid "$pid"
  check "SIGINT is passed on to the command once (kill -INT)" grep -q 'got TERM ints=1' "$T/int.out"
else
  ok "SIGINT/SIGQUIT pass-on: skipped (env --default-signal not available)"
fi

# --- a Ctrl-C typed on the terminal reaches the command once: the terminal
# sends it to the whole foreground process group, so distlock must not
# send it again.
if command -v script >/dev/null 2>&1; then
  rm -f "$T/tty.ready"
  {
    wait_until 5 test -s "$T/tty.ready"
    sleep 0.2
    printf '\003'
    sleep 0.4
    kill -TERM "$(cat "$T/tty.ready")"
    sleep 0.5
  } | script -qfec "exec $D s3 -- $T/child $T/tty.ready" /dev/null >"$T/tty.out" 2>&1
  check "Ctrl-C on a terminal reaches the command exactly once" grep -q 'ints=1' "$T/tty.out"
else
  ok "terminal Ctrl-C: skipped (no script(1))"
fi

# --- a signal while waiting: distlock dies by it, leaves the queue, the
# command never runs, and nobody inherits a lapsed hold
start_child s4 holder
holder=$last_pid
bg "$D" s4 -- touch "$T/must-not-run" 2>"$T/waiter.err"
waiter=$last_pid
wait_waiting s4 1
t=$(now)
kill -TERM "$waiter"
wait_pid "$waiter"
dt=$(elapsed "$t")
expect "SIGTERM while waiting: dies by SIGTERM (status $rc) within 1 s ($dt)" \
  'test "$rc" = 143 && between "$dt" 0 1'
check "... it left the queue at once" has_waiting s4 0
check "... said nothing, and the command never ran" test ! -s "$T/waiter.err" -a ! -e "$T/must-not-run"
bg "$D" -v s4 -- true 2>"$T/hupwaiter.err"
waiter=$last_pid
wait_waiting s4 1
kill -HUP "$waiter"
wait_pid "$waiter"
check "SIGHUP while waiting: dies by SIGHUP ($rc)" test "$rc" = 129
kill -TERM "$holder"
wait_pid "$holder"
run "$D" s4 -- true
check "the next holder gets the lock cleanly (no lapse warning)" test "$rc" = 0 -a -z "$err"

# --- a signal while waiting, at the moment the lock is granted: the grant
# is handed on, not left to lapse.  The holder ends as the waiter is
# stopped, many times; whoever comes next must never see a lapse.
lapses=0
for i in 1 2 3 4 5; do
  start_child s5 race$i
  h=$last_pid
  bg "$D" s5 -- true 2>/dev/null
  w=$last_pid
  wait_waiting s5 1
  kill -TERM "$h" "$w"
  wait_pid "$h"
  wait_pid "$w"
  run "$D" s5 -- true
  [ -n "$err" ] && lapses=$((lapses + 1))
done
check "a waiter stopped at grant time never leaves a lapsed hold ($lapses of 5)" test "$lapses" = 0

# --- the waiting line, on a terminal only
bg "$D" s6 -- sleep 1.2 >/dev/null 2>&1
wait_held s6
run "$D" s6 -- true
check "no waiting line when stderr is not a terminal" test "$rc" = 0 -a -z "$err"
if command -v script >/dev/null 2>&1; then
  # The holder keeps the lock until the waiter's line has been drawn a
  # few times with the waiter counted (a busy machine may start the waiter
  # late: a fixed hold time could end before its first line).
  rm -f "$T/s6.go"
  bg "$D" s6 -- sh -c "until [ -e '$T/s6.go' ]; do sleep 0.05; done" >/dev/null 2>&1
  hpid=$last_pid
  wait_held s6
  : >"$T/line.out"
  script -qfec "$D s6 -- echo got-it" /dev/null >"$T/line.out" 2>&1 </dev/null &
  spid=$!
  lines_seen() {
    local all
    all=$(tr '\r' '\n' <"$T/line.out" | grep '^waiting for')
    [ "$(grep -c . <<<"$all")" -ge 2 ] && grep -q ', 1 waiting' <<<"$(tail -n 1 <<<"$all")"
  }
  wait_waiting s6 1
  wait_until 20 lines_seen || nok "20 s without the waiting line counting the waiter"
  line=$(tr '\r' '\n' <"$T/line.out" | grep '^waiting for' | tail -n 1)
  touch "$T/s6.go"
  wait "$spid"
  check "on a terminal: 'waiting for \"s6\": held by HOST:PID (thread T) for Xs, 1 waiting'" \
    bash -c "[[ '$line' =~ ^waiting\ for\ \\\"s6\\\":\ held\ by\ .+:$hpid\ \\(thread\ [0-9]+\\)\ for\ [0-9]+\\.[0-9]s,\ 1\ waiting ]]"
  check "the line is cleared, then the command runs" grep -q 'got-it' "$T/line.out"
  check "the line updates in place (several versions of it)" \
    test "$(tr '\r' '\n' <"$T/line.out" | grep -c '^waiting for')" -ge 2
else
  ok "waiting line: skipped (no script(1))"
fi

finish
