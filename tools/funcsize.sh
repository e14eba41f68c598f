#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# funcsize.sh [-n N] [-m LINES] PATH...
# The functions of the C files under PATH (files or folders), largest
# first: lines from the signature to the closing brace, a rough cyclomatic
# complexity (1 + each if, for, while, case, &&, || and ?: in the body,
# comments and strings left out), and where.  For keeping functions small
# enough to hold in mind (docs/ARCHITECTURE.md keeps the table).
#   -n N      only the N largest (default: all)
#   -m LINES  exit 1 if any function is longer than LINES (a check)
# Needs Universal Ctags (ctags, Debian's universal-ctags).
set -eu
top=0 max=0
while getopts n:m: o; do
  case $o in
    n) top=$OPTARG ;;
    m) max=$OPTARG ;;
    *) echo "usage: $0 [-n N] [-m LINES] PATH..." >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
[ $# -gt 0 ] || { echo "usage: $0 [-n N] [-m LINES] PATH..." >&2; exit 2; }
command -v ctags >/dev/null || { echo "funcsize: ctags not found (universal-ctags)" >&2; exit 2; }

files=$(find "$@" -name '*.c' | sort)
[ -n "$files" ] || exit 0
# shellcheck disable=SC2086  # one file a word
ctags --c-kinds=f --fields=+ne -o - $files |
awk -F'\t' '{
    line = ""; end = ""
    for (i = 4; i <= NF; i++) {
      if ($i ~ /^line:/) line = substr($i, 6)
      if ($i ~ /^end:/) end = substr($i, 5)
    }
    if (line != "" && end != "") print $2 "\t" $1 "\t" line "\t" end
  }' |
while IFS=$'\t' read -r file name line end; do
  # the body, without comments, strings and character constants
  cc=$(sed -n "${line},${end}p" "$file" |
       perl -0777 -pe 's{/\*.*?\*/}{}gs; s{//[^\n]*}{}g; s{"(\\.|[^"\\])*"}{""}g; s{'"'"'(\\.|[^'"'"'\\])*'"'"'}{0}g' |
       grep -oE '\b(if|for|while|case)\b|&&|\|\||\?' | wc -l)
  printf '%d\t%d\t%s:%s\t%s\n' $((end - line + 1)) $((cc + 1)) "$file" "$line" "$name"
done | sort -t$'\t' -k1,1nr -k3,3 > "${TMPDIR:-/tmp}/funcsize.$$"
{
  printf 'lines\tcc\twhere\tfunction\n'
  if [ "$top" -gt 0 ]; then head -n "$top" "${TMPDIR:-/tmp}/funcsize.$$"; else cat "${TMPDIR:-/tmp}/funcsize.$$"; fi
} | column -t -s$'\t'
over=0
if [ "$max" -gt 0 ]; then
  over=$(awk -F'\t' -v m="$max" '$1 > m' "${TMPDIR:-/tmp}/funcsize.$$" | wc -l)
fi
rm -f "${TMPDIR:-/tmp}/funcsize.$$"
if [ "$over" -gt 0 ]; then
  echo "funcsize: $over function(s) longer than $max lines" >&2
  exit 1
fi
