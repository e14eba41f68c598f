#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# test_launch.sh LIB BUILD_DIR - the interposer through launchers (SPEC
# "The interposer", "Launchers").  The legacy programs run as 3 processes
# at once with LD_PRELOAD and DISTLOCK_MAP put on a launcher, not on the
# program: timeout and sh -c and a bash wrapper script (fork + exec), nice
# and env (a direct exec), and two launchers in a row; every count must be
# exact.  A misspelt symbol in the real program still stops it, through a
# launcher, with its reason and before it touches the ledger.  One map
# with @PROGRAM entries for two different programs serves both at once.
# Run under tools/with-redis.sh.
. "$(dirname "$0")/lib.sh"

: "${DISTLOCK_URL:?run under tools/with-redis.sh}"
export DISTLOCK_PREFIX="dlplaunch$$:"
LEGACY=$BIN/preload_legacy
BOOKS=$BIN/preload_legacy_books
CTR=$WORK/ledger
A=$WORK/a.lock
MAP="ledger=mutex:g_ledger_lock;cfg=rwlock:cfg_lock;lib=mutex:lib_lock;jobs=flock:$A"
P=3

# A service's wrapper script, as found in init scripts: it does a few
# things, then runs the program without exec (bash forks, then execs it).
WRAPPER=$WORK/legacyd-wrapper
cat >"$WRAPPER" <<'EOF'
#!/bin/bash
cd "$(dirname "$0")" || exit 2
mkdir -p run && date >run/started
"$@"
status=$?
rm -f run/started
exit $status
EOF
chmod +x "$WRAPPER"

export LEGACY BOOKS CTR A WRAPPER LIB
# group MAP SCRIPT: P copies of the shell SCRIPT at once (I = 1..P), with
# DISTLOCK_MAP=MAP exported; the script puts LD_PRELOAD=$LIB on a
# launcher.  Leaves outputs in $WORK/out.* / err.* and in gstatus the
# number of copies that failed.
group() {
  local map=$1 script=$2 pids=() i
  for i in $(seq "$P"); do
    I=$i DISTLOCK_MAP=$map bash -c "$script" >"$WORK/out.$i" 2>"$WORK/err.$i" &
    pids+=($!)
  done
  gstatus=0
  for i in "${pids[@]}"; do
    wait "$i" || gstatus=$((gstatus + 1))
  done
}

errors() { cat "$WORK"/err.* 2>/dev/null | head -5; }

# exact NAME EXPECTED MAP SCRIPT
exact() {
  local name=$1 want=$2 map=$3 script=$4 t0=$SECONDS got
  rm -f "$CTR" "$A"
  group "$map" "$script"
  got=$(counter "$CTR")
  if [ "$gstatus" -eq 0 ] && [ "$got" -eq "$want" ]; then
    ok "$name: $got of $want ($((SECONDS - t0)) s)"
  else
    fail "$name: $got of $want, $gstatus copies failed: $(errors)"
  fi
}

N=20
exact "timeout (fork + exec)" $((P * 2 * N)) "$MAP" \
  'LD_PRELOAD=$LIB timeout 60 "$LEGACY" mutex "$CTR" 20 2'
exact "nice (exec), the file-static mutex of a library" $((P * 2 * N)) "$MAP" \
  'LD_PRELOAD=$LIB nice -n 1 "$LEGACY" lib "$CTR" 20 2'
exact "env (exec)" $((P * 2 * N)) "$MAP" \
  'LD_PRELOAD=$LIB env LEGACY_COPY=$I "$LEGACY" mutex "$CTR" 20 2'
exact "sh -c (fork + exec), fork with pthread_atfork handlers" $((P * 3 * 10)) "$MAP" \
  'LD_PRELOAD=$LIB sh -c '\''"$LEGACY" fork "$CTR" 10; exit $?'\'
exact "a bash wrapper script (fork + exec), file locks" $((P * N)) "$MAP" \
  'm=(x flock fcntl lockf); LD_PRELOAD=$LIB "$WRAPPER" "$LEGACY" ${m[I]} "$A" "$CTR" 20'
exact "two launchers in a row: nice, timeout; condvar turns" $((P * 2 * 15)) "$MAP" \
  'LD_PRELOAD=$LIB nice -n 1 timeout 60 "$LEGACY" cond "$CTR" 15'
check "condvar turns alternate strictly in every process" \
  bash -c "! grep -h out_of_turn= $WORK/out.* | grep -qv 'out_of_turn=0'"
exact "three in a row: env, sh -c, the wrapper; rwlock writers" $((P * 10)) "$MAP" \
  'LD_PRELOAD=$LIB env sh -c '\''"$WRAPPER" "$LEGACY" rwlock "$CTR" 10 1 1'\'
torn=$(cat "$WORK"/out.* | sed -n 's/^torn=//p' | awk '{ s += $1 } END { print s + 0 }')
check "rwlock through launchers: no torn reads ($torn)" test "$torn" -eq 0

# A stripped copy, mapped by offset: the offset fits no launcher here (and
# with @PROGRAM no launcher even looks at it).
export STRIPPED=$BIN/preload_legacy_stripped
OFF=$(nm "$LEGACY" | awk '$3 == "g_ledger_lock" { print $1 }' | sed 's/^0*//')
exact "stripped copy by exe+0x$OFF, through nice and sh -c" $((P * 2 * N)) "ledger=mutex:exe+0x$OFF" \
  'LD_PRELOAD=$LIB nice sh -c '\''"$STRIPPED" mutex "$CTR" 20 2; exit $?'\'
