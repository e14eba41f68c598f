#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# test_usage.sh DISTLOCK: the command line itself: help, version, every
# kind of bad input (one line on stderr, exit 64), bad configuration (78),
# Redis unreachable (69).
. "$(dirname "$0")/lib.sh"

# --- help and version
run "$D" --help
check "--help exits 0 with the usage on stdout" \
  test "$rc" = 0 -a -z "$err" -a "${out#usage: distlock}" != "$out"
run "$D" -h
check "-h is --help" test "$rc" = 0 -a "${out#usage: distlock}" != "$out"
run "$D" --version
check "--version prints 'distlock X.Y.Z'" test "$rc" = 0 -a -z "$err"
check "--version format" bash -c "[[ '$out' =~ ^distlock\ [0-9]+\.[0-9]+\.[0-9]+$ ]]"
run "$D" status --help
check "help also after a subcommand" test "$rc" = 0 -a "${out#usage: distlock}" != "$out"

# --- bad input: one line, exit 64, nothing run
long=$(head -c 513 /dev/zero | tr '\0' n)
expect_usage "no arguments" 
expect_usage "unknown long option" --bogus n -- true
expect_usage "unknown short option" -q n -- true
expect_usage "unknown option after the name" n --bogus -- true
expect_usage "missing command" n
expect_usage "missing command after --" n --
expect_usage "missing name before --" -- true
expect_usage "empty name" "" -- true
expect_usage "name too long (513 bytes)" "$long" -- true
check "name too long: the message gives the limit" grep -q 512 "$T/err"
expect_usage "bad URL scheme" --url http://127.0.0.1:6379 n -- true
expect_usage "bad URL port" --url redis://127.0.0.1:99999 n -- true
expect_usage "bad URL port, not a number" --url redis://127.0.0.1:notaport n -- true
check "... quoted in the message, as every other value" grep -q 'bad port "notaport"' "$T/err"
expect_usage "bad URL: not a URL" --url nonsense n -- true
run "$D" --url 'redis://user:s3cret@127.0.0.1:99999' n -- true
check "a bad URL's password is never printed" test "$rc" = 64 -a "${err#*s3cret}" = "$err"
expect_usage "-w not a number" -w abc n -- true
expect_usage "-w negative" -w -1 n -- true
expect_usage "-w out of range" -w 1e99 n -- true
check "... says so and gives the maximum" grep -q "'1e99' is out of range: at most 1000000000 seconds" "$T/err"
expect_usage "-w longer than the maximum, in digits" -w 1000000001 n -- true
check "... out of range too" grep -q "out of range" "$T/err"
expect_usage "-w a sign in front" -w +5 n -- true
run "$D" -w 1e1 -n n -- true
expect_rc 0 "-w takes an exponent, as flock(1) does"
expect_usage "-w without a value" n -w
expect_usage "-E out of range" -E 256 n -- true
expect_usage "-E not a number" -E x n -- true
expect_usage "--lease below 30 ms" --lease 10 n -- true
expect_usage "--lease not a number" --lease 1s n -- true
expect_usage "--lease=VALUE form checked too" --lease=abc n -- true
expect_usage "--fair with -s" --fair -s n -- true
expect_usage "-c and -- both" n -c 'true' -- true
expect_usage "-c with extra words" n -c 'true' extra
expect_usage "a flag given a value" --fair=1 n -- true
expect_usage "status without a name" status
expect_usage "status with two names" status a b
expect_usage "status with a run option" status -n a
expect_usage "status name too long" status "$long"
expect_usage "list with a run option" list -s
expect_usage "break without --force" break n
expect_usage "break without a name" break --force
expect_usage "--json on a run" --json n -- true
expect_usage "--force on status" status n --force
expect_usage "status -- COMMAND hints at the lock name rule" status -- true
check "the hint names the way out" grep -q "distlock -x status -- COMMAND" "$T/err"
run "$D" n -- true
check "valid input still runs (redis is up)" test "$rc" = 0

