#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# test_top.sh DISTLOCK: distlock top.  Plain output (stdout a file), then
# the screen under tmux (a server of the test's own, on its own socket):
# keys sent with send-keys, the screen read with capture-pane.  Sorting,
# details, quitting (the terminal given back), a Redis that goes away and
# comes back (on the screen and in plain output), one that stops answering,
# and bad input.
. "$(dirname "$0")/lib.sh"

host=$(hostname)
if ! command -v tmux >/dev/null 2>&1; then
  nok "tmux is not installed (tools/deps.sh --test)"
  finish
  exit 1
fi

SOCK="$T/tmux.sock"
own_pids=()                    # redis-servers this script starts
tm() { tmux -S "$SOCK" "$@"; }
on_exit() {
  local p
  tm kill-server 2>/dev/null
  for p in "${own_pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
  for p in "${own_pids[@]}"; do
    wait_until 5 eval "! kill -0 $p 2>/dev/null" || kill -KILL "$p" 2>/dev/null
  done
  cleanup
}
trap on_exit EXIT

# rows_order FILE: the names of the t-* rows, in order, on one line.
rows_order() { grep -oE '^t-(busy|mid|old) ' "$1" | tr -d ' ' | tr '\n' ' ' | sed 's/ $//'; }

# --- three locks: t-old held longest, t-mid with the longest waiter, t-busy
# with the most waiters
bg "$D" t-old -- sleep 120 >/dev/null 2>&1
h_old=$last_pid
wait_held t-old
bg "$D" t-mid -- sleep 120 >/dev/null 2>&1
wait_held t-mid
bg "$D" t-mid -- true >/dev/null 2>&1
w_mid=$last_pid
wait_waiting t-mid 1
bg "$D" t-busy -- sleep 120 >/dev/null 2>&1
h_busy=$last_pid
wait_held t-busy
bg "$D" t-busy -- true >/dev/null 2>&1
w_busy1=$last_pid
bg "$D" -s t-busy -- true >/dev/null 2>&1
wait_waiting t-busy 2

# ============================================================ plain output
run "$D" top
expect "plain: one snapshot, exit 0" \
  'test "$rc" = 0 && test "$(grep -c "^distlock top " "$T/out")" = 1'
check "plain: the title names Redis and sums up" \
  grep -qE "^distlock top [0-9-]+ [0-9:]+, redis 127\\.0\\.0\\.1:$REDIS_PORT: locks: 3 held, 3 waiting; longest wait [0-9.]+s; oldest hold [0-9.]+s$" "$T/out"
check "plain: the column header" grep -qE '^NAME +KIND +STATE +WAITING +HELD FOR +MAX WAIT +HOLDER$' "$T/out"
check "plain: t-busy's row: exclusive, 2 waiting, held for, max wait, its holder" \
  grep -qE "^t-busy +lock +exclusive +2 +[0-9.]+s +[0-9.]+s +$host:$h_busy \\(thread $h_busy\\)$" "$T/out"
check "plain: its holder line (host, pid, thread, held for, lease left, fence)" \
  grep -qE "^    holder $host:$h_busy \\(thread $h_busy\\), exclusive, held [0-9.]+s, lease left [0-9.]+s, fence [0-9]+$" "$T/out"
check "plain: its waiter lines, with their wait" \
  grep -qE "^    waiter $host:$w_busy1 \\(thread $w_busy1\\), exclusive, waiting [0-9.]+s$" "$T/out"
check "plain: the shared waiter" grep -qE "^    waiter $host:[0-9]+ \\(thread [0-9]+\\), shared, waiting [0-9.]+s$" "$T/out"
expect "plain: sorted by waiters (t-busy t-mid t-old)" 'test "$(rows_order "$T/out")" = "t-busy t-mid t-old"'
run "$D" top -o age
expect "plain -o age: oldest hold first (t-old t-mid t-busy)" 'test "$(rows_order "$T/out")" = "t-old t-mid t-busy"'
run "$D" top -o wait
expect "plain -o wait: longest wait first (t-mid t-busy t-old)" 'test "$(rows_order "$T/out")" = "t-mid t-busy t-old"'
run "$D" top -o name -r
expect "plain -o name -r: Z to A (t-old t-mid t-busy)" 'test "$(rows_order "$T/out")" = "t-old t-mid t-busy"'
run "$D" top 't-m*'
expect "plain PATTERN: t-mid only" 'test "$rc" = 0 && test "$(rows_order "$T/out")" = "t-mid"'
run "$D" top -n 3 -d 0.2
expect "plain -n 3 -d 0.2: three snapshots, blank lines between" \
  'test "$rc" = 0 && test "$(grep -c "^distlock top " "$T/out")" = 3 && test "$(grep -c "^$" "$T/out")" = 2'
