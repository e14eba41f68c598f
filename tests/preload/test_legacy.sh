#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# test_legacy.sh LIB BUILD_DIR - the legacy program (tests/preload/legacy.c:
# plain pthreads and file locks, a counter in a file updated by
# read-modify-write with a sleep inside) run as several processes at once.
# Under the preload every count is exact, no reader sees a half-updated
# record and the condvar turns alternate; the same runs without the preload
# lose updates (or tear reads), which shows each check can fail.  Also: a
# stripped copy mapped by exe+0xOFFSET, fork with pthread_atfork handlers,
# two lock-file paths mapped to one name, file locks released by exit()
# and by fclose().  Run under tools/with-redis.sh.
. "$(dirname "$0")/lib.sh"

: "${DISTLOCK_URL:?run under tools/with-redis.sh}"
export DISTLOCK_PREFIX="dlplegacy$$:"
LEGACY=$BIN/preload_legacy
STRIPPED=$BIN/preload_legacy_stripped
CTR=$WORK/ledger
A=$WORK/a.lock
B=$WORK/b.lock
OFF=$(nm "$LEGACY" | awk '$3 == "g_ledger_lock" { print $1 }' | sed 's/^0*//')
export DISTLOCK_MAP="ledger=mutex:g_ledger_lock;cfg=rwlock:cfg_lock;lib=mutex:lib_lock;jobs=flock:$A;jobs=flock:$B"
P=4

# group PRELOAD(0|1) SCRIPT: runs P copies of the shell SCRIPT at once, with
# I set to the copy's number (1..P) and PRE to the interposer (empty for
# a run without it: the script puts LD_PRELOAD=$PRE on the legacy program
# only).  Leaves outputs in $WORK/out.* and in gstatus the number of
# copies that failed.
export LEGACY STRIPPED CTR A B
group() {
  local pre=$1 script=$2 pids=() i
  for i in $(seq "$P"); do
    if [ "$pre" = 1 ]; then
      I=$i PRE=$LIB bash -c "$script" >"$WORK/out.$i" 2>"$WORK/err.$i" &
    else
      I=$i PRE= bash -c "$script" >"$WORK/out.$i" 2>"$WORK/err.$i" &
    fi
    pids+=($!)
  done
  gstatus=0
  for i in "${pids[@]}"; do
    wait "$i" || gstatus=$((gstatus + 1))
  done
}

stderr_of_group() { cat "$WORK"/err.* 2>/dev/null | head -5; }

# counted NAME EXPECTED SCRIPT: exact with the preload, lost updates without
# (the run without is tried up to 3 times: it must lose at least once).
counted() {
  local name=$1 want=$2 script=$3
  rm -f "$CTR" "$A" "$B"
  local t0=$SECONDS
  group 1 "$script"
  local got
  got=$(counter "$CTR")
  if [ "$gstatus" -eq 0 ] && [ "$got" -eq "$want" ]; then
    ok "$name: $got of $want with the preload ($((SECONDS - t0)) s)"
  else
    fail "$name: $got of $want with the preload, $gstatus copies failed: $(stderr_of_group)"
  fi
  local lost=0 tries
  for tries in 1 2 3; do
    rm -f "$CTR" "$A" "$B"
    group 0 "$script"
    got=$(counter "$CTR")
    if [ "$got" -lt "$want" ]; then lost=1; break; fi
  done
  if [ "$lost" = 1 ]; then
    ok "$name: without the preload, updates are lost ($got of $want)"
  else
    fail "$name: without the preload no update was lost: the test cannot fail"
  fi
}

counted "mutex" $((P * 2 * 40)) 'LD_PRELOAD=$PRE exec $LEGACY mutex $CTR 40 2'
counted "file-static mutex in a library" $((P * 2 * 40)) 'LD_PRELOAD=$PRE exec $LEGACY lib $CTR 40 2'
counted "stripped copy, exe+0x$OFF" $((P * 2 * 40)) \
  "DISTLOCK_MAP=ledger=mutex:exe+0x$OFF LD_PRELOAD=\$PRE exec \$STRIPPED mutex \$CTR 40 2"
