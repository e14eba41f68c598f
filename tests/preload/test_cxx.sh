#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# test_cxx.sh LIB BUILD_DIR - C++ programs under the interposer: a program
# of the standard library's own lock types (tests/preload/cxxlegacy.cpp:
# std::mutex, std::timed_mutex, std::shared_mutex, std::shared_timed_mutex,
# std::condition_variable as globals of a namespace, an anonymous
# namespace, a file-static and a class's static member), built here with
# g++, run as several processes, its globals mapped by their C++ names
# (app::counter_mutex, as nm -C prints them) and by their mangled symbols.
# Checked: counts under each lock exact (lost updates without the
# interposer), no torn record under std::shared_mutex, try_lock_for and
# try_lock_until (steady_clock, system_clock) time out while another
# process holds the lock and never early, a notify_all wakes waiters of
# other processes (wait_for on steady_clock, wait_until on system_clock)
# and timed waits never end early.  The interposer's reader of C++ names
# gives what c++filt gives for every symbol it takes, of this program and
# of libstdc++.  Run under tools/with-redis.sh.
. "$(dirname "$0")/lib.sh"

: "${DISTLOCK_URL:?run under tools/with-redis.sh}"
export DISTLOCK_PREFIX="dlpcxx$$:"
SRC=$(dirname "$0")/cxxlegacy.cpp
CXX=${CXX:-g++}
CXXL=$WORK/cxxlegacy
P=3
T=2
N=15

if ! "$CXX" -std=c++17 -O1 -g -pthread -Wall -o "$CXXL" "$SRC" 2>"$WORK/cxx.err"; then
  fail "g++ builds $SRC: $(head -5 "$WORK/cxx.err") (tools/deps.sh installs g++)"
  finish
  exit 1
fi
ok "g++ built $(basename "$SRC")"

# --- the reader of C++ names against c++filt
DM=$BIN/preload_demangle_check
for obj in "$CXXL" "$("$CXX" -print-file-name=libstdc++.so.6)"; do
  if [ "$obj" = "$CXXL" ]; then
    nm --defined-only "$obj" | awk '{ print $NF }' >"$WORK/syms"
  else
    nm -D --defined-only "$(readlink -f "$obj")" | awk '{ print $NF }' | sed 's/@.*//' >"$WORK/syms"
  fi
  "$DM" <"$WORK/syms" >"$WORK/mine"
  c++filt <"$WORK/syms" >"$WORK/theirs"
  took=$(grep -vc '^-$' "$WORK/mine")
  paste -d'|' "$WORK/syms" "$WORK/mine" "$WORK/theirs" | awk -F'|' '$2 != "-" && $2 != $3' >"$WORK/diff"
  check "$(basename "$obj"): the reader gives c++filt's name for each of the $took of $(wc -l <"$WORK/syms") symbols it takes ($(head -c 200 "$WORK/diff"))" \
    [ "$took" -gt 0 -a ! -s "$WORK/diff" ]
done
for s in _ZN3app13counter_mutexE _ZN12_GLOBAL__N_110anon_mutexE _ZL10file_mutex _ZN6Ledger2muE \
         _ZN3app8queue_cvE; do
  check "$s is taken: $(echo "$s" | "$DM")" [ "$(echo "$s" | "$DM")" = "$(echo "$s" | c++filt)" ]
done

# counted WHICH MAP PRELOAD(0|1): P processes x T threads x N increments
# under the lock WHICH; sets GOT and BAD.
counted() {
  local which=$1 map=$2 pre=$3 lp="" pids=() i f=$WORK/ctr.$1
  [ "$pre" = 1 ] && lp=$LIB
  rm -f "$f"
  for i in $(seq $P); do
    DISTLOCK_MAP=$map LD_PRELOAD=$lp timeout 120 "$CXXL" count "$which" "$f" $N $T \
      >"$WORK/out.$i" 2>"$WORK/err.$i" &
    pids+=($!)
    DLP_PIDS+=($!)
  done
  BAD=0
  for i in "${pids[@]}"; do wait "$i" || BAD=$((BAD + 1)); done
  GOT=$(counter "$f")
}

