#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# test_engage.sh LIB BUILD_DIR - each wrapper engages on this glibc: every
# interposed function (and the GLIBC_2.2.5 versions older programs bind
# to) takes and releases the distributed lock of a mapped object, as Redis
# itself shows; see tests/preload/engage.c.  Run under tools/with-redis.sh.
. "$(dirname "$0")/lib.sh"

: "${DISTLOCK_URL:?run under tools/with-redis.sh}"
export DISTLOCK_PREFIX="dlpengage$$:"
export DLP_DIR=$WORK
export DISTLOCK_MAP="m=mutex:g_m;ec=mutex:g_ec;rec=mutex:g_rec;cv=mutex:g_cvm;rw=rwlock:g_rw;f=flock:$WORK/a.lock;f=flock:$WORK/b.lock"
preload "$BIN/preload_engage" 2>"$WORK/err"
rc=$?
cat "$WORK/err" >&2
exit $rc
