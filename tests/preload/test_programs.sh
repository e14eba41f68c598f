#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# test_programs.sh LIB BUILD_DIR - real programs that take whole-file
# locks, nobody here wrote them, under the interposer: util-linux flock(1)
# (flock()), moreutils' lckdo (fcntl F_SETLKW), runit's chpst -l,
# daemontools' setlock, GNU dbm's gdbmtool (flock LOCK_NB), dpkg's
# database lock (fcntl F_SETLK) and sqlite3 (byte ranges: local).  Two
# "hosts" lock one name through two different paths (HA and HB, each mapped to `jobs`, as
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
#              with the one-line reason;
#   gdbmtool:  a writer on one host refuses the other host's writers and
#              readers at once ("Can't be writer"), readers share;
#   dpkg:      dpkg -i on one host while the other's runs is refused at
#              once with dpkg's message, and installs once it is done;
#   sqlite3:   runs unchanged with its file mapped, and takes no
#              distributed lock (its locks are byte ranges);
#   lock, then exec (flock -F, chpst -l, setlock, lckdo -e): the command,
#              static or not, stays excluded past several leases; it lets
#              go when it unlocks or ends; refused, it gives the lock back
#              at once.
# Run under tools/with-redis.sh.
. "$(dirname "$0")/lib.sh"

: "${DISTLOCK_URL:?run under tools/with-redis.sh}"
export DISTLOCK_PREFIX="dlpprog$$:"
command -v flock >/dev/null || { echo "flock(1) not found (util-linux)"; exit 1; }
command -v lckdo >/dev/null || { echo "lckdo not found (moreutils: tools/deps.sh --test)"; exit 1; }
command -v chpst >/dev/null || { echo "chpst not found (runit: tools/deps.sh --test)"; exit 1; }
command -v setlock >/dev/null || { echo "setlock not found (daemontools: tools/deps.sh --test)"; exit 1; }
command -v gdbmtool >/dev/null || { echo "gdbmtool not found (gdbmtool: tools/deps.sh --test)"; exit 1; }
command -v sqlite3 >/dev/null || { echo "sqlite3 not found (sqlite3: tools/deps.sh --test)"; exit 1; }
command -v dpkg-deb >/dev/null || { echo "dpkg-deb not found (dpkg)"; exit 1; }

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

# --- gdbmtool (GNU dbm): gdbm_open locks the whole database file,
# flock(LOCK_EX|LOCK_NB) to write and LOCK_SH|LOCK_NB to read, and fails
# at once when it cannot ("Can't be writer"; gdbmtool still exits 0).
# Across the hosts' paths: a writer keeps the other host's writers and
# readers out; readers share.
GA=$WORK/hosta/data.gdbm
GB=$WORK/hostb/data.gdbm
ong() {
  local h=$1 path=$GA; shift
  [ "$h" = b ] && path=$GB
  DISTLOCK_MAP="data=flock:$path" LD_PRELOAD=$LIB "$@"
}
# held_in_redis NAME: a write or read hold of lock NAME is in Redis.
held_in_redis() {
  [ "$(redis-cli -u "$DISTLOCK_URL" EXISTS "${DISTLOCK_PREFIX}{$1}" "${DISTLOCK_PREFIX}{$1}:r")" != 0 ]
}
# gdbm_hold HOST [-r]: gdbmtool holds the database open (it opens it at
# its first command) until $WORK/release.
gdbm_hold() {
  local h=$1 path=$GA; shift
  [ "$h" = b ] && path=$GB
  rm -f "$WORK/release"
  ( if [ "${1:-}" = -r ]; then echo count; else echo "store $h 1"; fi
    for _ in $(seq 1000); do [ -e "$WORK/release" ] && break; sleep 0.01; done
    echo quit ) | ong "$h" gdbmtool -q -N "$@" "$path" >/dev/null 2>&1 &
  HOLDER=$!
  for _ in $(seq 500); do held_in_redis data && return 0; sleep 0.01; done
  return 1
}
ong a gdbmtool -q -N -n "$GA" store seed 1 && ong b gdbmtool -q -N -n "$GB" store seed 1
check "gdbmtool creates a database on each host" test -s "$GA" -a -s "$GB"
gdbm_hold a
check "gdbmtool writing on host a holds the distributed lock" held_in_redis data
ong b gdbmtool -q -N "$GB" store b1 1 >/dev/null 2>"$WORK/err"
check "gdbmtool: a writer on host b while host a writes: refused at once ($(head -c 200 "$WORK/err"))" \
  grep -q "Can't be writer" "$WORK/err"
