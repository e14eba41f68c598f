#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# test_map.sh LIB BUILD_DIR - DISTLOCK_MAP and DISTLOCK_ON_ERROR checked
# before main: a malformed map, a symbol that is there but is not such a
# lock, one symbol missing in a program that has the others, stop the
# program with exit status 1 and exactly one line on stderr, before main
# prints anything.  A program with none of the map's symbols (a launcher,
# or a misspelt symbol) runs until its first pthread lock call, which
# stops it with the same kind of line.  Good maps (names in the
# executable, file-static names, names in a library, exe+0xOFFSET on a
# stripped copy, @PROGRAM) let it run.  Also: the exported wrappers carry
# no symbol version, and a program of the map may still run other
# programs (system()), even ones that lock.
# Needs no Redis: no mapped lock is ever taken.
. "$(dirname "$0")/lib.sh"

LEGACY=$BIN/preload_legacy
STRIPPED=$BIN/preload_legacy_stripped
W8=$BIN/preload_w8
unset DISTLOCK_MAP DISTLOCK_ON_ERROR DISTLOCK_PRELOAD_EXE

# runs PROGRAM $MODE (default: hello, which takes no lock) under the
# preload with the given environment words; leaves rc, out, err.
run_hello() {
  local prog=$1; shift
  # shellcheck disable=SC2086
  env "$@" LD_PRELOAD="$LIB" "$prog" ${MODE:-hello} >"$WORK/out" 2>"$WORK/err"
  rc=$?
  out=$(cat "$WORK/out")
  err=$(cat "$WORK/err")
}

# expect_stop DESCRIPTION EXPECTED_TEXT PROGRAM ENV...
expect_stop() {
  local what=$1 want=$2 prog=$3; shift 3
  run_hello "$prog" "$@"
  local lines
  lines=$(wc -l <"$WORK/err")
  if [ "$rc" -eq 1 ] && [ -z "$out" ] && [ "$lines" -eq 1 ] &&
     [[ "$err" == "distlock: "* ]] && [[ "$err" == *"$want"* ]]; then
    ok "$what: $err"
  else
    fail "$what: rc=$rc stdout='$out' stderr='$err' (wanted one line with '$want')"
  fi
}

expect_run() {
  local what=$1 prog=$2; shift 2
  run_hello "$prog" "$@"
  if [ "$rc" -eq 0 ] && [ "$out" = "hello from main" ] && [ -z "$err" ]; then
    ok "$what"
  else
    fail "$what: rc=$rc stdout='$out' stderr='$err'"
  fi
}

# --- good maps
expect_run "no DISTLOCK_MAP: the program runs" "$LEGACY"
expect_run "empty DISTLOCK_MAP: the program runs" "$LEGACY" DISTLOCK_MAP=
expect_run "global, file-static and library symbols, flock paths" "$LEGACY" \
  "DISTLOCK_MAP=ledger=mutex:g_ledger_lock; cfg=rwlock:cfg_lock ;lib=mutex:lib_lock;jobs=flock:$WORK/a.lock;jobs=flock:$WORK/b.lock;"
expect_run "a semaphore named as a lock (names apart), @PROGRAM on a semaphore" "$LEGACY" \
  "DISTLOCK_MAP=ledger=mutex:g_ledger_lock;ledger=sem:/ledger;jobs=sem:/jobs@someone_else"
off=$(nm "$LEGACY" | awk '$3 == "g_ledger_lock" { print $1 }' | sed 's/^0*//')
check "nm finds g_ledger_lock in the unstripped build" test -n "$off"
check "the stripped copy has no symbol table" \
  bash -c "! readelf -S '$STRIPPED' | grep -q '\.symtab'"
expect_run "exe+0x$off on the stripped copy" "$STRIPPED" "DISTLOCK_MAP=ledger=mutex:exe+0x$off"
expect_run "DISTLOCK_ON_ERROR=abort is accepted" "$LEGACY" DISTLOCK_ON_ERROR=abort \
  "DISTLOCK_MAP=ledger=mutex:g_ledger_lock"

