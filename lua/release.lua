-- SPDX-License-Identifier: BSD-3-Clause
-- release.lua: end the caller's hold and hand the lock to the next waiters.
-- KEYS: the six keys of common.lua.
-- ARGV: 1 channel prefix, 2 token, 3 mode 'w'|'r', 4 the hold's fence (its
--       id: only the hold the release was sent for is ended, never a later
--       hold of the same process), 5 (optional) the registration id the hold
--       was taken or last claimed with, which names it as well (redlock://,
--       whose servers give one hold different fences)
-- Reply: 1 released; 0 the caller held nothing (lease ran out, key deleted,
--        the server lost it); 2 this very hold was released already, by an
--        earlier copy of the call whose reply was lost (a resend), or it is
--        no longer the process's latest hold (a release that arrived late)
local token, mode, fence, rid = ARGV[2], ARGV[3], ARGV[4], ARGV[5]
-- The last hold each process released, so that a resend can tell "released
-- by my first copy" (2) from "lost" (0).  Fences are unique, so an old mark
-- never matches a later hold.
local MARK = 'x:' .. token

local function named(f, r)
  return f == fence or (rid ~= nil and rid ~= '' and r == rid)
end

if mode == 'w' then
  local h = rcall('HMGET', K_LOCK, 'owner', 'fence', 'rid', 'mx')
  if h[1] == token then
    if not named(h[2], h[3]) then return 2 end
    local hw, w, more = head_waiter()
    if hw and w[1] == 'w' then
      -- Hand it to the waiting writer in place: its hold overwrites ours.
      -- No reader can hold it (we did), and the meta hash's fence is ours
      -- (every acquisition sets both), so the next one follows from it.
      local now = now_ms()
      local f = next_fence(h[2])
      -- (the grantee is traced once it claims the grant: take_meta)
      local set = {'fence', int(f), 'wh', PENDING .. hw, 'wi', '', MARK, fence}
      local mx, renew = meta_exp(h[4], now, set)
      local added = rcall('HSET', K_META, unpack(set))
      if renew then rcall('PEXPIRE', K_META, META_TTL) end
      marks_added(added)
      put_write(hw, w[2], w[5], now, w[6], w[4], f, 0, mx)
      dequeue(hw)
      push_grant(hw, w, f, 0, more)
      return 1
    end
    rcall('DEL', K_LOCK)
    marks_added(rcall('HSET', K_META, 'wh', '', 'wi', '', MARK, fence))
    if hw then grant_waiters(nil, true) end
    return 1
  end
  local m = rcall('HMGET', K_META, MARK, 'wh', 'fence')
  if m[1] == fence then return 2 end
  -- Lapsed.  Its holder reports the lapse (ENOLCK): the next one need not
  -- hear of it too, unless someone took the lock in between.
  if m[2] == token and m[3] == fence then rcall('HSET', K_META, 'wh', '', 'wi', '') end
  if not h[1] then grant_waiters(nil, true) end
  return 0
end

local raw = rcall('HGET', K_RI, token)
local v = raw and cmsgpack.unpack(raw)
-- A reader's record names its hold (a hold from before records were kept
-- has none: it is taken to be this one).
if v and not named(int(v[3]), v[5] and tostring(v[5])) then return 2 end
local s = rcall('ZSCORE', K_RD, token)
local held = 1
if not s or tonumber(s) <= now_ms() then held = 0 end
if s then
  rcall('ZREM', K_RD, token)
  if raw then rcall('HDEL', K_RI, token) end
end
if held == 1 then
  marks_added(rcall('HSET', K_META, MARK, fence))
elseif rcall('HGET', K_META, MARK) == fence then
  held = 2
end
grant_waiters(nil, false)
return held
