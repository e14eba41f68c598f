#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# check.sh [BUILD_DIR]: installs distlock into a temporary prefix and builds
# tests/install/consumer.c against it twice: with pkg-config, and as a CMake
# project using find_package(distlock), the way README tells a user of a
# prefix to (checked too).  Runs the consumers against a private
# redis-server when redis-server is there.
#
# Without BUILD_DIR it configures and builds a plain (unsanitized) tree of
# its own, so that the consumers need no sanitizer runtime.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/distlock-install.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
jobs=${DISTLOCK_JOBS:-2}

step() { echo "-- $*"; }

if [ $# -ge 1 ]; then
  build=$(cd "$1" && pwd)
else
  build=$tmp/build
  step "building distlock (Release, no tests) in a temporary tree"
  if ! { cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DDISTLOCK_TESTS=OFF \
           -DDISTLOCK_SANITIZE=OFF -DDISTLOCK_TSAN=OFF &&
         cmake --build "$build" -j "$jobs"; } >"$tmp/build.log" 2>&1; then
    cat "$tmp/build.log" >&2
    exit 1
  fi
fi

step "cmake --install into $prefix"
cmake --install "$build" --prefix "$prefix" >/dev/null

# (-print -quit, not | head: under pipefail, find killed by SIGPIPE would fail it)
libdir=$(dirname "$(find "$prefix" -name distlock.pc -path '*/pkgconfig/*' -print -quit)")
libdir=$(dirname "$libdir")
[ -f "$prefix/include/distlock.h" ] || { echo "missing $prefix/include/distlock.h" >&2; exit 1; }
[ -f "$prefix/include/distlock/pthread.h" ] || {
  echo "missing $prefix/include/distlock/pthread.h" >&2; exit 1; }
for f in libdistlock.a libdistlock.so libdistlock.so.0; do
  [ -e "$libdir/$f" ] || { echo "missing $libdir/$f" >&2; exit 1; }
done
[ -f "$libdir/cmake/distlock/distlockConfig.cmake" ] || {
  echo "missing $libdir/cmake/distlock/distlockConfig.cmake" >&2; exit 1; }

step "libdistlock.so exports every function of distlock.h, and only dist_*"
bash "$root/tests/install/exports.sh" "$libdir/libdistlock.so" "$prefix/include/distlock.h"
step "... and every library call of distlock/pthread.h (DIST_API)"
exported=$(nm -D --defined-only "$libdir/libdistlock.so")
for fn in $(grep -oE 'DIST_API [a-z_ ]+\*? *dist_pthread_[a-z_]+ *\(' "$prefix/include/distlock/pthread.h" |
            grep -oE 'dist_pthread_[a-z_]+'); do
  # (a here-string, not a pipe: grep -q leaving early fails it under pipefail)
  grep -q " $fn@@DISTLOCK_0\$" <<<"$exported" || {
    echo "distlock/pthread.h declares $fn, which $libdir/libdistlock.so does not export" >&2; exit 1; }
done

if command -v man >/dev/null 2>&1; then
  step "man: every function of distlock.h has an installed page"
  for fn in $(grep -oE '\bdist_[a-z_]+ *\(' "$prefix/include/distlock.h" | tr -d '( ' | sort -u) \
            DIST_MUTEX_INITIALIZER DIST_RWLOCK_INITIALIZER distlock distlock-bench distlock_preload \
            distlock_pthread; do
    page=$(MANPATH=$prefix/share/man man -w "$fn" 2>/dev/null) || {
      echo "man $fn: no page installed under $prefix/share/man" >&2; exit 1; }
    case $page in "$prefix"/*) ;; *) echo "man $fn: $page, not the installed page" >&2; exit 1;; esac
  done
  MANPATH=$prefix/share/man man 7 distlock >/dev/null
fi

export PKG_CONFIG_PATH=$libdir/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
step "pkg-config: $(pkg-config --cflags --libs distlock)"
# shellcheck disable=SC2046  # pkg-config prints a list of words
cc -Wall -Werror -o "$tmp/consumer-pc" tests/install/consumer.c \
  $(pkg-config --cflags --libs distlock)
step "pkg-config --static: $(pkg-config --static --libs distlock)"
# shellcheck disable=SC2046
cc -Wall -Werror -o "$tmp/consumer-pc-static" tests/install/consumer.c \
  $(pkg-config --cflags distlock) -L"$libdir" -Wl,-Bstatic -ldistlock -Wl,-Bdynamic \
  $(pkg-config --static --libs distlock | sed 's/-ldistlock//')

# The one-line port, as a user builds it: the installed <distlock/pthread.h>
# and pkg-config (tests/port/edges.c includes it after the system headers).
step "pkg-config: a program ported by <distlock/pthread.h>"
# shellcheck disable=SC2046
cc -Wall -Werror -pthread -o "$tmp/port-edges" tests/port/edges.c \
  $(pkg-config --cflags --libs distlock)

step "find_package(distlock)"
cmake -S tests/install -B "$tmp/consumer-build" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$tmp/consumer-build" >/dev/null

# README ("Building and linking") tells a user of a prefix these same
# steps: PKG_CONFIG_PATH and CMAKE_PREFIX_PATH above, LD_LIBRARY_PATH (or
# ldconfig, or an rpath) below, and what happens without the last.
step "README: the steps for a prefix, and the loader's error without them"
for w in PKG_CONFIG_PATH CMAKE_PREFIX_PATH LD_LIBRARY_PATH ldconfig \
         "libdistlock.so.0: cannot open shared object file"; do
  grep -qF -- "$w" "$root/README.md" || { echo "README.md does not say \"$w\"" >&2; exit 1; }
done
if env -u LD_LIBRARY_PATH "$tmp/consumer-pc" >/dev/null 2>"$tmp/no-ld-path.err"; then
  echo "consumer-pc ran without LD_LIBRARY_PATH: README's warning is wrong" >&2; exit 1
fi
grep -qF "libdistlock.so.0: cannot open shared object file" "$tmp/no-ld-path.err" || {
  echo "consumer-pc without LD_LIBRARY_PATH:" >&2; cat "$tmp/no-ld-path.err" >&2; exit 1; }

if command -v redis-server >/dev/null 2>&1; then
  step "running the consumers against redis"
  export LD_LIBRARY_PATH=$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  bash "$root/tools/with-redis.sh" sh -c '
    set -e
    for exe in "$@"; do "$exe"; done' sh \
    "$tmp/consumer-pc" "$tmp/consumer-pc-static" \
    "$tmp/consumer-build/consumer" "$tmp/consumer-build/consumer_static"
  bash "$root/tools/with-redis.sh" sh -c '
    set -e
    [ "$("$1" relock)" = EDEADLK ]
    [ "$("$1" loopnamed)" = ok ]' sh "$tmp/port-edges"
  # the shared consumers must have used the installed library (ldd's whole
  # output first: grep -q ending at its first match can kill ldd with
  # SIGPIPE, which fails a pipefail pipeline though the match was there)
  loaded=$(ldd "$tmp/consumer-pc")
  grep -qF "$libdir/libdistlock.so.0" <<<"$loaded" || {
    echo "$loaded" >&2; echo "consumer-pc did not load $libdir/libdistlock.so.0" >&2; exit 1; }
else
  step "redis-server not found: built, not run"
fi
echo "install check: ok"