# --- malformed maps
M=DISTLOCK_MAP
expect_stop "no '='" "expected NAME=KIND:TARGET" "$LEGACY" "$M=ledger"
expect_stop "empty name" "empty lock name" "$LEGACY" "$M==mutex:g_ledger_lock"
expect_stop "no KIND:TARGET" "expected KIND:TARGET" "$LEGACY" "$M=ledger=mutex"
expect_stop "unknown kind" "unknown KIND" "$LEGACY" "$M=ledger=spinlock:g_ledger_lock"
expect_stop "empty symbol" "empty symbol" "$LEGACY" "$M=ledger=mutex:"
expect_stop "empty path" "empty file path" "$LEGACY" "$M=jobs=flock:"
expect_stop "bad offset" "bad offset" "$LEGACY" "$M=ledger=mutex:exe+0xZZ"
expect_stop "offset without 0x" "bad offset" "$LEGACY" "$M=ledger=mutex:exe+1234"
expect_stop "semaphore without its '/'" "a semaphore is /NAME" "$LEGACY" "$M=jobs=sem:jobs"
expect_stop "semaphore with a second '/'" "a semaphore is /NAME" "$LEGACY" "$M=jobs=sem:/a/b"
expect_stop "empty semaphore name" "empty semaphore name" "$LEGACY" "$M=jobs=sem:"
expect_stop "one semaphore name twice" "semaphore name already used" "$LEGACY" "$M=jobs=sem:/a;jobs=sem:/b"
expect_stop "semaphores refused with redlock://" "redlock" "$LEGACY" "$M=jobs=sem:/a" \
  "DISTLOCK_URL=redlock://127.0.0.1:1,127.0.0.1:2,127.0.0.1:3"
expect_stop "second entry bad" "entry 2" "$LEGACY" "$M=ledger=mutex:g_ledger_lock;cfg=rwlock"
expect_stop "only separators" "no entries" "$LEGACY" "$M=;;"
expect_stop "name too long" "DIST_NAME_MAX" "$LEGACY" "$M=$(printf 'n%.0s' $(seq 513))=mutex:g_ledger_lock"
expect_stop "target mapped twice" "already mapped" "$LEGACY" \
  "$M=a=mutex:g_ledger_lock;b=mutex:g_ledger_lock"
expect_stop "one name, two kinds" "another KIND" "$LEGACY" \
  "$M=ledger=mutex:g_ledger_lock;ledger=rwlock:cfg_lock"
expect_stop "bad DISTLOCK_ON_ERROR" "DISTLOCK_ON_ERROR" "$LEGACY" DISTLOCK_ON_ERROR=sometimes \
  "$M=ledger=mutex:g_ledger_lock"
expect_stop "bad DISTLOCK_URL" "DISTLOCK_URL" "$LEGACY" DISTLOCK_URL=bogus://x \
  "$M=ledger=mutex:g_ledger_lock"

# --- symbols that are there but are not such locks: stopped before main
expect_stop "an int is too small for a mutex" "too small" "$LEGACY" "$M=ledger=mutex:g_counter_int"
expect_stop "a mutex is too small for a rwlock" "too small" "$LEGACY" "$M=cfg=rwlock:g_ledger_lock"
expect_stop "a function is not a lock" "not a global variable" "$LEGACY" "$M=ledger=mutex:main"
expect_stop "an int is too small for a condition" "too small" "$LEGACY" "$M=q=cond:g_counter_int"
expect_stop "a condition mapped twice" "already mapped" "$LEGACY" \
  "$M=ledger=mutex:g_ledger_lock;a=cond:g_queue_cv;b=cond:g_queue_cv"
expect_run "a condition's name is its own: a lock may have it too" "$LEGACY" \
  "$M=ledger=mutex:g_ledger_lock;ledger=cond:g_queue_cv"

# --- one symbol missing in a program that has the others: stopped before
# main, with the hint for an entry meant for another program
expect_stop "has one symbol, lacks the other" \
  'entry 2 (x): symbol "no_such_lock" not found in '"$LEGACY"' or its libraries (an entry for another program: no_such_lock@PROGRAM)' \
  "$LEGACY" "$M=ledger=mutex:g_ledger_lock;x=mutex:no_such_lock"
expect_stop "has the offset, lacks a second one" "not aligned" "$STRIPPED" \
  "$M=ledger=mutex:exe+0x$off;x=mutex:exe+0x$(printf '%x' $((0x$off + 4)))"

# --- none of the map's symbols (the misspelt-symbol case, or a launcher):
# the program runs until its first pthread lock call, which stops it
# before taking the lock, with the reason and the @PROGRAM hint
MODE="mutex $WORK/ctr 5 2"
expect_stop "missing symbol, at the first mutex lock" \
  'symbol "no_such_lock" not found in '"$LEGACY"' or its libraries; stopped at the program'"'"'s first pthread mutex lock (an entry for another program: no_such_lock@PROGRAM)' \
  "$LEGACY" "$M=ledger=mutex:no_such_lock"