exact "stripped copy by exe+0x$OFF@preload_legacy_stripped, through timeout" $((P * 2 * N)) \
  "ledger=mutex:exe+0x$OFF@preload_legacy_stripped" \
  'LD_PRELOAD=$LIB timeout 60 "$STRIPPED" mutex "$CTR" 20 2'

# The README's systemd unit and cron line, with this build's paths: a
# unit's Environment= reaches the ExecStart= process itself (here sh, then
# nice); cron hands the whole line to /bin/sh -c (here sh sets the
# variables on timeout).  Both with a clean environment, as they have.
export SVC_MAP="ledger=mutex:g_ledger_lock@preload_legacy;jobs=flock:$A"
exact "the README's systemd unit: Environment=, ExecStart=/bin/sh -c 'exec nice ...'" $((P * 2 * N)) "" \
  'env -i PATH=/usr/bin:/bin DISTLOCK_URL="$DISTLOCK_URL" DISTLOCK_PREFIX="$DISTLOCK_PREFIX" \
     LD_PRELOAD="$LIB" DISTLOCK_MAP="$SVC_MAP" \
     /bin/sh -c "exec nice -n 5 $LEGACY mutex $CTR 20 2"'
exact "the README's cron line: /bin/sh -c 'VARS... timeout 600 legacy'" $((P * 2 * N)) "" \
  'env -i PATH=/usr/bin:/bin /bin/sh -c "DISTLOCK_URL=$DISTLOCK_URL DISTLOCK_PREFIX=$DISTLOCK_PREFIX LD_PRELOAD=$LIB DISTLOCK_MAP='\''ledger=mutex:g_ledger_lock@preload_legacy'\'' timeout 600 $LEGACY mutex $CTR 20 2 >>$WORK/cron.log.\$\$ 2>&1"'

# The same runs without the interposer do lose updates: the counts above
# are what the distributed locks bought.
lost=0
for tries in 1 2 3; do
  rm -f "$CTR"
  group "$MAP" 'timeout 60 "$LEGACY" mutex "$CTR" 20 2'
  [ "$(counter "$CTR")" -lt $((P * 2 * N)) ] && { lost=1; break; }
done
check "without the interposer, updates are lost ($(counter "$CTR") of $((P * 2 * N)))" test "$lost" = 1

# --- a misspelt symbol in the real program still stops it, with its
# reason, through each launcher, before a single update
misspelt() {
  local name=$1 map=$2 script=$3 want=$4 rc lines
  rm -f "$CTR"
  DISTLOCK_MAP=$map bash -c "$script" >"$WORK/out" 2>"$WORK/err"
  rc=$?
  lines=$(grep -c '^distlock: ' "$WORK/err")
  if [ "$rc" -eq 1 ] && [ "$lines" -eq 1 ] && grep -qF "$want" "$WORK/err" &&
     [ "$(counter "$CTR")" -eq 0 ]; then
    ok "misspelt, $name: $(grep '^distlock: ' "$WORK/err")"
  else
    fail "misspelt, $name: rc=$rc, $(counter "$CTR") updates, stderr: $(head -c 400 "$WORK/err")"
  fi
}
WANT_MUTEX='entry 1 (ledger): symbol "g_ledger_lok" not found in '"$LEGACY"' or its libraries; stopped at the program'"'"'s first pthread mutex lock (an entry for another program: g_ledger_lok@PROGRAM)'
misspelt "timeout" "ledger=mutex:g_ledger_lok;jobs=flock:$A" \
  'LD_PRELOAD=$LIB timeout 60 "$LEGACY" mutex "$CTR" 20 2' "$WANT_MUTEX"
misspelt "sh -c" "ledger=mutex:g_ledger_lok" \
  'LD_PRELOAD=$LIB sh -c '\''"$LEGACY" mutex "$CTR" 20 2; exit $?'\' "$WANT_MUTEX"
misspelt "the wrapper script, a rwlock" "cfg=rwlock:cfg_lok" \
  'LD_PRELOAD=$LIB "$WRAPPER" "$LEGACY" rwlock "$CTR" 10 1 1' \
  'entry 1 (cfg): symbol "cfg_lok" not found in '"$LEGACY"
misspelt "nice, env, a mutex of a library" "lib=mutex:lib_lok" \
  'LD_PRELOAD=$LIB nice env "$LEGACY" lib "$CTR" 20 2' 'symbol "lib_lok" not found in '"$LEGACY"

# --- @PROGRAM: one map, entries for two programs (the same lock name
# under two symbols); copies 1 and 3 run preload_legacy, copy 2
# preload_legacy_books, all through launchers
PMAP="ledger=mutex:g_ledger_lock@preload_legacy;ledger=mutex:g_books_lock@preload_legacy_books;jobs=flock:$A"
exact "@PROGRAM entries for two programs in one map" $((P * 2 * N)) "$PMAP" \
  'prog=$([ "$I" = 2 ] && echo "$BOOKS" || echo "$LEGACY")
   LD_PRELOAD=$LIB timeout 60 sh -c '\''"$0" mutex "$CTR" 20 2'\'' "$prog"'
check "no copy said anything on stderr" bash -c "! cat $WORK/err.* | grep -q ."
# Without @PROGRAM each program has one symbol and lacks the other: it
# stops before main, and the line says what to add.
DISTLOCK_MAP="ledger=mutex:g_ledger_lock;ledger=mutex:g_books_lock" LD_PRELOAD=$LIB \
  timeout 60 "$LEGACY" hello >"$WORK/out" 2>"$WORK/err"
rc=$?
check "the same map without @PROGRAM stops the program (rc=$rc): $(cat "$WORK/err")" \
  bash -c "[ $rc -eq 1 ] && [ ! -s '$WORK/out' ] && grep -qF 'an entry for another program: g_books_lock@PROGRAM' '$WORK/err'"

finish
