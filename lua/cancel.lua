-- SPDX-License-Identifier: BSD-3-Clause
-- cancel.lua: withdraw the caller's place in the queue (a timed wait ran out).
-- KEYS: the six keys of common.lua.
-- ARGV: 1 channel prefix, 2 token, 3 mode 'w'|'r', 4 the registration id of
--       the wait (acquire.lua's ARGV[7]): only a registration of it or of
--       an earlier request is withdrawn, never a later one (a stale cancel),
--       5 (redlock:// only) 'm': clear the caller's writer mark (a writer
--       that gave up: readers need not wait for the mark to lapse)
-- Reply: {1, fence, ownerdead, waiters} the lock had been granted meanwhile:
--        the caller holds it; {0} withdrawn
local token, mode, rid = ARGV[2], ARGV[3], tonumber(ARGV[4])
if ARGV[5] == 'm' then ww_clear(token) end
local now = now_ms()
local mine = held_by(token, mode, now)
dequeue_upto(token, rid)
if mine then return {1, mine[1], mine[2], rcall('ZCARD', K_Q), 1} end
-- A writer at the head may have been holding back readers behind it.
grant_waiters(nil, false)
return {0}