run "$D" --url redis://127.0.0.1:1 top
expect "plain, Redis unreachable: exit 69, one line, nothing on stdout" \
  'test "$rc" = 69 && one_line_err && test -z "$out"'
run "$D" --url redis://127.0.0.1:1 top -n 2 -d 0.2
expect "plain, repeated, Redis unreachable: a line per try saying it retries, exit 69" \
  'test "$rc" = 69 && test "$(grep -c "; retrying in 0.2s$" "$T/err")" = 2'

# ============================================================ semaphores
# s-pool: two leased permits, both held by distlock -N 2, and a third
# command queued for one.  s-count: a counting semaphore at 0 with one
# registration of a process elsewhere, queued 5 s ago (written in Redis
# as the library writes it: docs/PROTOCOL.md, "Semaphores"), as a
# program with sem_open under the interposer leaves it.
bg "$D" -N 2 s-pool -- sleep 120 >/dev/null 2>&1
h_sem1=$last_pid
wait_sem s-pool :l 1
bg "$D" -N 2 s-pool -- sleep 120 >/dev/null 2>&1
h_sem2=$last_pid
wait_sem s-pool :l 2
bg "$D" -N 2 s-pool -- true >/dev/null 2>&1
w_sem=$last_pid
wait_sem s-pool :q 1
rcli eval "local t = redis.call('TIME')
  local now = t[1] * 1000 + math.floor(t[2] / 1000)
  local k = KEYS[1]
  redis.call('HSET', k, 'k', 'c', 'v', 0, 'n0', 1, 'seq', 1)
  redis.call('ZADD', k .. ':q', 1, 'tok-elsewhere')
  redis.call('ZADD', k .. ':d', now + 120000, 'tok-elsewhere')
  redis.call('HSET', k .. ':w', 'tok-elsewhere', cmsgpack.pack({1, 'elsewhere\t7\t8', now - 5000}))" \
  1 "distlock:{"$'\x01'"ss-count}" >/dev/null
run "$D" top -b
expect "plain, semaphores: exit 0" 'test "$rc" = 0'
check "plain, semaphores: the title sums them up (1 held, 2 waiting)" \
  grep -qE "^distlock top [0-9-]+ [0-9:]+, redis [^ ]+: locks: 3 held, 3 waiting; sems: 1 held, 2 waiting; longest wait " "$T/out"
check "plain: s-pool's row: 2/2 permits, 1 waiting, held for, max wait, its oldest holder and one more" \
  grep -qE "^s-pool +sem +2/2 permits +1 +[0-9.]+s +[0-9.]+s +$host:$h_sem1 \\(thread $h_sem1\\) \\+1 more$" "$T/out"
for p in "$h_sem1" "$h_sem2"; do
  check "plain: s-pool's holder $p (host, pid, thread, permits, held for, lease left, fence)" \
    grep -qE "^    holder $host:$p \\(thread $p\\), 1 permit, held [0-9.]+s, lease left [0-9.]+s, fence [0-9]+$" "$T/out"
done
check "plain: s-pool's waiter, with its wait" \
  grep -qE "^    waiter $host:$w_sem \\(thread [0-9]+\\), a permit, waiting [0-9.]+s$" "$T/out"
check "plain: s-count's row: value 0, 1 waiting, no hold, waited 5 s or more, no holder" \
  grep -qE "^s-count +sem +value 0 +1 +- +([5-9]|[1-9][0-9])\\.[0-9]s +-$" "$T/out"
check "plain: s-count's waiter (host, pid, thread from its registration) and its wait" \
  grep -qE "^    waiter elsewhere:7 \\(thread 8\\), a permit, waiting ([5-9]|[1-9][0-9])\\.[0-9]s$" "$T/out"
