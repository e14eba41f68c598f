#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# test_sem.sh LIB BUILD_DIR - POSIX named semaphores of an unmodified
# program (tests/preload/semlegacy.c: sem_open, sem_wait, sem_post...)
# mapped by `NAME=sem:/SEMNAME` entries.  Several processes, each with a
# /dev/shm of its own (a private tmpfs in a mount namespace of its own, so
# the kernel's semaphores are not shared: as on different hosts), limit a
# section to N processes at once with the interposer, and do not without
# it (which shows the check can fail).  Also: the value survives its
# users and getvalue is exact; sem_open's ENOENT and EEXIST; trywait
# EAGAIN; timedwait ETIMEDOUT never early; a signal handler ends sem_wait
# with EINTR (SA_RESTART or not, as the kernel does); a post in one
# process wakes a waiter in another.  Run under tools/with-redis.sh.
. "$(dirname "$0")/lib.sh"

: "${DISTLOCK_URL:?run under tools/with-redis.sh}"
export DISTLOCK_PREFIX="dlpsem$$:"
export DISTLOCK_MAP="jobs=sem:/jobs;z=sem:/zero;w=sem:/wake;o=sem:/only;u=sem:/gone"
SEM=$BIN/preload_semlegacy
N=2
P=5
ITER=8
HOLD_US=30000

# Each process in a mount namespace with a private /dev/shm, if this
# machine allows it (user namespaces); else they share /dev/shm and only
# the interposer's count is checked.
ISOLATE=0
if unshare -rm sh -c 'mount -t tmpfs none /dev/shm' 2>/dev/null; then
  ISOLATE=1
else
  echo "# no private /dev/shm here (unshare -rm failed): processes share the kernel's semaphores"
fi

# section PRELOAD(0|1) NAME: P processes run the section at once; sets
# MAXIN (the most seen inside at once), HOLDS (sections run) and BAD
# (processes that failed).
section() {
  local pre=$1 name=$2 dir=$WORK/in.$2.$1 pids=() i
  rm -rf "$dir"; mkdir -p "$dir"
  local lp=""
  [ "$pre" = 1 ] && lp=$LIB
  for i in $(seq "$P"); do
    if [ "$ISOLATE" = 1 ]; then
      unshare -rm sh -c 'mount -t tmpfs none /dev/shm && LD_PRELOAD="$1" exec "$2" section "$3" "$4" "$5" "$6" "$7"' \
        sh "$lp" "$SEM" "$name" "$N" "$ITER" "$dir" "$HOLD_US" >"$WORK/out.$i" 2>"$WORK/err.$i" &
    else
      LD_PRELOAD=$lp "$SEM" section "$name" "$N" "$ITER" "$dir" "$HOLD_US" >"$WORK/out.$i" 2>"$WORK/err.$i" &
    fi
    pids+=($!)
  done
  BAD=0
  for i in "${pids[@]}"; do wait "$i" || BAD=$((BAD + 1)); done
  MAXIN=0; HOLDS=0
  for i in $(seq "$P"); do
    local m h
    m=$(sed -n 's/^max=\([0-9]*\) .*/\1/p' "$WORK/out.$i")
    h=$(sed -n 's/.* holds=\([0-9]*\)$/\1/p' "$WORK/out.$i")
    [ -n "$m" ] && [ "$m" -gt "$MAXIN" ] && MAXIN=$m
    HOLDS=$((HOLDS + ${h:-0}))
  done
}

section 1 /jobs
if [ "$BAD" -eq 0 ] && [ "$MAXIN" -le "$N" ] && [ "$HOLDS" -eq $((P * ITER)) ]; then
  ok "with the interposer: at most $MAXIN of $P processes inside (N=$N), $HOLDS sections"
else
  fail "with the interposer: $MAXIN inside at once (N=$N), $HOLDS of $((P * ITER)) sections, $BAD failed: $(cat "$WORK"/err.* | head -3)"
