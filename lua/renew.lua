-- SPDX-License-Identifier: BSD-3-Clause
-- renew.lua: extend the caller's hold by a lease: the watchdog's call, and
-- posted (no reply read) when a pushed grant or a lingering hold is claimed.
-- KEYS: the six keys of common.lua.
-- ARGV: 1 channel prefix, 2 token, 3 mode 'w'|'r', 4 lease ms ('0': only
--       check that the hold is there: a fixed lease is never extended),
--       5 the hold's fence: only that hold is renewed, so a renewal that
--       arrives late (a post, a resend) never extends a later hold; ''
--       for redlock, whose servers each number a hold themselves (the
--       caller knows only the largest): the caller's hold in that mode,
--       6 (redlock:// only) 'm': a live writer mark of another process
--       counts as one waiter (common.lua, ww_live)
-- Reply: 0 the hold is gone (or is another hold than the one named);
--        n >= 1 renewed (or there), and n - 1 waiters are queued for the
--        lock: a holder learns that others wait without relying on any push
-- A write hold granted by push is named in the death trace only once its
-- holder claims it (common.lua, take_meta): a renewal (or a check) is its
-- holder's claim, should the posted one (touch.lua) not have reached Redis.
local token, mode, lease, fence = ARGV[2], ARGV[3], tonumber(ARGV[4]), tonumber(ARGV[5])
-- The queued waiters, and redlock's waiting writer (which does not queue).
local function waiting()
  local n = rcall('ZCARD', K_Q)
  if ARGV[6] == 'm' then
    local ww = ww_live(now_ms())
    if ww and ww ~= token then n = n + 1 end
  end
  return n
end
if mode == 'w' then
  local h = rcall('HMGET', K_LOCK, 'owner', 'fence', 'info')
  if h[1] ~= token or (fence and tonumber(h[2]) ~= fence) then return 0 end
  if lease > 0 then rcall('PEXPIRE', K_LOCK, lease) end
  if rcall('HGET', K_META, 'wh') == PENDING .. token then
    rcall('HSET', K_META, 'wh', token, 'wi', h[3])
  end
  return 1 + waiting()
end
local now = now_ms()
local s = rcall('ZSCORE', K_RD, token)
if not s or tonumber(s) <= now then return 0 end
local r = rcall('HGET', K_RI, token)
if fence and (not r or tonumber(cmsgpack.unpack(r)[3]) ~= fence) then return 0 end
if lease > 0 then
  rcall('ZADD', K_RD, int(now + lease), token)
  extend(K_RD, lease)
  extend(K_RI, lease)
end
return 1 + waiting()