# The incarnation: made by s-pool's first user (seconds ago); s-count's
# hash was written as an older library writes it, with none.
details_of() { awk -v n="$1" '$1 == n { f = 1; next } /^[^ ]/ { f = 0 } f' "$T/out"; }
has_incarnation() { details_of "$1" | grep -qE '^    incarnation [0-9]+, made [0-9.]+s ago$'; }
no_incarnation() { ! details_of "$1" | grep -q incarnation; }
check "plain: s-pool's incarnation, made seconds ago" has_incarnation s-pool
check "plain: s-count has no incarnation line (none in Redis)" no_incarnation s-count
run "$D" top -b -o age 's-*'
expect "plain -o age, semaphores: the one held first (s-pool s-count)" \
  'test "$(grep -oE "^s-(count|pool) " "$T/out" | tr -d " " | tr "\n" " ")" = "s-pool s-count "'
# The holders leave: the waiter takes a permit, runs and is done.
kill -TERM "$h_sem1" "$h_sem2"
wait_pid "$w_sem"
rcli del "distlock:{"$'\x01'"ss-count}" "distlock:{"$'\x01'"ss-count}:q" "distlock:{"$'\x01'"ss-count}:d" \
  "distlock:{"$'\x01'"ss-count}:w" >/dev/null
wait_sem s-pool :l 0
run "$D" top -b 's-*'
expect "plain: semaphores nobody holds or waits on are not shown" \
  'test "$rc" = 0 && grep -q "^(nothing held or waited on)$" "$T/out"'

# ============================================================ the screen
# start_screen NAME CMD...: runs CMD in a new 120x30 tmux window of session
# NAME; when CMD ends, the window says "EXITED rc=N" and the terminal
# settings that matter (echo, icanon), and stays.
start_screen() {
  local name=$1 q
  shift
  q=$(printf '%q ' "$@")
  local script="$q; echo \"EXITED rc=\$?\"; stty -a | tr ' ;' '\\n\\n' | grep -xE -- '-?(echo|icanon)' | tr '\\n' ' '; echo; sleep 600"
  if tm has-session 2>/dev/null; then
    tm new-session -d -s "$name" -x 120 -y 30 "$script"
  else
    tm -f /dev/null new-session -d -s "$name" -x 120 -y 30 "$script"
  fi
}
pane() { tm capture-pane -p -t "$1" >"$T/pane.$1" 2>/dev/null; }
# pane_has NAME ERE: the screen of session NAME shows a line matching ERE.
pane_has() { pane "$1" && grep -qE -- "$2" "$T/pane.$1"; }
# wait_pane SECS NAME ERE: polls the screen until it does.
wait_pane() { wait_until "$1" pane_has "$2" "$3"; }
keys() { tm send-keys -t "$1" "$2"; }

start_screen s1 env DISTLOCK_URL="$DISTLOCK_URL" ASAN_OPTIONS="$ASAN_OPTIONS" "$D" top
wait_pane 10 s1 '^t-busy ' || nok "10 s without t-busy on the screen"
pane s1
cp "$T/pane.s1" "$T/screen-first"
check "screen: the title, sorted by waiters" grep -qE "^distlock top - [0-9:]+, redis 127\\.0\\.0\\.1:$REDIS_PORT, every 1\\.0s, by waiters$" "$T/pane.s1"
check "screen: the keys line" grep -qE '^keys: w a t n sort by waiters, hold age, wait, name; r reverse; d details; q quit$' "$T/pane.s1"
check "screen: t-busy's holder, with how long held" \
  grep -qE "^    holder $host:$h_busy \\(thread $h_busy\\), exclusive, held [0-9.]+s, lease left" "$T/pane.s1"
check "screen: t-mid's waiter, with its wait" grep -qE "^    waiter $host:$w_mid \\(thread $w_mid\\), exclusive, waiting [0-9.]+s$" "$T/pane.s1"
expect "screen: sorted by waiters (t-busy t-mid t-old)" 'test "$(rows_order "$T/pane.s1")" = "t-busy t-mid t-old"'
# It refreshes: the held-for of t-old grows.
held_of_old() { grep -E '^t-old ' "$T/pane.s1" | awk '{ print $5 }'; }
first=$(held_of_old)
wait_until 5 eval "pane s1; test \"\$(held_of_old)\" != \"$first\""
expect "screen: refreshed each second (t-old held for $first, then $(held_of_old))" 'test "$(held_of_old)" != "$first"'

keys s1 a
wait_pane 5 s1 ', by hold age$'
expect "key a: by hold age, oldest first (t-old t-mid t-busy)" \
  'pane_has s1 ", by hold age$" && test "$(rows_order "$T/pane.s1")" = "t-old t-mid t-busy"'
