#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# test_tls.sh DISTLOCK: the distlock command over rediss:// -- a command run
# under a lock, status, list, top and metrics of a lock held over TLS, -n against it --
# and a refused certificate and a missing CA file, each in one line.  The
# TLS server (a TLS port only) and its certificates are made here.
. "$(dirname "$0")/lib.sh"

if ! command -v openssl >/dev/null 2>&1 || ! command -v python3 >/dev/null 2>&1; then
  echo "skipped: needs openssl and python3"
  exit 0
fi
(
  cd "$T" || exit 1
  printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' > ext.cnf
  openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -subj /CN=cli-test-ca -days 2
  openssl req -x509 -newkey rsa:2048 -nodes -keyout ca2.key -out ca2.pem -subj /CN=other-ca -days 2
  openssl req -newkey rsa:2048 -nodes -keyout srv.key -out srv.csr -subj /CN=srv
  openssl x509 -req -in srv.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 -extfile ext.cnf -out srv.pem
) >"$T/openssl.log" 2>&1 || { cat "$T/openssl.log"; echo "FAIL making certificates"; exit 1; }

# A TLS port only (dl_redis_start -t: --port 0 --tls-port PORT).
dl_redis_start "$T" -t "$T/ca.pem" -- --tls-cert-file "$T/srv.pem" --tls-key-file "$T/srv.key" \
  --tls-ca-cert-file "$T/ca.pem" --tls-auth-clients no ||
  { nok "the TLS redis-server did not start"; finish; exit 1; }
tport=$DL_REDIS_PORT

export DISTLOCK_URL="rediss://127.0.0.1:$tport"
export DISTLOCK_TLS_CA_FILE="$T/ca.pem"

run "$D" tls1 -- echo under-tls
expect "a command under a lock over TLS" 'test "$rc" = 0 && test "$out" = under-tls'

bg "$D" tls1 -- sleep 30 >/dev/null 2>&1
h1=$last_pid
wait_held tls1
run "$D" status tls1
expect "status over TLS: held exclusive by the holder" \
  'test "$rc" = 0 && grep -q "^state: *held exclusive$" "$T/out" && grep -q ":$h1 " "$T/out"'
run "$D" list
expect "list over TLS names the lock" 'test "$rc" = 0 && grep -q tls1 "$T/out"'
run "$D" -n tls1 -- true
expect_rc 1 "-n against a lock held over TLS: conflict"
# top and metrics over TLS (metrics read by the Prometheus client library's
# parser, as in test_metrics.sh).
run "$D" top
expect "top over TLS: the holder's line" \
  'test "$rc" = 0 && grep -qE "^    holder [^ ]+:$h1 \\(thread $h1\\), exclusive, held " "$T/out"'
run "$D" metrics
/usr/bin/python3 "$(dirname "$0")/promparse.py" <"$T/out" >"$T/parsed" 2>"$T/parse.err"
prc=$?
expect "metrics over TLS: parses, distlock_up 1, one holder of tls1" \
  'test "$rc" = 0 -a "$prc" = 0 && grep -qxP "distlock_up\t-\t-\t1.0" "$T/parsed" &&
   grep -qxP "distlock_holders\tlock\t\"tls1\"\t1.0" "$T/parsed"'
kill -TERM "$h1"
wait_pid "$h1"

DISTLOCK_TLS_CA_FILE="$T/ca2.pem" run "$D" status tls1
expect "a CA that did not sign the server: refused, one line saying why" \
  'test "$rc" != 0 && one_line_err && [[ "$err" == *"certificate rejected"* ]]'
DISTLOCK_TLS_CA_FILE="$T/none.pem" run "$D" status tls1
expect "a missing CA file: a configuration error naming the variable" \
  'test "$rc" = 78 && one_line_err && [[ "$err" == *DISTLOCK_TLS_CA_FILE* ]]'
DISTLOCK_URL="redis://127.0.0.1:$tport" run "$D" status tls1
expect "plain text to the TLS port: the hint says rediss://" \
  'test "$rc" != 0 && one_line_err && [[ "$err" == *rediss://* ]]'

finish
