#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# wirecheck.sh [-s] [-m "MODE..."] OLD_BUILD NEW_BUILD
#     Shows that two builds of the library put the same commands on the
#     wire: the same fixed run (drive.c) against fresh servers of each
#     topology, captured with MONITOR on every server, normalised (times,
#     client addresses, ports, tokens), compared: old and new in turn until
#     a pair is the same to the letter (WIRECHECK_TRIES, 4, runs each at
#     most: see below).  Exit 0 when every mode has such a pair; the diff
#     of a pair otherwise.
# wirecheck.sh -c [-s] [-m "MODE..."] BUILD OUTDIR
#     Only captures BUILD's normalised traces into OUTDIR.
# -s: the scripts are compared by the order they are first used in, not by
#     their text: each SHA1 becomes S1, S2... and each script text T1,
#     T2... where it first appears.  For a change of the scripts' text
#     (a new line in lua/common.lua) that keeps every command, key and
#     argument they are called with, and every command they run.
#
# MODE: single (redis://), tls (rediss://), cluster (redis-cluster://,
# three masters; its links fail fast, as redlock's do); these three by
# default.  redlock (redlock://, three servers) only when asked: a
# quorum's holds are renewed on a cadence measured against their
# validity, so where renewals fall among the steps varies from run to run.
# A BUILD is a build directory of this tree (its libdistlock.so); the
# driver is compiled against each.  For restructurings of the connection
# layer: the wire must not change.  Needs redis-server, redis-cli, cc,
# perl, and openssl for tls.
set -u
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
. "$src/tools/launch/launch.sh"

modes="single tls cluster"
capture_only=""
scripts_by_order=0
while getopts m:cs o; do
  case $o in
    m) modes=$OPTARG ;;
    c) capture_only=1 ;;
    s) scripts_by_order=1 ;;
    *) sed -n '3,30p' "$0" >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
[ $# -eq 2 ] || { sed -n '3,30p' "$0" >&2; exit 2; }

work=$(mktemp -d "${TMPDIR:-/tmp}/wirecheck.XXXXXX")
mon_pids=()
# shellcheck disable=SC2317  # called from the traps
cleanup() {
  local p
  for p in "${mon_pids[@]}"; do dl_stop_pid "$p" 1; done
  mon_pids=()
  dl_redis_stop_all
  rm -rf "$work"
}
trap cleanup EXIT
trap 'cleanup; trap - INT; kill -INT $$' INT
trap 'cleanup; trap - TERM; kill -TERM $$' TERM

# build_driver BUILD OUT: drive.c against BUILD's library.
build_driver() {
  local b=$1 flags=()
  grep -q '^DISTLOCK_SANITIZE:BOOL=ON' "$b/CMakeCache.txt" 2>/dev/null &&
    flags=(-fsanitize=address,undefined)
  cc -O1 -g "${flags[@]}" -I "$src/include" "$here/drive.c" -o "$2" \
    -L "$b" -ldistlock -lhiredis -Wl,-rpath,"$(cd "$b" && pwd)"
}

make_certs() {
  [ -f "$work/ca.pem" ] && return 0
  (
    cd "$work" || exit 1
    printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' > ext.cnf
    openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -subj /CN=wire-ca -days 2
    openssl req -newkey rsa:2048 -nodes -keyout srv.key -out srv.csr -subj /CN=srv
    openssl x509 -req -in srv.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 \
      -extfile ext.cnf -out srv.pem
  ) >"$work/openssl.log" 2>&1 || { cat "$work/openssl.log" >&2; return 1; }
}

# servers MODE DIR: starts the servers of MODE; sets ports (the plain port
# of each, MONITOR's and the driver's own) and url.
servers() {
  local mode=$1 dir=$2 i n=1 opts=()
  ports=() url=""
  case $mode in
    cluster|redlock) n=3 ;;
  esac
  [ "$mode" = cluster ] && opts=(--cluster-enabled yes --cluster-node-timeout 5000)
  for ((i = 0; i < n; i++)); do
    local extra=()
    [ "$mode" = cluster ] && extra=(--cluster-config-file "nodes-$i.conf")
    if [ "$mode" = tls ]; then
      make_certs || return 1
      tport=$(dl_free_port) || return 1
      extra=(--tls-port "$tport" --tls-cert-file "$work/srv.pem" --tls-key-file "$work/srv.key"
             --tls-ca-cert-file "$work/ca.pem" --tls-auth-clients no)
    fi
    dl_redis_start "$dir" -- "${opts[@]}" "${extra[@]}" || return 1
    ports+=("$DL_REDIS_PORT")
  done
  local list
  list=$(printf '127.0.0.1:%s,' "${ports[@]}")
  list=${list%,}
  case $mode in
    single) url="redis://$list" ;;
    tls) url="rediss://127.0.0.1:$tport" ;;
    redlock) url="redlock://$list" ;;
    cluster)
      # shellcheck disable=SC2046
      redis-cli --cluster create $(printf '127.0.0.1:%s ' "${ports[@]}") \
        --cluster-replicas 0 --cluster-yes >"$dir/create.log" 2>&1 ||
        { cat "$dir/create.log" >&2; return 1; }
      local p t
      for p in "${ports[@]}"; do
        for ((t = 100; t > 0; t--)); do
          redis-cli -p "$p" cluster info 2>/dev/null | grep -q 'cluster_state:ok' && break
          sleep 0.1
        done
      done
      url="redis-cluster://$list" ;;
  esac
}