keys s1 t
wait_pane 5 s1 ', by wait$'
expect "key t: by wait, longest first (t-mid t-busy t-old)" \
  'pane_has s1 ", by wait$" && test "$(rows_order "$T/pane.s1")" = "t-mid t-busy t-old"'
keys s1 n
wait_pane 5 s1 ', by name$'
expect "key n: by name (t-busy t-mid t-old)" \
  'pane_has s1 ", by name$" && test "$(rows_order "$T/pane.s1")" = "t-busy t-mid t-old"'
keys s1 r
wait_pane 5 s1 ', by name, Z to A$'
expect "key r: reversed (t-old t-mid t-busy)" \
  'pane_has s1 ", by name, Z to A$" && test "$(rows_order "$T/pane.s1")" = "t-old t-mid t-busy"'
keys s1 d
wait_until 5 eval '! pane_has s1 "^    holder "'
expect "key d: details off, one line per lock" \
  '! pane_has s1 "^    (holder|waiter) " && test "$(rows_order "$T/pane.s1")" = "t-old t-mid t-busy"'
keys s1 d
wait_pane 5 s1 '^    holder '
check "key d again: details back" pane_has s1 '^    holder '
keys s1 w
wait_pane 5 s1 ', by waiters$'
# A lock taken while it runs shows up at the next refresh.
bg "$D" t-new -- sleep 120 >/dev/null 2>&1
check "a lock taken meanwhile appears" wait_pane 5 s1 '^t-new '
keys s1 q
wait_pane 5 s1 '^EXITED rc=0$'
check "key q: top exits 0" pane_has s1 '^EXITED rc=0$'
check "key q: the terminal has echo and icanon again" wait_pane 5 s1 '^icanon echo *$'
check "key q: the shell's screen is back (the alternate screen left)" bash -c "! grep -q '^keys: ' '$T/pane.s1'"

# SIGTERM: the same clean end.
start_screen s2 env DISTLOCK_URL="$DISTLOCK_URL" ASAN_OPTIONS="$ASAN_OPTIONS" "$D" top
wait_pane 10 s2 '^t-busy '
tpid=$(pgrep -f -n -- "$D top\$" || true)
expect "the screen's distlock top is running (pid $tpid)" '[ -n "$tpid" ]'
[ -n "$tpid" ] && kill -TERM "$tpid"
check "SIGTERM: exits 0" wait_pane 5 s2 '^EXITED rc=0$'
check "SIGTERM: the terminal settings are back" wait_pane 5 s2 '^icanon echo *$'

# -b on a terminal: plain, and done.
start_screen s3 env DISTLOCK_URL="$DISTLOCK_URL" ASAN_OPTIONS="$ASAN_OPTIONS" "$D" top -b
wait_pane 10 s3 '^EXITED rc=0$'
check "-b on a terminal: one plain snapshot" pane_has s3 '^distlock top [0-9-]+ [0-9:]+, redis '

# -n 2 on the screen: two refreshes, then done.
start_screen s4 env DISTLOCK_URL="$DISTLOCK_URL" ASAN_OPTIONS="$ASAN_OPTIONS" "$D" top -n 2 -d 0.2
check "-n 2 on the screen: ends by itself, exit 0" wait_pane 10 s4 '^EXITED rc=0$'

# ============================================================ Redis goes away
# A server of this test's own, on a port it can start again on.
mkdir -p "$T/r2"
start_r2() {
  dl_redis_start "$T/r2" -p "$P2" >/dev/null 2>&1
  r2=$DL_REDIS_PID
  own_pids+=("$r2")
}
P2=$(dl_free_port)
start_r2
U2="redis://127.0.0.1:$P2"
bg "$D" --url "$U2" u-1 -- sleep 120 >/dev/null 2>&1
wait_until 5 eval "\"$D\" --url $U2 status u-1 >/dev/null 2>&1"
start_screen s5 env DISTLOCK_URL="$U2" ASAN_OPTIONS="$ASAN_OPTIONS" "$D" top
wait_pane 10 s5 '^u-1 '
check "second Redis: u-1 shown" pane_has s5 '^u-1 '
kill -TERM "$r2"
wait_until 5 eval "! kill -0 $r2 2>/dev/null"
# A reading fails within the I/O time-out (2 s here): 10 s is generous.
check "Redis stopped: a line says it is unreachable and retried" \
  wait_pane 10 s5 "^Redis is unreachable \\(Connection refused\\); retrying every 1\\.0s \\([0-9]+ tr(y|ies) since [0-9:]+\\), view of [0-9:]+\$"
