#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# exports.sh LIBDISTLOCK_SO HEADER: the shared library exports the dist_*
# functions of the header and nothing else, each under the version node
# DISTLOCK_0 (cmake/libdistlock.map).
set -euo pipefail
lib=${1:?usage: $0 LIBDISTLOCK_SO HEADER}
header=${2:?usage: $0 LIBDISTLOCK_SO HEADER}

# nm -D prints "ADDR T dist_mutex_lock@@DISTLOCK_0" and "0 A DISTLOCK_0".
syms=$(nm -D --defined-only "$lib" | awk '{print $NF}')
bad=$(grep -vE '^(dist_[a-z_]+@@DISTLOCK_0|DISTLOCK_0)$' <<<"$syms" || true)
if [ -n "$bad" ]; then
  echo "exported by $lib besides dist_*@@DISTLOCK_0:" >&2
  sed 's/^/  /' <<<"$bad" >&2
  exit 1
fi
missing=""
for fn in $(grep -oE '\bdist_[a-z_]+ *\(' "$header" | tr -d '( ' | sort -u); do
  grep -qx "$fn@@DISTLOCK_0" <<<"$syms" || missing="$missing $fn"
done
if [ -n "$missing" ]; then
  echo "declared in $(basename "$header") but not exported by $lib:$missing" >&2
  exit 1
fi
echo "exports: $(grep -c '^dist_' <<<"$syms") dist_* functions, all DISTLOCK_0, nothing else"
