#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# test_programs.sh LIB BUILD_DIR - real programs that take whole-file
# locks, nobody here wrote them, under the interposer: util-linux flock(1)
# (flock()) and moreutils' lckdo (fcntl F_SETLKW).  Two "hosts" lock one
# name through two different paths (HA and HB, each mapped to `jobs`, as
# separate machines would have it), so the kernel never sees them
# conflict: whatever exclusion there is, the distributed lock made it.
#   exclusive: sections from both hosts never overlap, no update is lost
#              (and without the interposer they do overlap);
#   shared:    readers of both hosts are inside at once; a writer is not;
#   -n:        fails at once while the other host holds;
#   -w -E:     gives up after about the time asked, with the exit code asked
#              (flock(1) arms alarm() and needs EINTR from the blocked call);
#   the descriptor idiom `( flock 9 || exit 1; work ) 9>FILE`, whose lock
#              would outlive flock(1) and its distributed hold: refused
#              with the one-line reason; so is a lock held across exec
#              (lckdo -e).
# Run under tools/with-redis.sh.
. "$(dirname "$0")/lib.sh"

: "${DISTLOCK_URL:?run under tools/with-redis.sh}"
export DISTLOCK_PREFIX="dlpprog$$:"
command -v flock >/dev/null || { echo "flock(1) not found (util-linux)"; exit 1; }
command -v lckdo >/dev/null || { echo "lckdo not found (moreutils: tools/deps.sh --test)"; exit 1; }

mkdir -p "$WORK/hosta" "$WORK/hostb"
HA=$WORK/hosta/jobs.lock
HB=$WORK/hostb/jobs.lock
export CTR=$WORK/counter IN=$WORK/inside LOG=$WORK/overlaps
# on HOST CMD...: CMD as a program of host HOST (a or b), with the
# interposer and that host's map.
on() {
  local h=$1; shift
  local path=$HA
  [ "$h" = b ] && path=$HB
  DISTLOCK_MAP="jobs=flock:$path" LD_PRELOAD=$LIB "$@"
}
# The critical section: an overlap shows as a failed mkdir; a lost
# update as a short count (read, pause, write).
SECTION='mkdir "$IN" 2>/dev/null || echo overlap >>"$LOG"
v=$(cat "$CTR" 2>/dev/null || echo 0); sleep 0.01; echo $((v + 1)) >"$CTR"
rmdir "$IN" 2>/dev/null'
export SECTION

# until FILE exists (10 s at most): synchronise on a marker, not a sleep.
await() {
  local i
  for i in $(seq 1000); do [ -e "$1" ] && return 0; sleep 0.01; done
  return 1
}
# lines FILE: its number of lines, 0 if it does not exist.
lines() { if [ -f "$1" ]; then wc -l <"$1"; else echo 0; fi; }
# elapsed_ms T0_NS: ms since T0_NS (date +%s%N).
elapsed_ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }

# exclusive TOOL PRELOAD: 2 processes per host, ROUNDS sections each.
ROUNDS=8
exclusive() {
  local tool=$1 with=$2 pids=() h p i
  rm -f "$CTR" "$LOG"; rmdir "$IN" 2>/dev/null
  for h in a b; do
    for p in 1 2; do
      (
        for i in $(seq $ROUNDS); do
          path=$HA; [ "$h" = b ] && path=$HB
          if [ "$tool" = flock ]; then cmd=(flock "$path" sh -c "$SECTION")
          else cmd=(lckdo -w "$path" sh -c "$SECTION"); fi
          if [ "$with" = 1 ]; then on "$h" "${cmd[@]}"; else "${cmd[@]}"; fi || exit 1
        done
      ) 2>>"$WORK/err.excl" &
      pids+=($!)
    done
  done
  gstatus=0
  for p in "${pids[@]}"; do wait "$p" || gstatus=1; done
}

for tool in flock lckdo; do
  t0=$SECONDS
  exclusive "$tool" 1
  got=$(counter "$CTR")
  overlaps=$(lines "$LOG")
  check "$tool exclusive across two hosts' paths: $got of $((4 * ROUNDS)) updates, $overlaps overlaps ($((SECONDS - t0)) s)" \
    test "$gstatus" -eq 0 -a "$got" -eq $((4 * ROUNDS)) -a "$overlaps" -eq 0
done
# Without the interposer the two paths are two locks: sections overlap.
lost=0
for tries in 1 2 3; do
  exclusive flock 0
  overlaps=$(lines "$LOG")
  [ "$overlaps" -gt 0 ] && { lost=1; break; }
done
check "without the interposer the two paths do not exclude ($overlaps overlaps)" test "$lost" = 1

# --- shared: a reader on each host inside at once; a writer kept out
shared() {
  local tool=$1 sflag=-s
  rm -f "$WORK"/r.* "$WORK/w.done"
  # Each reader marks itself inside, then waits (5 s at most) for the
  # other's mark: both inside at once, or the wait runs out.
  READER='touch "$WORK/r.$1"; for i in $(seq 500); do [ -e "$WORK/r.$2" ] && exit 0; sleep 0.01; done; exit 5'
  if [ "$tool" = flock ]; then
    on a flock -s "$HA" sh -c "$READER" sh a b & ra=$!
    on b flock -s "$HB" sh -c "$READER" sh b a & rb=$!
  else
    on a lckdo -s -w "$HA" sh -c "$READER" sh a b & ra=$!
    on b lckdo -s -w "$HB" sh -c "$READER" sh b a & rb=$!
  fi
  wait $ra; sa=$?
  wait $rb; sb=$?
  check "$tool shared: readers of both hosts inside at once (exit $sa, $sb)" test "$sa" -eq 0 -a "$sb" -eq 0
}
export WORK
shared flock
shared lckdo

