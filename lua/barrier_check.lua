-- SPDX-License-Identifier: BSD-3-Clause
-- barrier_check.lua: where the barrier is, for a process whose threads
-- wait on it and heard no push for a while (one may have been lost, or
-- never sent while its subscriber was away): every arrival of the
-- process in a generation below g, of the same incarnation, was released.
-- KEYS: the barrier's two (barrier_common.lua)
-- ARGV[1] channel prefix, [2] token
-- Reply: {1, id, g, n}: the incarnation, the generation under way and its
--     arrivals; {0} Redis has no barrier (it lost it: every arrival made
--     before no longer counts).
local b = bar_get()
if not b then return {0} end
return {1, b[2], b[3], b[4]}
