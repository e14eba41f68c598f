#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# man.sh VERSION HEADER NAMES_CSV MANDIR [EXTRA_PAGE...]: every page of
# MANDIR (and each EXTRA_PAGE) renders without a warning of
# `man --warnings`, names VERSION in its .TH line, and every dist_*
# function declared in HEADER is in NAMES_CSV (the names cmake/man.cmake
# installs a page or a link for) and in the NAME section of a page;
# distlock(7) states each difference from pthreads; and the init pages
# say what a shared object initialized by any process does.
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
linked_lines=$(printf '%s\n' "${linked[@]}")
whatis=$(lexgrog "$mandir"/*.3 2>/dev/null || true)
for fn in $(grep -oE '\bdist_[a-z_]+ *\(' "$header" | tr -d '( ' | sort -u); do
  # (a here-string, not a pipe: grep -q leaving early would fail the
  # pipeline under pipefail once the list outgrows one write)
  grep -qx -- "$fn" <<<"$linked_lines" || nok "$fn: no page or link installed"
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
# The init pages agree with the code and with distlock(7) (checked by
# tests/test_fork.c, test_shared_object_initialized_by_child): an object
# in shared memory works whichever process initialized it, its name under
# 64 bytes; none keeps the old claim that one a child or a sibling
# initialized gives EINVAL.
flat() { tr '\n' ' ' <"$1" | sed -E 's/\.(B|I|BR|RB|IR) //g' | tr -s ' '; }
for p in dist_mutex_init.3 dist_rwlock_init.3 dist_cond_init.3 dist_sem_init.3 distlock.7; do
  text=$(flat "$mandir/$p")
  for w in "whichever process initialized it" "shorter than 64 bytes"; do
    grep -qF -- "$w" <<<"$text" || nok "$p: does not say \"$w\" of an object in shared memory"
  done
done
for page in "${pages[@]}"; do
  text=$(flat "$page")
  for old in "a sibling or a child initialized there gives" "initialized in shared memory by a sibling or child" \
             "if it is initialized before the fork"; do
    grep -qF -- "$old" <<<"$text" && nok "$(basename "$page"): still says \"$old\" (any process may initialize it)"
  done
done
[ "$fail" -eq 0 ] && echo "man pages: ${#pages[@]} pages without warnings, every function has a page"
exit "$fail"
