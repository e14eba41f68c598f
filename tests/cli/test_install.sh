#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# test_install.sh BUILD_DIR MANPAGE: the man page renders without warnings,
# and `cmake --install` puts bin/distlock and share/man/man1/distlock.1 in
# place, once each.  Needs no Redis.
set -u
build=${1:?usage: $0 BUILD_DIR MANPAGE}
page=${2:?usage: $0 BUILD_DIR MANPAGE}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/distlock-cli-install.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
pass=0
fail=0
ok() { pass=$((pass + 1)); echo "ok   $1"; }
nok() { fail=$((fail + 1)); echo "FAIL $1"; [ $# -gt 1 ] && sed 's/^/       | /' <<<"$2"; }

if command -v groff >/dev/null 2>&1; then
  warnings=$(groff -man -Tutf8 -ww -z "$page" 2>&1)
  if [ -z "$warnings" ]; then ok "distlock.1 renders without warnings (groff -ww)"; else nok "groff warnings" "$warnings"; fi
else
  ok "man page lint: skipped (no groff)"
fi
if grep -q '^\.TH DISTLOCK 1 ' "$page"; then ok "distlock.1 is a section 1 page"; else nok "no .TH DISTLOCK 1 line"; fi

if log=$(cmake --install "$build" --prefix "$tmp/prefix" 2>&1); then
  ok "cmake --install succeeds"
else
  nok "cmake --install failed" "$log"
fi
bin=$(find "$tmp/prefix" -path '*/bin/distlock' -type f | head -n 1)
man=$(find "$tmp/prefix" -path '*/man1/distlock.1' -type f | head -n 1)
if [ -n "$bin" ] && [ -x "$bin" ] && "$bin" --version | grep -q '^distlock '; then
  ok "installed: $(realpath --relative-to="$tmp/prefix" "$bin"), and it runs"
else
  nok "bin/distlock not installed (or does not run)"
fi
if [ -n "$man" ] && cmp -s "$man" "$page"; then
  ok "installed: $(realpath --relative-to="$tmp/prefix" "$man")"
else
  nok "man1/distlock.1 not installed"
fi
n=$(grep -c -E '/bin/distlock$' "$build/install_manifest.txt" 2>/dev/null)
if [ "$n" = 1 ]; then ok "the program is installed once"; else nok "bin/distlock installed $n times"; fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