# normalise SIDE PORTS... < MONITOR output: one command a line, without
# the time; clients named c1, c2... in the order they first speak (the
# driver's own left out), a server's port as P1, P2... (the order of
# PORTS), tokens and other per-run values as the order they first appear.
normalise() {
  WIRECHECK_SCRIPTS_BY_ORDER=$scripts_by_order perl -MDigest::SHA -e '
    my $side = shift @ARGV; my %port; my $k = 0;
    my $by_order = $ENV{WIRECHECK_SCRIPTS_BY_ORDER}; my (%sha, %text); my ($ns, $nt) = (0, 0);
    $port{$_} = "P" . ++$k for @ARGV;
    my (%cli, %uuid); my ($nc, $nu) = (0, 0);
    while (<STDIN>) {
      s/\r?\n$//;
      next unless /^\d+\.\d+ \[(\d+) ([^\]]+)\] (.*)$/;
      my ($db, $who, $cmd) = ($1, $2, $3);
      next if $who eq $side;
      if ($who ne "lua") { $cli{$who} //= "c" . ++$nc; $who = $cli{$who}; }
      $cmd =~ s/([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})/$uuid{$1} \/\/= "U" . ++$nu/ge;
      $cmd =~ s/\b127\.0\.0\.1:(\d+)\b/"127.0.0.1:" . ($port{$1} \/\/ "P?")/ge;
      $cmd =~ s/"(\d+)"/"\"" . ($port{$1} \/\/ $1) . "\""/ge;
      # times and fences (Redis time in ms or us: 10 digits or more)
      $cmd =~ s/\b\d{10,}\b/N/g;
      # the holder info "host\tpid\ttid"
      $cmd =~ s/\\t\d+\\t\d+"/\\tPID\\tTID"/g;
      # a script s text (EVAL, SCRIPT LOAD): its SHA1, same text same SHA1
      $cmd =~ s/"((?:[^"\\]|\\.){200,})"/"\"<text " . Digest::SHA::sha1_hex($1) . ">\""/ge;
      if ($by_order) {
        $cmd =~ s/<text ([0-9a-f]{40})>/"<text " . ($text{$1} \/\/= "T" . ++$nt) . ">"/ge;
        $cmd =~ s/"([0-9a-f]{40})"/"\"" . ($sha{$1} \/\/= "S" . ++$ns) . "\""/ge;
      }
      # what a script packs (msgpack) holds Redis times and pids
      if ($who eq "lua") {
        $cmd =~ s/"((?:[^"\\]|\\.)*)"/(length($1) > 20 && $1 =~ m{\\x} && $1 !~ m{^distlock:} && $1 !~ m{\{}) ? "\"<packed>\"" : "\"$1\""/ge;
      }
      print "[$db $who] $cmd\n";
    }' "$@"
}