WANT=$((P * T * N))
for spec in "counter|ctr=mutex:app::counter_mutex" \
            "counter|ctr=mutex:_ZN3app13counter_mutexE" \
            "timed|slow=mutex:app::slow_mutex" \
            "shared|table=rwlock:app::table_mutex" \
            "anon|anon=mutex:(anonymous namespace)::anon_mutex" \
            "static|file=mutex:file_mutex" \
            "member|ledger=mutex:Ledger::mu"; do
  which=${spec%%|*}; map=${spec#*|}
  counted "$which" "$map" 1
  if [ "$BAD" -eq 0 ] && [ "$GOT" -eq "$WANT" ]; then
    ok "$which, mapped as '$map': $GOT of $WANT across $P processes"
  else
    fail "$which, mapped as '$map': $GOT of $WANT, $BAD failed: $(cat "$WORK"/err.* | head -3)"
  fi
done
counted counter "" 0
check "without the interposer updates are lost ($GOT of $WANT): the check can fail" \
  [ "$BAD" -eq 0 -a "$GOT" -lt "$WANT" ]

# std::shared_mutex: writers exclusive, readers shared, no torn record.
pids=()
rm -f "$WORK/rec"
for i in $(seq $P); do
  DISTLOCK_MAP="table=rwlock:app::table_mutex" LD_PRELOAD=$LIB timeout 120 \
    "$CXXL" record "$WORK/rec" 10 1 2 >"$WORK/rout.$i" 2>"$WORK/rerr.$i" &
  pids+=($!)
  DLP_PIDS+=($!)
done
st=0
for p in "${pids[@]}"; do wait "$p" || st=1; done
torn=$(cat "$WORK"/rout.* | awk -F= '$1 == "torn" { t += $2; n++ } END { print (n == '$P' ? t : "?") }')
check "std::shared_mutex record: no torn read across $P processes (torn=$torn), $(counter "$WORK/rec") of $((P * 10)) writes" \
  [ "$st" = 0 -a "$torn" = 0 -a "$(counter "$WORK/rec")" = $((P * 10)) ]

# --- timed locks while another process holds the lock: never early
TMAP="slow=mutex:_ZN3app10slow_mutexE;stable=rwlock:app::stable_mutex"
holder() { # WHICH MS: starts a holder, returns once it holds
  DISTLOCK_MAP=$TMAP LD_PRELOAD=$LIB "$CXXL" hold "$1" "$2" >"$WORK/holder" 2>&1 &
  HPID=$!
  DLP_PIDS+=("$HPID")
  for _ in $(seq 200); do
    grep -q held "$WORK/holder" && return 0
    sleep 0.05
  done
  return 1
}
for which in timed stimed stimed-shared; do
  h=${which%-shared}
  holder "$h" 4000
  for clock in steady system; do
    res=$(DISTLOCK_MAP=$TMAP LD_PRELOAD=$LIB "$CXXL" tryfor "$which" $clock 400 2>&1)
    ms=$(awk '{ print $2 }' <<<"$res")
    check "$which try_lock on $clock while another process holds it: '$res' (timeout, >= 400 ms, not early)" \
      bash -c '[[ "$1" == timeout* ]] && [[ "$1" != *early* ]] && [ "$2" -ge 400 ]' _ "$res" "${ms:-0}"
  done
  res=$(DISTLOCK_MAP=$TMAP LD_PRELOAD=$LIB "$CXXL" tryfor "$which" steady 20000 2>&1)
  check "$which try_lock_for gets it once the other process lets go: '$res'" \
    bash -c '[[ "$1" == got* ]]' _ "$res"
  wait "$HPID"
done
holder timed 3000
res=$("$CXXL" tryfor timed steady 400 2>&1)
check "without the interposer the holder in another process does not exclude: '$res' (the check can fail)" \
  bash -c '[[ "$1" == got* ]]' _ "$res"
wait "$HPID"

# --- std::condition_variable: notify_all wakes other processes' waiters
CMAP="q=cond:app::queue_cv;qm=mutex:_ZN3app11queue_mutexE"
registered() { redis-cli -u "$DISTLOCK_URL" ZCARD "$(printf '%s{\001cq}' "$DISTLOCK_PREFIX")"; }
FLAG=$WORK/flag
rm -f "$FLAG"
DISTLOCK_MAP=$CMAP LD_PRELOAD=$LIB "$CXXL" wait steady 20000 "$FLAG" >"$WORK/ws" 2>&1 &
W1=$!
DISTLOCK_MAP=$CMAP LD_PRELOAD=$LIB "$CXXL" wait system 20000 "$FLAG" >"$WORK/wy" 2>&1 &
W2=$!
DLP_PIDS+=("$W1" "$W2")
for _ in $(seq 200); do
  [ "$(registered)" = 2 ] && break
  sleep 0.05
done
check "two processes wait on app::queue_cv in Redis ($(registered))" [ "$(registered)" = 2 ]
DISTLOCK_MAP=$CMAP LD_PRELOAD=$LIB "$CXXL" notify "$FLAG"
wait "$W1" "$W2"
for f in ws wy; do
  res=$(cat "$WORK/$f")
  ms=$(awk '{ print $2 }' <<<"$res")
  check "notify_all from another process woke the $f waiter: '$res' (well before its 20 s)" \
    bash -c '[[ "$1" == woken* ]] && [ "$2" -lt 10000 ]' _ "$res" "${ms:-99999}"
done
rm -f "$FLAG"
for clock in steady system; do
  res=$(DISTLOCK_MAP=$CMAP LD_PRELOAD=$LIB "$CXXL" wait $clock 400 "$FLAG" 2>&1)
  ms=$(awk '{ print $2 }' <<<"$res")
  check "a $clock wait nobody notifies times out, not early: '$res'" \
    bash -c '[[ "$1" == timeout* ]] && [[ "$1" != *early* ]] && [ "$2" -ge 400 ]' _ "$res" "${ms:-0}"
done
"$CXXL" wait steady 1500 "$FLAG" >"$WORK/wn" 2>&1 &
W3=$!
sleep 0.3
"$CXXL" notify "$FLAG"
wait "$W3"
ms=$(awk '{ print $2 }' "$WORK/wn")
check "without the interposer another process's notify_all does not wake it: '$(cat "$WORK/wn")', at its 1500 ms time-out (the check can fail)" \
  [ "${ms:-0}" -ge 1500 ]

# --- map errors with C++ names
out=$(DISTLOCK_MAP="ctr=mutex:app::no_such_mutex" LD_PRELOAD=$LIB "$CXXL" count counter "$WORK/x" 1 1 2>&1)
st=$?
check "a C++ name the program lacks: stopped at the first lock (status $st: $out)" \
  bash -c '[ "$1" = 1 ] && grep -q "symbol \"app::no_such_mutex\" not found" <<<"$2"' _ "$st" "$out"
out=$(DISTLOCK_MAP="ctr=mutex:app:counter_mutex" LD_PRELOAD=$LIB "$CXXL" hello 2>&1)
st=$?
check "a single ':' is no C++ name (status $st: $out)" \
  bash -c '[ "$1" = 1 ] && grep -q "bad symbol name" <<<"$2"' _ "$st" "$out"
out=$(DISTLOCK_MAP="q=cond:app::counter_mutex" LD_PRELOAD=$LIB "$CXXL" hello 2>&1)
st=$?
check "a std::mutex is too small for a condition (status $st: $out)" \
  bash -c '[ "$1" = 1 ] && grep -q "too small for a pthread_cond_t" <<<"$2"' _ "$st" "$out"

finish
