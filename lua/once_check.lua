-- SPDX-License-Identifier: BSD-3-Clause
-- once_check.lua: has the once's routine completed (dist_once)?
-- KEYS: the once's seven: the six of a lock (common.lua: its "running"
--     state is a lock's hold, taken, renewed and released by the lock's
--     scripts), then <prefix>{tag}:d, its completion (once_done.lua)
-- ARGV: 1 channel prefix, 2 token
-- Reply: 1 completed (it stays so for as long as Redis keeps its data: the
--        key has no TTL); 0 not yet
local K_DONE = KEYS[7] or K_LOCK .. ':d'
return rcall('EXISTS', K_DONE)
