#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# man.sh VERSION HEADER NAMES_CSV MANDIR [EXTRA_PAGE...]: every page of
# MANDIR (and each EXTRA_PAGE) renders without a warning of
# `man --warnings`, names VERSION in its .TH line, and every dist_*
# function declared in HEADER is in NAMES_CSV (the names cmake/man.cmake
# installs a page or a link for) and in the NAME section of a page; and
# distlock(7) states each difference from pthreads.
set -uo pipefail
version=${1:?usage: $0 VERSION HEADER NAMES_CSV MANDIR [PAGE...]}
header=${2:?}
names=${3:?}
mandir=${4:?}
shift 4
fail=0
nok() { echo "FAIL $*"; fail=1; }

command -v man >/dev/null 2>&1 || { echo "man not found: skipped"; exit 0; }
pages=("$mandir"/*.[1-8] "$@")
for page in "${pages[@]}"; do
  warnings=$(LC_ALL=C.UTF-8 MANROFFSEQ='' MANWIDTH=80 man --warnings -E UTF-8 -l "$page" 2>&1 >/dev/null)
  [ -z "$warnings" ] || nok "$(basename "$page"): $warnings"
  grep -qE "^\.TH .*\"distlock $version\"" "$page" ||
    nok "$(basename "$page"): .TH does not say \"distlock $version\""
done

IFS=, read -r -a linked <<<"$names"
whatis=$(lexgrog "$mandir"/*.3 2>/dev/null || true)
for fn in $(grep -oE '\bdist_[a-z_]+ *\(' "$header" | tr -d '( ' | sort -u); do
  # (a here-string, not printf | grep -q: under pipefail a printf killed by
  # SIGPIPE after grep's early exit would fail the test)
  grep -qx "$fn" <<<"$(printf '%s\n' "${linked[@]}")" || nok "$fn: no page or link installed"
  # the NAME section of some section-3 page, as mandb reads it (whatis, apropos)
  if command -v lexgrog >/dev/null 2>&1; then
    grep -qF "\"$fn - " <<<"$whatis" || nok "$fn: in no NAME section (lexgrog $mandir/*.3)"
  else
    awk '/^\.SH NAME/{n=1;next} /^\.SH/{n=0} n' "$mandir"/*.3 | tr -d '\\%' |
      grep -qw -- "$fn" || nok "$fn: in no NAME section of $mandir/*.3"
  fi
done
# distlock(7) tells a porter, before porting, how the locks differ from
# pthreads (SPEC "Differences from pthreads"), each difference in words.
diffs=$(awk '/^\.SH DIFFERENCES FROM PTHREADS/{d=1;next} /^\.SH/{d=0} d' "$mandir/distlock.7" |
        grep -v '^\.[A-Z]*$' | sed -E 's/^\.[A-Z]+ //' | tr -d '\\' | tr '\n' ' ' | tr -s ' ')
for w in "default mutex type is reentrant" "relock deadlocks" "prefer writers" "no thread priorities" \
         "no process-private lock" "Destroying a held lock gives EBUSY" "ENOLCK" "EOWNERDEAD"; do
  grep -qF -- "$w" <<<"$diffs" || nok "distlock.7: DIFFERENCES FROM PTHREADS does not say \"$w\""
done
[ "$fail" -eq 0 ] && echo "man pages: ${#pages[@]} pages without warnings, every function has a page"
exit "$fail"
