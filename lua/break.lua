-- SPDX-License-Identifier: BSD-3-Clause
-- break.lua: delete a stuck lock's holds and hand it to its waiters
-- (`distlock break`).  The next holder gets EOWNERDEAD.  Each process whose
-- hold it removes is told ('r KEY' on its channel): its threads must not
-- pass that hold on among themselves (shim/notify.c, shim/trust.h).  The
-- break takes a fence of its own, as the trace's (wf): on redlock:// a
-- release of a hold taken before it leaves it alone (common.lua,
-- forget_older).
-- KEYS: the six keys of common.lua.
-- ARGV: 1 channel prefix
-- Reply: number of holds removed
local n = rcall('EXISTS', K_LOCK) + rcall('ZCARD', K_RD)
if n > 0 then
  local holders = rcall('ZRANGE', K_RD, 0, -1)
  local w = rcall('HGET', K_LOCK, 'owner')
  if w then holders[#holders + 1] = w end
  for _, t in ipairs(holders) do push(t, 'r ' .. K_LOCK) end
  -- One key per command (common.lua: a cluster node importing the slot).
  rcall('DEL', K_LOCK)
  rcall('DEL', K_RD)
  rcall('DEL', K_RI)
  local f = int(next_fence(rcall('HGET', K_META, 'fence')))
  rcall('HSET', K_META, 'fence', f, 'wh', 'broken', 'wi', 'broken by distlock break', 'wr', '', 'wf', f)
  rcall('PEXPIRE', K_META, META_TTL)
end
grant_waiters(nil, false)
return n
