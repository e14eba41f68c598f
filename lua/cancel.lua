-- cancel.lua: withdraw the caller's place in the queue (a timed wait ran out).
-- KEYS: the six keys of common.lua.
-- ARGV: 1 channel prefix, 2 token, 3 mode 'w'|'r'
-- Reply: {1, fence, ownerdead, waiters} the lock had been granted meanwhile:
--        the caller holds it; {0} withdrawn
local token, mode = ARGV[2], ARGV[3]
local now = now_ms()
local mine = held_by(token, mode, now)
dequeue(token)
if mine then return {1, mine[1], mine[2], rcall('ZCARD', K_Q), 1} end
-- A writer at the head may have been holding back readers behind it.
grant_waiters(nil, false)
return {0}