# capture_mode BUILD DRIVER MODE OUTDIR: one run of MODE, its normalised
# trace per server in OUTDIR/MODE-serverN.txt.
capture_mode() {
  local drive=$2 mode=$3 out=$4 dir p i side rc
  dir="$work/$mode.$RANDOM"
  mkdir -p "$dir" "$out"
  servers "$mode" "$dir" || return 1
  for p in "${ports[@]}"; do
    redis-cli -p "$p" monitor >"$dir/mon-$p.txt" 2>&1 &
    mon_pids+=($!)
  done
  sleep 0.5
  side=$(DISTLOCK_URL=$url DISTLOCK_TLS_CA_FILE="$work/ca.pem" DISTLOCK_LOG=error \
         "$drive" 127.0.0.1 "${ports[0]}")
  rc=$?
  sleep 0.5
  for p in "${mon_pids[@]}"; do dl_stop_pid "$p" 1; done
  mon_pids=()
  dl_redis_stop_all
  [ $rc -eq 0 ] || { echo "wirecheck: the driver failed ($mode)" >&2; return 1; }
  side=${side#side }
  i=0
  for p in "${ports[@]}"; do
    i=$((i + 1))
    normalise "${side:-none}" "${ports[@]}" <"$dir/mon-$p.txt" >"$out/$mode-server$i.txt"
  done
  rm -rf "$dir"
}

# same DIR1 DIR2 MODE: the two runs of MODE put the same commands on the wire.
same() {
  local f
  for f in "$1/$3"-server*.txt; do
    cmp -s "$f" "$2/${f##*/}" || return 1
  done
}

old_drive="$work/drive.old" new_drive="$work/drive.new"
build_driver "$1" "$old_drive" || exit 1
if [ -n "$capture_only" ]; then
  for mode in $modes; do
    capture_mode "$1" "$old_drive" "$mode" "$2" || exit 1
    echo "wirecheck: $mode: $(cat "$2/$mode"-server*.txt | wc -l) commands captured" >&2
  done
  exit 0
fi
build_driver "$2" "$new_drive" || exit 1

# The library's own threads run on timers (a busy hold is renewed every
# 20 ms, a child's subscriber connects beside its first request), so a run
# may differ from the last by where such a command falls.  Each mode is
# run, old and new in turn, up to TRIES times each, until an old and a
# new capture are the same to the letter; a change of the wire in what
# the steps themselves send makes every pair differ.
tries=${WIRECHECK_TRIES:-4}
status=0
for mode in $modes; do
  found="" ok=0 variants=0
  for ((t = 1; t <= tries && !ok; t++)); do
    capture_mode "$1" "$old_drive" "$mode" "$work/old$t" || exit 1
    capture_mode "$2" "$new_drive" "$mode" "$work/new$t" || exit 1
    for ((u = 1; u <= t && !ok; u++)); do
      if same "$work/old$u" "$work/new$t" "$mode"; then found="old$u new$t" ok=1
      elif same "$work/old$t" "$work/new$u" "$mode"; then found="old$t new$u" ok=1
      fi
    done
    same "$work/old1" "$work/old$t" "$mode" || variants=$((variants + 1))
  done
  n=$(cat "$work/old1/$mode"-server*.txt | wc -l)
  if [ $ok = 1 ]; then
    echo "wirecheck: $mode: the same wire ($n commands; runs $found identical; $variants old run(s) differed from the first)"
  else
    echo "wirecheck: $mode: the wire differs in every pair of $tries old and $tries new runs; the first pair:" >&2
    diff -r "$work/old1" "$work/new1" | grep -v '^Only in' | head -n 60 >&2
    status=1
  fi
done
exit $status