counted "condvar turns" $((P * 2 * 25)) 'LD_PRELOAD=$PRE exec $LEGACY cond $CTR 25'
check "condvar turns alternate strictly in every process" \
  bash -c "! grep -h out_of_turn= $WORK/out.* | grep -qv 'out_of_turn=0'"
counted "fork with pthread_atfork handlers" $((P * 3 * 15)) 'LD_PRELOAD=$PRE exec $LEGACY fork $CTR 15'
# Two lock files, one name: copies 1 and 3 lock a.lock, 2 and 4 b.lock.
counted "flock, two paths mapped to one name" $((P * 30)) \
  'f=$([ $((I % 2)) = 1 ] && echo $A || echo $B); LD_PRELOAD=$PRE exec $LEGACY flock $f $CTR 30'
counted "flock, fcntl (unlock by close), lockf, OFD locks on two paths" $((P * 30)) \
  'm=(x flock fcntl lockf ofd); f=$([ $((I % 2)) = 1 ] && echo $A || echo $B)
   LD_PRELOAD=$PRE exec $LEGACY ${m[I]} $f $CTR 30'

# rwlock: writers update two fields one by one; readers must never see them differ.
rw_run() {
  rm -f "$CTR"
  group "$1" 'LD_PRELOAD=$PRE exec $LEGACY rwlock $CTR 15 1 2'
  torn=$(cat "$WORK"/out.* | sed -n 's/^torn=//p' | awk '{ s += $1 } END { print s + 0 }')
  a=$(counter "$CTR")
  b=$(tail -c +33 "$CTR" 2>/dev/null | head -c 20 | tr -dc 0-9)
  b=$((10#${b:-0}))
}
rw_run 1
if [ "$gstatus" -eq 0 ] && [ "$torn" -eq 0 ] && [ "$a" -eq $((P * 15)) ] && [ "$b" -eq "$a" ]; then
  ok "rwlock: $a of $((P * 15)) updates, no torn reads with the preload"
else
  fail "rwlock with the preload: a=$a b=$b torn=$torn, $gstatus failed: $(stderr_of_group)"
fi
bad=0
for tries in 1 2 3; do
  rw_run 0
  if [ "$torn" -gt 0 ] || [ "$a" -ne $((P * 15)) ]; then bad=1; break; fi
done
check "rwlock without the preload: torn reads ($torn) or lost updates ($a of $((P * 15)))" test "$bad" = 1

# A file lock held at exit() is released then, not a lease later.
rm -f "$A" "$B"
export DISTLOCK_LEASE_MS=20000
LD_PRELOAD=$LIB "$LEGACY" hold "$A" 400 >"$WORK/hold.out" 2>&1 &
hp=$!
for _ in $(seq 200); do grep -q held "$WORK/hold.out" && break; sleep 0.02; done
w=$(LD_PRELOAD=$LIB "$LEGACY" trywait "$B" 2>&1 | sed -n 's/^waited_ms=//p')
wait "$hp"
check "lock held until exit: the other path waited ${w:-?} ms (held 400 ms, lease 20 s)" \
  test -n "$w" -a "${w:-0}" -ge 250 -a "${w:-99999}" -lt 4000

# A descriptor closed behind the wrappers' back (fclose) lets go within ~1 s.
LD_PRELOAD=$LIB "$LEGACY" fclose "$A" 4000 >"$WORK/hold.out" 2>&1 &
hp=$!
for _ in $(seq 200); do grep -q held "$WORK/hold.out" && break; sleep 0.02; done
w=$(LD_PRELOAD=$LIB "$LEGACY" trywait "$B" 2>&1 | sed -n 's/^waited_ms=//p')
alive=0
kill -0 "$hp" 2>/dev/null && alive=1
wait "$hp"
check "fclose() without unlock: released while the process lives (waited ${w:-?} ms)" \
  test -n "$w" -a "${w:-99999}" -lt 3000 -a "${w:-0}" -ge 100 -a "$alive" = 1
unset DISTLOCK_LEASE_MS

finish