fi
V=$(LD_PRELOAD=$LIB "$SEM" value /jobs)
check "the value survives its users, exact: $V (want $N)" [ "$V" = "$N" ]

if [ "$ISOLATE" = 1 ]; then
  section 0 /jobs
  if [ "$MAXIN" -gt "$N" ]; then
    ok "without the interposer, each /dev/shm its own: $MAXIN inside at once (the check can fail)"
  else
    fail "without the interposer the section was not overrun ($MAXIN inside): the check shows nothing"
  fi
fi

pre() { LD_PRELOAD=$LIB "$SEM" "$@"; }
check "sem_open without O_CREAT of a semaphore that does not exist: ENOENT" \
  [ "$(pre open /only o)" = ENOENT ]
check "sem_open O_CREAT: ok" [ "$(pre open /only c 3)" = ok ]
check "sem_open O_CREAT|O_EXCL of an existing one: EEXIST" [ "$(pre open /only x 3)" = EEXIST ]
check "sem_open O_CREAT with a value above SEM_VALUE_MAX: EINVAL" \
  [ "$(pre open /zero c 2147483648)" = EINVAL ]
check "sem_open O_CREAT of value 0: ok" [ "$(pre open /zero c 0)" = ok ]
check "sem_trywait, value 0: EAGAIN" [ "$(pre try /zero)" = EAGAIN ]
check "sem_timedwait 300 ms, value 0: ETIMEDOUT, not before abstime" [ "$(pre timed /zero 300)" = ETIMEDOUT ]
check "sem_wait interrupted by a SIGALRM handler (SA_RESTART): EINTR" [ "$(pre intr /zero 300)" = EINTR ]
check "the interrupted wait took nothing: value 0" [ "$(pre value /zero)" = 0 ]

# A post in one process wakes a waiter in another.
pre open /wake c 0 >/dev/null
pre wait /wake >"$WORK/waiter" 2>&1 &
WPID=$!
DLP_PIDS+=("$WPID")
sleep 0.5
check "a post from another process: ok" [ "$(pre post /wake)" = ok ]
woke=0
for _ in $(seq 100); do
  kill -0 "$WPID" 2>/dev/null || { woke=1; break; }
  sleep 0.1
done
wait "$WPID" 2>/dev/null
check "the waiter in another process woke with the permit" [ "$woke" = 1 ] && [ "$(cat "$WORK/waiter")" = ok ]
check "and took it: value 0" [ "$(pre value /wake)" = 0 ]

# sem_unlink of a mapped name removes the semaphore from Redis, for every
# process: opening it again without O_CREAT is ENOENT, with O_CREAT makes
# a new one with its own value.
pre open /gone c 3 >/dev/null
pre post /gone >/dev/null
check "before sem_unlink: value 4" [ "$(pre value /gone)" = 4 ]
check "sem_unlink of a mapped name: ok" [ "$(pre unlink /gone)" = ok ]
check "then another process's sem_open without O_CREAT: ENOENT" [ "$(pre open /gone o)" = ENOENT ]
check "sem_unlink again: ENOENT" [ "$(pre unlink /gone)" = ENOENT ]
check "sem_open O_CREAT makes a new one" [ "$(pre open /gone c 1)" = ok ]
check "with its own value: 1" [ "$(pre value /gone)" = 1 ]
check "the key is gone from Redis after an unlink" \
  bash -c 'LD_PRELOAD="$1" "$2" unlink /gone >/dev/null; [ "$(redis-cli -u "$DISTLOCK_URL" --scan --pattern "${DISTLOCK_PREFIX}*gone*" | wc -l)" = 0 ]' \
  _ "$LIB" "$SEM"
res=$(pre clock /zero 400)
check "sem_clockwait 400 ms on CLOCK_MONOTONIC, value 0: '$res' (ETIMEDOUT, not early)" \
  bash -c '[[ "$1" == ETIMEDOUT* ]] && [[ "$1" != *early* ]] && [ "$(awk "{ print \$2 }" <<<"$1")" -ge 400 ]' _ "$res"

finish