ong b gdbmtool -q -N -r "$GB" count >/dev/null 2>"$WORK/err"
check "gdbmtool: a reader on host b while host a writes: refused at once ($(head -c 200 "$WORK/err"))" \
  grep -q "Can't be reader" "$WORK/err"
gdbmtool -q -N "$GB" store b2 1 2>"$WORK/err"
check "without the interposer host b writes beside host a" test ! -s "$WORK/err"
release
ong b gdbmtool -q -N "$GB" store b3 1 2>"$WORK/err"
check "gdbmtool: host a done, host b writes ($(head -c 200 "$WORK/err"))" test ! -s "$WORK/err"
gdbm_hold a -r
check "gdbmtool reading on host a holds the distributed lock (shared)" held_in_redis data
ong b gdbmtool -q -N -r "$GB" count >"$WORK/out" 2>"$WORK/err"
check "gdbmtool: readers of both hosts at once ($(head -c 200 "$WORK/out$WORK/err"))" \
  bash -c "[ ! -s '$WORK/err' ] && grep -q 'items in the database' '$WORK/out'"
ong b gdbmtool -q -N "$GB" store b4 1 >/dev/null 2>"$WORK/err"
check "gdbmtool: a writer on host b while host a reads: refused" grep -q "Can't be writer" "$WORK/err"
release
ong b gdbmtool -q -N -r "$GB" fetch b1 >/dev/null 2>"$WORK/err"
check "gdbmtool: the refused write stored nothing" grep -q "No such item" "$WORK/err"

# --- dpkg: its database lock is fcntl(F_SETLK) on the whole of
# lock-frontend and lock in the admin directory, failing at once.  Each
# host has its own admin directory (as hosts do); the package's postinst
# waits for $WORK/release, so host a holds the lock while host b tries.
mkdir -p "$WORK/deb/DEBIAN"
cat >"$WORK/deb/DEBIAN/control" <<CTL
Package: dlwait
Version: 1.0
Architecture: all
Maintainer: distlock tests <tests@example.invalid>
Description: waits in its postinst
CTL
printf '#!/bin/sh\ntouch "%s/inpost"\nfor i in $(seq 1000); do [ -e "%s/release" ] && exit 0; sleep 0.01; done\n' \
  "$WORK" "$WORK" >"$WORK/deb/DEBIAN/postinst"
chmod 755 "$WORK/deb/DEBIAN/postinst"
dpkg-deb -b "$WORK/deb" "$WORK/dlwait.deb" >/dev/null 2>"$WORK/err"
check "dpkg-deb builds a test package ($(head -c 200 "$WORK/err"))" test -s "$WORK/dlwait.deb"
for h in a b; do
  mkdir -p "$WORK/host$h/dpkg/updates" "$WORK/host$h/dpkg/info" "$WORK/host$h/root"
  touch "$WORK/host$h/dpkg/status"
