#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# check.sh: builds the Debian packages (cmake/package.cmake) in a temporary
# Release tree configured for /usr, checks them with lintian (errors fail
# the check), unpacks each with dpkg-deb -x into a temporary root (nothing
# is installed into the system), and compiles and runs programs against
# what they hold: tests/install/consumer.c through the packaged pkg-config
# file, tests/install/version.c, the distlock command and the interposer,
# against a private redis-server (tools/with-redis.sh).
#
# Needs cmake, cpack, dpkg-deb, dpkg-shlibdeps, lintian (tools/deps.sh --test).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
jobs=${DISTLOCK_JOBS:-2}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/distlock-packages.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
step() { echo "-- $*"; }
die() { echo "packages: $*" >&2; exit 1; }

for tool in cpack dpkg-deb dpkg-shlibdeps lintian pkg-config; do
  command -v "$tool" >/dev/null 2>&1 || die "$tool not found (run tools/deps.sh --test)"
done

build=$tmp/build
step "building a Release tree for /usr"
if ! { cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=/usr \
         -DDISTLOCK_TESTS=OFF -DDISTLOCK_EXAMPLES=OFF -DDISTLOCK_SANITIZE=OFF -DDISTLOCK_TSAN=OFF &&
       cmake --build "$build" -j "$jobs"; } >"$tmp/build.log" 2>&1; then
  cat "$tmp/build.log" >&2
  die "build failed"
fi

step "cpack -G DEB"
(cd "$build" && cpack -G DEB -B "$tmp/debs") >"$tmp/cpack.log" 2>&1 || {
  cat "$tmp/cpack.log" >&2; die "cpack failed"; }
version=$(sed -n 's/^project(distlock VERSION \([0-9.]*\).*/\1/p' "$root/CMakeLists.txt")
debs=()
for pkg in libdistlock0 libdistlock-dev distlock-tools; do
  deb=$(find "$tmp/debs" -maxdepth 1 -name "${pkg}_${version}-*_*.deb" -print -quit)
  [ -n "$deb" ] || die "no ${pkg}_${version}-*.deb among: $(ls "$tmp/debs")"
  debs+=("$deb")
  echo "   $(basename "$deb"): $(dpkg-deb -f "$deb" Depends)"
done

# Errors only.  None is suppressed: the copyright file, changelog.Debian.gz,
# gzipped manual pages, the shlibs file and the ldconfig trigger are all
# there (cmake/package.cmake, cmake/man.cmake).  What stays are warnings of a
# package built outside Debian's tooling (no bug closed by the "initial
# upload", CPack's postinst calling ldconfig, the interposer without a
# soname: it is loaded by LD_PRELOAD, never linked).
step "lintian (errors fail)"
lint=0
lintian --fail-on error --tag-display-limit 0 "${debs[@]}" >"$tmp/lintian.log" 2>&1 || lint=1
grep -v 'running with root privileges' "$tmp/lintian.log" | sed 's/^/   /' || true
[ "$lint" -eq 0 ] || die "lintian reported errors"

step "dpkg-deb -x into $tmp/root"
sysroot=$tmp/root
for deb in "${debs[@]}"; do dpkg-deb -x "$deb" "$sysroot"; done
libdir=$(dirname "$(find "$sysroot" -name libdistlock.so.0 -print -quit)")
[ -d "$libdir" ] || die "no libdistlock.so.0 in the packages"
for f in "$sysroot/usr/include/distlock.h" "$sysroot/usr/include/distlock/pthread.h" \
         "$libdir/libdistlock.so" "$libdir/libdistlock.a" \
         "$libdir/pkgconfig/distlock.pc" "$libdir/cmake/distlock/distlockConfig.cmake" \
         "$libdir/libdistlock_preload.so" "$sysroot/usr/bin/distlock" "$sysroot/usr/bin/distlock-bench"; do
  [ -e "$f" ] || die "missing ${f#"$sysroot"}"
done

step "man: every function has a page"
export MANPATH=$sysroot/usr/share/man
for fn in $(grep -oE '\bdist_[a-z_]+ *\(' "$sysroot/usr/include/distlock.h" | tr -d '( ' | sort -u); do
  page=$(man -w "$fn" 2>/dev/null) || die "man $fn: no page"
  case $page in "$MANPATH"/man3/*) ;; *) die "man $fn: $page is not the packaged page";; esac
done
for name in distlock.1 distlock-bench.1 distlock.7 distlock_preload.8 distlock_pthread.7 \
            dist_mutex_timedlock.3; do
  page=$(man -w "${name##*.}" "${name%.*}") || die "man ${name%.*}: no page"
  warnings=$(LC_ALL=C.UTF-8 MANROFFSEQ='' MANWIDTH=80 man --warnings -E UTF-8 -l "$page" 2>&1 >/dev/null)
  [ -z "$warnings" ] || die "man $name: $warnings"
done
unset MANPATH

step "compiling against the unpacked packages"
export PKG_CONFIG_PATH=$libdir/pkgconfig PKG_CONFIG_SYSROOT_DIR=$sysroot
# shellcheck disable=SC2046  # pkg-config prints a list of words
cc -Wall -Werror -o "$tmp/consumer" tests/install/consumer.c $(pkg-config --cflags --libs distlock)
IFS=. read -r major minor patch <<<"$version"
# shellcheck disable=SC2046
cc -Wall -Werror -o "$tmp/version" tests/install/version.c \
  -DEXPECT_MAJOR="$major" -DEXPECT_MINOR="$minor" -DEXPECT_PATCH="$patch" \
  -DEXPECT_VERSION="\"$version\"" $(pkg-config --cflags --libs distlock)
unset PKG_CONFIG_PATH PKG_CONFIG_SYSROOT_DIR
bash tests/install/exports.sh "$libdir/libdistlock.so.0" "$sysroot/usr/include/distlock.h"

step "running them against a private redis-server"
export LD_LIBRARY_PATH=$libdir
# (ldd's output first: grep -q ending early would fail a pipefail pipeline)
loaded=$(ldd "$tmp/consumer")
grep -qF "=> $libdir/libdistlock.so.0" <<<"$loaded" || {
  echo "$loaded" >&2; die "consumer does not load $libdir/libdistlock.so.0"; }
"$tmp/version"
bash tools/with-redis.sh bash -c '
  set -e
  "$1"
  "$2/usr/bin/distlock" --version
  "$2/usr/bin/distlock" "packages-check:$$" -- true
  touch "$3/jobs.lock"
  LD_PRELOAD="$4/libdistlock_preload.so" DISTLOCK_MAP="jobs=flock:$3/jobs.lock" \
    flock "$3/jobs.lock" true
  echo "consumer, distlock and the interposer ran"' check "$tmp/consumer" "$sysroot" "$tmp" "$libdir"
echo "packages check: ok"