check "nothing ran unprotected: the ledger is untouched ($(counter "$WORK/ctr"))" test "$(counter "$WORK/ctr")" -eq 0
expect_stop "name on a stripped binary" "stripped: map it by exe+0xOFFSET" "$STRIPPED" \
  "$M=ledger=mutex:g_ledger_lock"
expect_stop "offset 0 is not writable" "not inside a writable segment" "$LEGACY" "$M=ledger=mutex:exe+0x0"
expect_stop "misaligned offset" "not aligned" "$LEGACY" "$M=ledger=mutex:exe+0x$(printf '%x' $((0x$off + 4)))"
expect_stop "offset far away" "not inside a writable segment" "$LEGACY" "$M=ledger=mutex:exe+0x7fffffff0"
MODE="rwlock $WORK/ctr 2 1 1"
expect_stop "missing symbol, at the first rwlock lock" "first pthread rwlock lock" \
  "$LEGACY" "$M=cfg=rwlock:no_such_rw"
MODE="lib $WORK/ctr 2 2"
expect_stop "missing symbol, at the first lock inside a library" "first pthread mutex lock" \
  "$LEGACY" "$M=lib=mutex:lib_lok"
MODE="fork $WORK/ctr 2"
expect_stop "missing symbol, a program that forks" "first pthread mutex lock" \
  "$LEGACY" "$M=ledger=mutex:no_such_lock"
unset MODE
expect_run "missing symbol in a program that never locks: it runs" "$LEGACY" "$M=ledger=mutex:no_such_lock"
expect_run "a launcher-like program (no symbols, no locks) runs" "$LEGACY" "$M=ledger=mutex:exe+0x0"
MODE="flock $WORK/a.lock $WORK/ctr 2"
run_hello "$LEGACY" "$M=ledger=mutex:no_such_lock"
check "file locks are not pthread locks: no stop (rc=$rc, $err)" test "$rc" -eq 0 -a -z "$err"
unset MODE

# --- @PROGRAM: the program's base name, or argv[0]'s
expect_run "@PROGRAM of this program" "$LEGACY" "$M=ledger=mutex:g_ledger_lock@preload_legacy"
expect_run "the same target for two programs" "$LEGACY" \
  "$M=ledger=mutex:g_ledger_lock@preload_legacy;books=mutex:g_ledger_lock@preload_legacy_books"
MODE="mutex $WORK/ctr 2 2"
rm -f "$WORK/ctr"
run_hello "$LEGACY" "$M=ledger=mutex:no_such_lock@another_program"
check "an entry for another program does not apply: no stop, no map (rc=$rc, $(counter "$WORK/ctr") bumps, $err)" \
  test "$rc" -eq 0 -a -z "$err" -a "$(counter "$WORK/ctr")" -eq 4
unset MODE
expect_stop "@PROGRAM of this program, symbol missing: stopped before main" \
  'entry 1 (ledger): symbol "g_ledger_lok" not found' "$LEGACY" "$M=ledger=mutex:g_ledger_lok@preload_legacy"
env "$M=ledger=mutex:g_ledger_lok@legacyd" LD_PRELOAD="$LIB" \
  bash -c 'exec -a legacyd "$0" hello' "$LEGACY" >"$WORK/out" 2>"$WORK/err"
rc=$?
check "@PROGRAM matches argv[0] too (exec -a legacyd): stopped (rc=$rc, $(cat "$WORK/err"))" \
  test "$rc" -eq 1 -a ! -s "$WORK/out"
expect_stop "@PROGRAM is a base name" "base name" "$LEGACY" "$M=ledger=mutex:g_ledger_lock@/bin/x"
expect_stop "symbol and program, target mapped twice" "already mapped" "$LEGACY" \
  "$M=a=mutex:g_ledger_lock@preload_legacy;b=mutex:g_ledger_lock@preload_legacy"
expect_stop "an entry for all programs and one for this one, same object" "same object" "$LEGACY" \
  "$M=a=mutex:g_ledger_lock;b=mutex:g_ledger_lock@preload_legacy"
# Lock-file paths: an '@' in a directory is the path's; a final lone '@'
# keeps an '@' of the file name in the path.
mkdir -p "$WORK/d@1"
for t in "$WORK/d@1/x.lock" "$WORK/y@2.lock@" "$WORK/z.lock@preload_legacy"; do
  env DISTLOCK_LOG=debug "$M=jobs=flock:$t" LD_PRELOAD="$LIB" "$LEGACY" hello >"$WORK/out" 2>"$WORK/err"
  rc=$?
  want=${t%@preload_legacy}; want=${want%@}
  check "flock path $t: mapped as $want (rc=$rc)" grep -q "flock on $want\$" "$WORK/err"
