#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# deps.sh: installs, on Debian, what building, testing and running the demo
# need.  Does nothing (and needs no root) when everything is already there.
set -euo pipefail

# libssl-dev: TLS to Redis (rediss://); openssl: the TLS tests make their
# certificates with it.  build-essential brings g++ and binutils' c++filt:
# the interposer's C++ test (tests/preload/test_cxx.sh) builds its program
# with g++ and checks the interposer's C++ names against c++filt.
pkgs=(build-essential cmake pkg-config libhiredis-dev uuid-dev libcmocka-dev
      libssl-dev openssl redis-server redis-tools)
# The test suite also runs valgrind and the libFuzzer targets (clang; its
# fuzzer runtime is only a "recommends" of clang on Debian 12), checks the
# manual pages (man-db, groff), lints the Debian packages (lintian; cpack
# uses dpkg-shlibdeps of dpkg-dev and file), and runs real lock-taking
# programs under the interposer (tests/preload/test_programs.sh: flock(1)
# of util-linux, lckdo of moreutils, chpst of runit, setlock of
# daemontools, gdbmtool, sqlite3, dpkg; a statically linked target built
# with libc6-dev's libc.a).  The nemesis cuts the network between
# namespaces with nftables (iproute2 makes the namespaces and veth pairs),
# and prints a hung client's threads with gdb.  The tests of `distlock
# metrics` read its output with the Prometheus client library's own
# text-format parser (python3-prometheus-client), and those of `distlock
# top` drive its screen in a terminal that tmux gives it (send-keys,
# capture-pane).  The metrics file (DISTLOCK_METRICS_FILE) is read back by
# the same parser.  The nemesis's clock faults need no package: libfaketime
# cannot start Debian's jemalloc-linked redis-server, so the servers' clock
# is shifted by a library of the tests (tests/nm_clockshim.c).  The load
# test (tools/loadtest.sh) makes its CPU hog with busy shell loops.
if [ "${1:-}" = --test ]; then
  pkgs+=(valgrind clang libclang-rt-14-dev man-db groff-base lintian dpkg-dev file
         util-linux moreutils runit daemontools gdbmtool sqlite3 nftables iproute2 gdb python3-prometheus-client tmux)
fi

missing=()
for p in "${pkgs[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "deps: installing ${missing[*]}"
if ! command -v apt-get >/dev/null 2>&1; then
  echo "deps: no apt-get here; install the equivalents of: ${missing[*]}" >&2
  exit 1
fi
sudo=()
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then
    sudo=(sudo)
  else
    echo "deps: run as root, or install: ${missing[*]}" >&2
    exit 1
  fi
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q </dev/null
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
  --no-install-recommends "${missing[@]}" </dev/null
