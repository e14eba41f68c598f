#!/usr/bin/env bash
# test_map.sh LIB BUILD_DIR - DISTLOCK_MAP and DISTLOCK_ON_ERROR checked
# before main: a malformed map, a symbol that cannot be found (or is not a
# lock) stop the program with exit status 1 and exactly one line on stderr,
# before main prints anything.  Good maps (names in the executable,
# file-static names, names in a library, exe+0xOFFSET on a stripped copy)
# let it run.  Also: the exported wrappers carry no symbol version, and a
# program of the map may still run other programs (system()).
# Needs no Redis: nothing here takes a lock.
. "$(dirname "$0")/lib.sh"

LEGACY=$BIN/preload_legacy
STRIPPED=$BIN/preload_legacy_stripped
unset DISTLOCK_MAP DISTLOCK_ON_ERROR DISTLOCK_PRELOAD_EXE

# runs PROGRAM hello under the preload with the given environment words;
# leaves rc, out, err.
run_hello() {
  local prog=$1; shift
  env "$@" LD_PRELOAD="$LIB" "$prog" hello >"$WORK/out" 2>"$WORK/err"
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

# --- symbols that are missing or are not locks
expect_stop "missing symbol" 'symbol "no_such_lock" not found' "$LEGACY" "$M=ledger=mutex:no_such_lock"
expect_stop "name on a stripped binary" "stripped: map it by exe+0xOFFSET" "$STRIPPED" \
  "$M=ledger=mutex:g_ledger_lock"
expect_stop "an int is too small for a mutex" "too small" "$LEGACY" "$M=ledger=mutex:g_counter_int"
expect_stop "a mutex is too small for a rwlock" "too small" "$LEGACY" "$M=cfg=rwlock:g_ledger_lock"
expect_stop "a function is not a lock" "not a global variable" "$LEGACY" "$M=ledger=mutex:main"
expect_stop "offset 0 is not writable" "not inside a writable segment" "$LEGACY" "$M=ledger=mutex:exe+0x0"
expect_stop "misaligned offset" "not aligned" "$LEGACY" "$M=ledger=mutex:exe+0x$(printf '%x' $((0x$off + 4)))"
expect_stop "offset far away" "not inside a writable segment" "$LEGACY" "$M=ledger=mutex:exe+0x7fffffff0"

# --- other programs started by a program of the map
env DISTLOCK_MAP="ledger=mutex:g_ledger_lock" LD_PRELOAD="$LIB" "$LEGACY" system >"$WORK/out" 2>"$WORK/err"
rc=$?
check "system() from a mapped program runs /bin/sh and /bin/true (rc=$rc: $(cat "$WORK/out" "$WORK/err"))" \
  test "$rc" -eq 0 -a "$(cat "$WORK/out")" = "system: 0"
env DISTLOCK_MAP="ledger=mutex:g_ledger_lock" LD_PRELOAD="$LIB" /bin/true 2>"$WORK/err"
rc=$?
check "started directly, another program with the map stops (rc=$rc)" test "$rc" -eq 1
env DISTLOCK_MAP="ledger=mutex:g_ledger_lock" DISTLOCK_PRELOAD_EXE="$LEGACY" LD_PRELOAD="$LIB" /bin/true
check "started by the mapped program, it runs" test $? -eq 0

# --- the exports
objdump -T "$LIB" | awk '$2 == "g" && $4 != "*UND*"' >"$WORK/exports"
n=$(wc -l <"$WORK/exports")
check "23 wrappers exported (got $n)" test "$n" -eq 23
check "no exported symbol has a version (all Base)" \
  bash -c "awk '{ print \$(NF-1) }' '$WORK/exports' | grep -qv '^Base\$' && exit 1 || exit 0"
check "no version definitions in the library" bash -c "! readelf -S '$LIB' | grep -q 'gnu.version_d'"
check "the library's dist_* API stays inside" bash -c "! grep -q ' dist_' '$WORK/exports'"
for f in pthread_mutex_lock pthread_cond_wait pthread_rwlock_rdlock flock fcntl fcntl64 lockf lockf64 close; do
  check "$f exported" grep -q " $f\$" "$WORK/exports"
done

finish