done
# dp WITH HOST ARGS...: dpkg on host HOST's admin directory (WITH 1: with
# the interposer, its two lock files mapped to the names hosts share).
dp() {
  local with=$1 h=$2; shift 2
  local a=$WORK/host$h/dpkg
  local cmd=(dpkg --admindir="$a" --instdir="$WORK/host$h/root" --force-not-root
             --force-script-chrootless "$@")
  if [ "$with" = 1 ]; then
    DISTLOCK_MAP="dpkg-frontend=flock:$a/lock-frontend;dpkg=flock:$a/lock" LD_PRELOAD=$LIB "${cmd[@]}"
  else
    "${cmd[@]}"
  fi
}
for with in 1 0; do
  rm -f "$WORK/inpost" "$WORK/release"
  dp "$with" a -i "$WORK/dlwait.deb" >"$WORK/a.out" 2>&1 &
  holder=$!
  await "$WORK/inpost"
  t0=$(date +%s%N)
  dp "$with" b -i "$WORK/dlwait.deb" >"$WORK/out" 2>&1; rc=$?
  ms=$(elapsed_ms "$t0")
  touch "$WORK/release"
  wait "$holder"; arc=$?
  if [ "$with" = 1 ]; then
    check "dpkg -i on host b while host a's runs: refused at once (rc $rc, $ms ms), host a's done (rc $arc): $(grep -m1 error "$WORK/out")" \
      bash -c "[ $rc -ne 0 ] && [ $ms -lt 2000 ] && [ $arc -eq 0 ] && grep -q 'lock was locked by another process' '$WORK/out'"
    dp 1 b -i "$WORK/dlwait.deb" >"$WORK/out" 2>&1; rc=$?
    check "dpkg -i on host b once host a's is done: installed (rc $rc)" test "$rc" -eq 0
    dp 0 a -r dlwait >/dev/null 2>&1; dp 0 b -r dlwait >/dev/null 2>&1
  else
    check "without the interposer host b's dpkg runs beside host a's (rc $rc)" test "$rc" -eq 0
  fi
done

# --- sqlite3: its locks are byte ranges (fcntl on the lock page at
# 1 GiB), which stay local: mapping the database file changes nothing
# (no distributed lock; the whole-file F_UNLCK ending each transaction is
# harmless), and exclusion across hosts needs a lock around the program.
SA=$WORK/hosta/t.db
rm -f "$WORK/release" "$WORK/intx"
DISTLOCK_MAP="tdb=flock:$SA" LD_PRELOAD=$LIB sqlite3 "$SA" 'create table t(v int); insert into t values(0);'
( echo 'begin exclusive;'; echo 'update t set v = v + 1;'; echo ".shell touch '$WORK/intx'"
  for _ in $(seq 1000); do [ -e "$WORK/release" ] && break; sleep 0.01; done
  echo 'commit;' ) | DISTLOCK_MAP="tdb=flock:$SA" LD_PRELOAD=$LIB sqlite3 "$SA" >/dev/null 2>"$WORK/err" &
holder=$!
await "$WORK/intx"
held_in_redis tdb; inredis=$?
touch "$WORK/release"
wait "$holder"; rc=$?
v=$(DISTLOCK_MAP="tdb=flock:$SA" LD_PRELOAD=$LIB sqlite3 "$SA" 'select v from t;')
check "sqlite3 with its database mapped: runs unchanged (rc $rc, v $v), no distributed lock during an exclusive transaction" \
  test "$rc" -eq 0 -a "$v" = 1 -a "$inredis" -ne 0 -a ! -s "$WORK/err"

# --- lock, then exec: flock -F, chpst -l (runit), setlock (daemontools),
# lckdo -e.  The launcher takes the lock and execs the command, which holds
# it from then on; the interposer hands the distributed hold to a keeper
# at the exec, which keeps it (renewed past any number of leases) while the
# command holds the file lock and gives it back the moment it ends.
# A short lease: without a keeper the hold lapses within a second.
command -v gcc >/dev/null || { fail "gcc not found"; finish; exit; }
# A statically linked command, which no LD_PRELOAD enters:
#   target hold SECONDS              sleeps
#   target section IN CTR LOG MS     the critical section: an overlap shows
#                                    as a failed mkdir, a lost update as a
#                                    short count (read, pause MS, write)
cat >"$WORK/target.c" <<'EOF'
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
static void pause_ms(long ms)
{
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
    while (nanosleep(&ts, &ts) != 0)
        ;
}
int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "hold") == 0) {
        pause_ms((long)(atof(argv[2]) * 1000));
        return 0;
    }
    if (argc != 6 || strcmp(argv[1], "section") != 0)
        return 2;
    if (mkdir(argv[2], 0700) != 0) {
        FILE *log = fopen(argv[4], "a");
        if (log) {
            fputs("overlap\n", log);
            fclose(log);
        }
    }
    long v = 0;
    FILE *f = fopen(argv[3], "r");
    if (f) {
        if (fscanf(f, "%ld", &v) != 1)
            v = 0;
        fclose(f);
    }
    pause_ms(atol(argv[5]));
    f = fopen(argv[3], "w");
    if (!f)
        return 3;
    fprintf(f, "%ld\n", v + 1);
    fclose(f);
    rmdir(argv[2]);
    return 0;
}
EOF
TARGET=$WORK/target
gcc -static -O2 -o "$TARGET" "$WORK/target.c" 2>"$WORK/gcc.err" ||
  { fail "gcc -static (libc6-dev's libc.a): $(head -c 300 "$WORK/gcc.err")"; finish; exit; }
