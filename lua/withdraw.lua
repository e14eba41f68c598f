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
-- A hold taken over a lapse consumed the death trace (common.lua,
-- take_meta): nobody was told of that lapse by this request, so the trace
-- goes back with the hold.
-- KEYS: the six keys of common.lua.
-- ARGV: 1 channel prefix, 2 token, 3 mode 'w'|'r', 4 the request's
--       registration id (acquire.lua's ARGV[7]),
--       5 (redlock:// only; optional) the fence the caller's acquisition
--       got from its quorum, when it counted elsewhere: it was told of any
--       lapse, and a death trace older than that goes (common.lua,
--       forget_older), whether or not the request had run here
-- Reply: 1 a hold released, 2 a queue place withdrawn, 0 nothing of it left
local token, mode, rid = ARGV[2], ARGV[3], tonumber(ARGV[4])
local older = ARGV[5]

if dequeue_upto(token, rid) then
  -- A writer at the head may have been holding back readers behind it.
  grant_waiters(nil, false)
  forget_older(older)
  return 2
end

-- The hold's registration id, and the trace it consumed (od 1), if any.
local cur, prev
if mode == 'w' then
  local h = rcall('HMGET', K_LOCK, 'owner', 'rid', 'od', 'pt')
  if h[1] == token then
    cur = tonumber(h[2])
    prev = h[3] == '1' and h[4] and cmsgpack.unpack(h[4]) or nil
  end
elseif rcall('ZSCORE', K_RD, token) then
  local r = rcall('HGET', K_RI, token)
  local v = r and cmsgpack.unpack(r)
  cur = v and tonumber(v[5])
  prev = v and v[4] == 1 and v[6] or nil
end
if not cur or cur > rid then
  -- Nothing of it held: a hold it was granted may have lapsed before this
  -- ran, leaving a death trace of a hold nobody was given.
  if not cur and mode == 'w' then trace_lapsed_unclaimed(token, rid) end
  forget_older(older)
  return 0
end
if mode == 'w' then
  rcall('DEL', K_LOCK)
  trace_restore(prev)
else
  rcall('ZREM', K_RD, token)
  rcall('HDEL', K_RI, token)
  if prev then trace_restore(prev) end
end
forget_older(older)
grant_waiters(nil, mode == 'w')
return 1