done
env DISTLOCK_LOG=debug "$M=jobs=flock:$WORK/z.lock@someone_else" LD_PRELOAD="$LIB" "$LEGACY" hello >"$WORK/out" 2>"$WORK/err"
check "flock path for another program: not mapped" bash -c "! grep -q 'flock on' '$WORK/err'"

# --- other programs started by a program of the map
env DISTLOCK_MAP="ledger=mutex:g_ledger_lock" LD_PRELOAD="$LIB" "$LEGACY" system >"$WORK/out" 2>"$WORK/err"
rc=$?
check "system() from a mapped program runs /bin/sh and /bin/true (rc=$rc: $(cat "$WORK/out" "$WORK/err"))" \
  test "$rc" -eq 0 -a "$(cat "$WORK/out")" = "system: 0"
env DISTLOCK_MAP="ledger=mutex:g_ledger_lock" LD_PRELOAD="$LIB" "$W8" 1000 >"$WORK/out" 2>"$WORK/err"
rc=$?
check "started directly, a program without the symbols that locks stops (rc=$rc)" \
  test "$rc" -eq 1 -a "$(grep -c 'first pthread mutex lock' "$WORK/err")" -eq 1
env DISTLOCK_MAP="ledger=mutex:g_ledger_lock" LD_PRELOAD="$LIB" "$LEGACY" run "$W8 1000" >"$WORK/out" 2>"$WORK/err"
rc=$?
check "started by the mapped program, the same program runs (rc=$rc: $(head -c 300 "$WORK/err"))" \
  test "$rc" -eq 0 -a ! -s "$WORK/err"
env DISTLOCK_MAP="ledger=mutex:g_ledger_lock" LD_PRELOAD="$LIB" "$LEGACY" run 'echo "$DISTLOCK_PRELOAD_EXE"' >"$WORK/out" 2>&1
check "the mapped program records itself for the programs it starts ($(cat "$WORK/out"))" \
  test "$(cat "$WORK/out")" = "$(readlink -f "$LEGACY")"
env DISTLOCK_MAP="ledger=mutex:g_ledger_lock" LD_PRELOAD="$LIB" timeout 10 env bash -c 'echo "${DISTLOCK_PRELOAD_EXE-unset} $DISTLOCK_MAP"' >"$WORK/out" 2>&1
check "launchers pass the environment on untouched ($(cat "$WORK/out"))" \
  test "$(cat "$WORK/out")" = "unset ledger=mutex:g_ledger_lock"

# --- the exports
objdump -T "$LIB" | awk '$2 == "g" && $4 != "*UND*"' >"$WORK/exports"
n=$(wc -l <"$WORK/exports")
check "51 wrappers exported (got $n)" test "$n" -eq 51
check "no exported symbol has a version (all Base)" \
  bash -c "awk '{ print \$(NF-1) }' '$WORK/exports' | grep -qv '^Base\$' && exit 1 || exit 0"
check "no version definitions in the library" bash -c "! readelf -S '$LIB' | grep -q 'gnu.version_d'"
check "the library's dist_* API stays inside" bash -c "! grep -q ' dist_' '$WORK/exports'"
# The build exports what the wrappers mark DLP_EXPORT, no list: each must
# be a function of libc, which it stands in front of.
LIBC=$(ldd "$LIB" | awk '$1 == "libc.so.6" { print $3 }')
objdump -T "$LIBC" | awk '$4 != "*UND*" { print $NF }' | sort -u >"$WORK/libc.names"
awk '{ print $NF }' "$WORK/exports" | sort -u | comm -23 - "$WORK/libc.names" >"$WORK/strangers"
check "every export is a libc name ($(tr '\n' ' ' <"$WORK/strangers"))" test ! -s "$WORK/strangers"
for f in pthread_mutex_lock pthread_cond_wait pthread_rwlock_rdlock flock fcntl fcntl64 lockf lockf64 close \
         sem_open sem_close sem_wait sem_trywait sem_timedwait sem_clockwait sem_post sem_getvalue \
         pthread_barrier_init pthread_barrier_wait pthread_barrier_destroy sem_unlink \
         pthread_mutex_init pthread_mutex_destroy pthread_mutex_consistent pthread_cond_init pthread_cond_destroy \
         execve execv execvp execvpe execl execlp execle fexecve execveat; do
  check "$f exported" grep -q " $f\$" "$WORK/exports"
done

finish
