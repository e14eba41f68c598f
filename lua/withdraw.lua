-- SPDX-License-Identifier: BSD-3-Clause
-- withdraw.lua: undo one acquire request whose reply its caller never got.
-- shim/link.c writes it right behind that request, on the same connection,
-- when it gives up on the connection (a stalled server: the request may
-- still run when it resumes), so it runs after the request; the watchdog
-- sends it again from a new connection.  Only what that request (or an
-- earlier one of the caller's: the caller gave up on those too) made is
-- undone: its place in the queue, or a hold taken for it that no later
-- request of the caller has claimed (hold_rid, common.lua); the caller may
-- meanwhile have asked again on another connection.
-- KEYS: the six keys of common.lua.
-- ARGV: 1 channel prefix, 2 token, 3 mode 'w'|'r', 4 the request's
--       registration id (acquire.lua's ARGV[7])
-- Reply: 1 a hold released, 2 a queue place withdrawn, 0 nothing of it left
local token, mode, rid = ARGV[2], ARGV[3], tonumber(ARGV[4])

if dequeue_upto(token, rid) then
  -- A writer at the head may have been holding back readers behind it.
  grant_waiters(nil, false)
  return 2
end

local held
if mode == 'w' then
  held = rcall('HGET', K_LOCK, 'owner') == token
else
  held = rcall('ZSCORE', K_RD, token) ~= false
end
local cur = held and tonumber(hold_rid(token, mode))
if not cur or cur > rid then return 0 end
if mode == 'w' then
  rcall('DEL', K_LOCK)
  rcall('HSET', K_META, 'wh', '', 'wi', '')
else
  rcall('ZREM', K_RD, token)
  rcall('HDEL', K_RI, token)
end
grant_waiters(nil, mode == 'w')
return 1