# A reader on host a holds until told; host b's writer cannot get in.
hold() {   # hold TOOL HOST MODE: holds until $WORK/release exists; marks $WORK/held
  local tool=$1 h=$2 mode=$3 path=$HA
  [ "$h" = b ] && path=$HB
  rm -f "$WORK/held" "$WORK/release"
  local body='touch "$WORK/held"; for i in $(seq 1000); do [ -e "$WORK/release" ] && exit 0; sleep 0.01; done'
  if [ "$tool" = flock ]; then
    on "$h" flock "$mode" "$path" sh -c "$body" &
  else
    local m=-x; [ "$mode" = -s ] && m=-s
    on "$h" lckdo "$m" -w "$path" sh -c "$body" &
  fi
  HOLDER=$!
  await "$WORK/held"
}
release() { touch "$WORK/release"; wait "$HOLDER"; }

hold flock a -s
on b flock -x -n -E 9 "$HB" true; rc=$?
check "flock: a writer on host b while host a reads: -n gives -E 9 ($rc)" test "$rc" -eq 9
on b flock -s -n "$HB" true; rc=$?
check "flock: a second reader on host b gets in ($rc)" test "$rc" -eq 0
release

# --- -n and -w with -E while the other host holds
hold flock a -x
t0=$(date +%s%N)
on b flock -n -E 9 "$HB" echo ran >"$WORK/out"; rc=$?
ms=$(elapsed_ms "$t0")
check "flock -n while host a holds: exit 9 at once ($ms ms), the command not run" \
  test "$rc" -eq 9 -a ! -s "$WORK/out"
t0=$(date +%s%N)
on b flock -E 7 -w 0.3 "$HB" echo ran >"$WORK/out" 2>"$WORK/err"; rc=$?
ms=$(elapsed_ms "$t0")
holding=0; kill -0 "$HOLDER" 2>/dev/null && holding=1
# 0.3 s asked: never less.  No upper bound in seconds (a loaded machine
# starts a program late): the time-out must have fired while host a still
# held the lock (it holds until told), or flock would have got it (rc 0).
check "flock -E 7 -w 0.3 while host a holds: exit 7 after $ms ms, the command not run" \
  test "$rc" -eq 7 -a "$ms" -ge 280 -a "$holding" = 1 -a ! -s "$WORK/out"
queued=$(redis-cli -u "$DISTLOCK_URL" ZCARD "${DISTLOCK_PREFIX}{jobs}:q")
check "the time-out left nobody queued in Redis ($queued)" test "$queued" = 0
release

hold lckdo a -x
on b lckdo "$HB" echo ran >"$WORK/out" 2>/dev/null; rc=$?
check "lckdo without -w while host a holds: fails at once (exit $rc), the command not run" \
  test "$rc" -ne 0 -a ! -s "$WORK/out"
t0=$(date +%s%N)
on b lckdo -W 1 "$HB" echo ran >"$WORK/out" 2>/dev/null; rc=$?
ms=$(elapsed_ms "$t0")
holding=0; kill -0 "$HOLDER" 2>/dev/null && holding=1
check "lckdo -W 1 while host a holds: gives up after $ms ms (exit $rc)" \
  test "$rc" -ne 0 -a "$ms" -ge 900 -a "$holding" = 1 -a ! -s "$WORK/out"
release
on b flock -n "$HB" true; rc=$?
check "released: host b takes it at once ($rc)" test "$rc" -eq 0

# --- the descriptor idiom: refused, with the one-line reason
for n in 1 2; do
  flags=""; [ "$n" = 2 ] && flags="-n"
  on b bash -c "( flock $flags 9 || exit 1; echo inside ) 9>'$HB'" >"$WORK/out" 2>"$WORK/err"; rc=$?
  lines=$(grep -c '^distlock: ' "$WORK/err")
  check "( flock $flags 9 || exit 1; work ) 9>FILE: refused, rc $rc, the work not run: $(head -c 300 "$WORK/err")" \
    bash -c "[ $rc -ne 0 ] && [ ! -s '$WORK/out' ] && [ $lines -eq 1 ] && grep -qF \"distlock jobs -c '...'\" '$WORK/err'"
done
# ... and nothing was left locked: the name is free
on a flock -n "$HA" true; rc=$?
check "after the refusal the name is free ($rc)" test "$rc" -eq 0

# --- a lock held across exec (lckdo -e): refused in the program it runs
on b lckdo -e "$HB" sh -c 'echo inside' >"$WORK/out" 2>"$WORK/err"; rc=$?
check "lckdo -e (lock, then exec): refused, rc $rc: $(head -c 300 "$WORK/err")" \
  bash -c "[ $rc -ne 0 ] && [ ! -s '$WORK/out' ] && grep -qF 'distlock jobs -- COMMAND' '$WORK/err'"

finish