check "the target is statically linked" bash -c "! ldd '$TARGET' >/dev/null 2>&1"

# launch TOOL HOST CMD...: CMD under the lock-then-exec TOOL, on host HOST.
launch() {
  local tool=$1 h=$2 path=$HA; shift 2
  [ "$h" = b ] && path=$HB
  case $tool in
    flock) on "$h" flock -F "$path" "$@" ;;
    chpst) on "$h" chpst -l "$path" "$@" ;;
    setlock) on "$h" setlock "$path" "$@" ;;
    lckdo) on "$h" lckdo -e "$path" "$@" ;;
  esac
}
# probe_while TOOL WHAT SECONDS CMD...: CMD holds on host a for about
# SECONDS (several leases); host b tries every 0.5 s and must be refused
# each time, and gets the lock at once when CMD ends.
# Only a try that began after the hold was in Redis and ended before the
# holder did counts: on a busy machine the launch can take longer than a
# probe's pause, and the probes (each a process with the interposer) can
# outlast the command.  running PID: PID has not ended (a zombie, ended
# but not yet waited for, has).
running() {
  local st
  st=$(cut -d')' -f2 "/proc/$1/stat" 2>/dev/null) || return 1
  case $st in " Z"* | " X"* | "") return 1 ;; esac
}
probe_while() {
  local tool=$1 what=$2 secs=$3 got=0 tries=0 i rc_b; shift 3
  launch "$tool" a "$@" &
  local holder=$!
  for i in $(seq 500); do held_in_redis jobs && break; sleep 0.01; done
  local probes
  probes=$(awk -v s="$secs" 'BEGIN { print int((s - 1) / 0.5) }')
  for i in $(seq "$probes"); do
    held_in_redis jobs && running "$holder" || break
    on b flock -n "$HB" true 2>>"$WORK/err.probe"; rc_b=$?
    running "$holder" || break
    tries=$((tries + 1))
    [ "$rc_b" -eq 0 ] && got=$((got + 1))
    sleep 0.5
  done
  wait "$holder"; local rc=$?
  local t0 after ms
  t0=$(date +%s%N)
  on b flock -w 10 "$HB" true 2>>"$WORK/err.probe"; after=$?
  ms=$(elapsed_ms "$t0")
  check "$tool with $what holding $((secs * 1000 / DISTLOCK_LEASE_MS)) leases: host b kept out $((tries - got)) of $tries tries, holder rc $rc; then in at once (rc $after, $ms ms)" \
    test "$got" -eq 0 -a "$tries" -ge 3 -a "$rc" -eq 0 -a "$after" -eq 0 -a "$ms" -lt 2000
}
# Leases of 2 s: a 1 s lease lapsed beside a CPU hog (ASan build, load
# 5-7 on 2 cores), the keeper's renewals late by more than its two thirds.
export DISTLOCK_LEASE_MS=2000
rm -f "$WORK/err.probe"
probe_while chpst "a static target" 8 "$TARGET" hold 8
probe_while flock "a static target" 8 "$TARGET" hold 8
probe_while setlock "a target with the interposer" 6 sh -c 'sleep 6'
probe_while lckdo "a target with the interposer" 6 sh -c 'sleep 6'
check "no lapse was seen: nobody acquired after a lease ran out" \
  bash -c "! grep -q 'lease ran out' '$WORK/err.probe'"