# --- a name of exactly 512 bytes is fine
max=$(head -c 512 /dev/zero | tr '\0' m)
run "$D" -n "$max" -- true
expect_rc 0 "name of 512 bytes is accepted"

# --- bad configuration in the environment: 78, the variable named
run env DISTLOCK_URL=ftp://x "$D" n -- true
check "bad DISTLOCK_URL: exit 78, one line naming it" \
  test "$rc" = 78 -a "${err#distlock: DISTLOCK_URL}" != "$err"
check "bad DISTLOCK_URL: one line" one_line_err
run env DISTLOCK_LEASE_MS=abc "$D" n -- true
check "bad DISTLOCK_LEASE_MS: exit 78" test "$rc" = 78 -a "${err#*DISTLOCK_LEASE_MS}" != "$err"
run env DISTLOCK_PREFIX='a{b' "$D" status n
check "bad DISTLOCK_PREFIX (status): exit 78" test "$rc" = 78
run env DISTLOCK_LOG=loud "$D" list
check "bad DISTLOCK_LOG (list): exit 78" test "$rc" = 78
run env DISTLOCK_URL=ftp://x "$D" --url "$DISTLOCK_URL" n -- true
expect_rc 0 "--url overrides a bad DISTLOCK_URL"

# --- Redis unreachable: 69, one line (port 1: nothing listens)
down=redis://127.0.0.1:1
export DISTLOCK_IO_TIMEOUT_MS=300
run "$D" --url $down n -- echo ran
check "unreachable (run): exit 69, command not run" test "$rc" = 69 -a -z "$out"
check "unreachable (run): one line" one_line_err
expect "unreachable (run): says Redis is unreachable, where, and after how long" \
  '[[ "$err" == "distlock: cannot take \"n\": Redis is unreachable at $down (Connection refused); gave up after 300 ms (DISTLOCK_IO_TIMEOUT_MS=300)" ]]'
run "$D" --url "redis://user:s3cret@127.0.0.1:1/2" n -- echo ran
expect "unreachable: the URL named, its password never" \
  'test "$rc" = 69 && [[ "$err" == *"unreachable at redis://user@127.0.0.1:1/2 "* ]] && [[ "$err" != *s3cret* ]]'
run "$D" --url $down -n n -- true
check "unreachable (-n): exit 69, not the conflict code" test "$rc" = 69
run "$D" --url $down -s -w 1 n -- true
check "unreachable (-s -w): exit 69" test "$rc" = 69
run "$D" --url $down status n
expect "unreachable (status): exit 69, one line" \
  'test "$rc" = 69 && one_line_err'
run "$D" --url $down list
expect "unreachable (list): exit 69, one line" \
  'test "$rc" = 69 && one_line_err'
run "$D" --url $down break n --force
expect "unreachable (break): exit 69, one line" \
  'test "$rc" = 69 && one_line_err'
expect "unreachable (status, list, break): the same words" \
  '[[ "$err" == "distlock: Redis is unreachable at $down (Connection refused); gave up after 300 ms"* ]]'

# --- a database the server does not have: a configuration error (78),
# said at once, not an outage waited out for the I/O time-out (10 s here)
export DISTLOCK_IO_TIMEOUT_MS=10000
nodb="$DISTLOCK_URL/99"
for form in "n -- echo ran" "-n n -- echo ran" "-N 2 n -- echo ran" "status n" "list" "break n --force"; do
  t0=$(now)
  # shellcheck disable=SC2086
  run "$D" --url "$nodb" $form
  dt=$(elapsed "$t0")
  expect "SELECT 99 refused ($form): exit 78, one line naming DISTLOCK_URL and database 99, nothing run" \
    'test "$rc" = 78 && one_line_err && [[ "$err" == *"DISTLOCK_URL: database 99"*"ERR DB index is out of range"* ]] && test -z "$out"'
  expect "... at once ($dt s; the I/O time-out is 10 s)" 'between "$dt" 0 5'
done

finish