check "Redis stopped: the last view stays on the screen" pane_has s5 '^u-1 '
cp "$T/pane.s5" "$T/screen-unreachable"
wait_until 10 eval "pane_has s5 '\\(([2-9]|[0-9][0-9]+) tries since'"
check "Redis stopped: the tries are counted" pane_has s5 '\(([2-9]|[0-9][0-9]+) tries since'
start_r2
bg "$D" --url "$U2" u-back -- sleep 120 >/dev/null 2>&1
check "Redis back: the line goes and the new state shows (u-back)" \
  wait_pane 10 s5 '^u-back '
expect "Redis back: no unreachable line" '! pane_has s5 "^Redis (is )?unreachable"'

# A Redis that stops answering (SIGSTOP): the screen says so and q still
# quits at once (the reader thread is stuck in a round trip; top does not
# wait for it).
kill -STOP "$r2"
check "Redis stopped answering: reading..., then unreachable" \
  wait_pane 10 s5 '^(reading Redis \([0-9]+s\)\.\.\.|Redis (is )?unreachable)'
t=$(now)
keys s5 q
wait_pane 5 s5 '^EXITED rc=0$'
dt=$(elapsed "$t")
# 3 s: top waits 0.3 s for its reader, then ends; the rest is tmux and
# the polling, on a loaded machine.
check "Redis stopped answering: q quits all the same, exit 0 (${dt}s)" \
  eval "pane_has s5 '^EXITED rc=0\$' && between $dt 0 3"
check "Redis stopped answering: the terminal is given back" wait_pane 5 s5 '^icanon echo *$'
kill -CONT "$r2"

# Plain output (stdout a file), repeated: the same Redis stopped, then
# started again.  A line on stderr per failed try, each saying it retries,
# then snapshots again on stdout once Redis answers.
kill -TERM "$r2"
wait_until 5 eval "! kill -0 $r2 2>/dev/null"
bg "$D" --url "$U2" top -d 0.2 >"$T/plain-back.out" 2>"$T/plain-back.err"
ptop=$last_pid
retry_re="^distlock: Redis is unreachable at redis://127\\.0\\.0\\.1:$P2 \\(Connection refused\\); retrying in 0\\.2s\$"
retries() { grep -cE "$retry_re" "$T/plain-back.err"; }
wait_until 10 eval 'test "$(retries)" -ge 2'
expect "plain, Redis stopped: a line per try on stderr, each saying it retries ($(retries) so far)" \
  'test "$(retries)" -ge 2 && ! grep -vqE "$retry_re" "$T/plain-back.err" && ! grep -q "^distlock top " "$T/plain-back.out"'
start_r2
bg "$D" --url "$U2" u-plain -- sleep 120 >/dev/null 2>&1
u_plain=$last_pid
check "plain, Redis back: snapshots again on stdout, with the new holder" \
  wait_until 10 grep -qE "^    holder $host:$u_plain \\(thread $u_plain\\), exclusive, held " "$T/plain-back.out"
n_err=$(retries)
n_out=$(grep -c "^distlock top " "$T/plain-back.out")
wait_until 10 eval "test \$(grep -c '^distlock top ' '$T/plain-back.out') -ge $((n_out + 3))"
expect "plain, Redis back: it keeps reading, and no more failed tries ($n_err)" \
  'test "$(grep -c "^distlock top " "$T/plain-back.out")" -ge $((n_out + 3)) && test "$(retries)" = "$n_err"'
kill -TERM "$ptop"
wait_pid "$ptop"

# ============================================================ bad input
expect_usage "top: an unknown option" top --bogus
expect_usage "top: an unknown short option" top -x
expect_usage "top: -d 0" top -d 0
expect_usage "top: -d below 0.1" top -d 0.05
expect_usage "top: -d not a number" top -d soon
expect_usage "top: -d negative" top -d -1
expect_usage "top: -d 1e9, out of range" top -d 1e9
check "... says so, with the range" grep -q "out of range: 0.1 to 86400 seconds" "$T/err"
expect_usage "top: -d too long" top -d 100000
expect_usage "top: -d without a value" top -d
expect_usage "top: -n 0" top -n 0
expect_usage "top: -o unknown key" top -o size
expect_usage "top: a metrics option" top --names 5
expect_usage "top: two patterns" top a b
run "$D" top --url 'redis://127.0.0.1:1' -b
expect "top --url that cannot connect: exit 69, one line" 'test "$rc" = 69 && one_line_err'

finish