# The same, two hosts at once: each section (2.6 s) outlasts the lease.
exec_sections() {
  local tool=$1 pids=() h p
  rm -f "$CTR" "$LOG"; rmdir "$IN" 2>/dev/null
  for h in a b; do
    (
      for _ in 1 2; do
        launch "$tool" "$h" "$TARGET" section "$IN" "$CTR" "$LOG" 2600 || exit 1
      done
    ) 2>>"$WORK/err.sections" &
    pids+=($!)
  done
  gstatus=0
  for p in "${pids[@]}"; do wait "$p" || gstatus=1; done
}
for tool in chpst flock; do
  exec_sections "$tool"
  got=$(counter "$CTR")
  overlaps=$(lines "$LOG")
  check "$tool exec'ing a static target on two hosts, sections past the lease: $got of 4 updates, $overlaps overlaps" \
    test "$gstatus" -eq 0 -a "$got" -eq 4 -a "$overlaps" -eq 0
done

# The command unlocks what it inherited (flock -u on the descriptor): the
# other host gets in while it still runs.  FD_OF: the descriptor of $1 in
# the shell that runs it.
FD_OF='for f in /proc/$$/fd/*; do [ "$(readlink "$f")" = "$1" ] && fd=${f##*/}; done'
rm -f "$WORK/unlocked"
launch flock a sh -c "$FD_OF"'; flock -u "$fd" && touch "$WORK/unlocked"; sleep 3' sh "$HA" &
holder=$!
await "$WORK/unlocked"
t0=$(date +%s%N)
on b flock -w 5 "$HB" true; rc=$?
ms=$(elapsed_ms "$t0")
kill -0 "$holder" 2>/dev/null; running=$?
check "the command unlocks its inherited lock: host b in after $ms ms (rc $rc), the command still running ($running)" \
  test -e "$WORK/unlocked" -a "$rc" -eq 0 -a "$ms" -lt 2000 -a "$running" -eq 0
wait "$holder"

# The command locks its inherited lock again itself (exec flock 3 ...):
# its own hold from then on, no deadlock with the keeper, still excluded.
probe_while flock "a target that locks it again" 6 sh -c "$FD_OF"'; exec flock -x "$fd" sleep 6' sh "$HA"

# A kept hold lost while the static target holds the file (its key
# deleted): the keeper says so, and under DISTLOCK_ON_LOSS=abort ends the
# target with SIGABRT.
for loss in warn abort; do
  DISTLOCK_ON_LOSS=$loss launch flock a "$TARGET" hold 3 2>"$WORK/err.loss" &
  holder=$!
  sleep 1
  redis-cli -u "$DISTLOCK_URL" DEL "${DISTLOCK_PREFIX}{jobs}" >/dev/null
  wait "$holder"; rc=$?
  want=0; [ "$loss" = abort ] && want=134
  check "DISTLOCK_ON_LOSS=$loss, the kept hold deleted: told, the target's status $rc: $(head -c 250 "$WORK/err.loss")" \
    bash -c "[ $rc -eq $want ] && grep -q 'kept for pid .* found lapsed in Redis' '$WORK/err.loss'"
done
unset DISTLOCK_LEASE_MS

# A command the interposer refuses (here a map entry for sh with a symbol
# sh lacks): it never runs, and the lock is given back at once; the other
# host gets it without waiting a lease and without EOWNERDEAD.
DISTLOCK_MAP="jobs=flock:$HA;x=mutex:no_such_lock@sh" LD_PRELOAD=$LIB \
  flock -F "$HA" sh -c 'echo inside' >"$WORK/out" 2>"$WORK/err"; rc=$?
check "flock -F, the command refused: rc $rc, not run: $(head -c 200 "$WORK/err")" \
  test "$rc" -ne 0 -a ! -s "$WORK/out"
t0=$(date +%s%N)
on b flock -w 10 "$HB" true 2>"$WORK/err"; rc=$?
ms=$(elapsed_ms "$t0")
check "... and host b gets the lock at once: rc $rc after $ms ms, no lapse ($(head -c 200 "$WORK/err"))" \
  bash -c "[ $rc -eq 0 ] && [ $ms -lt 2000 ] && ! grep -q 'lease ran out' '$WORK/err'"

finish
