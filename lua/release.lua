-- SPDX-License-Identifier: BSD-3-Clause
-- release.lua: end the caller's hold and hand the lock to the next waiters.
-- KEYS: the six keys of common.lua.
-- ARGV: 1 channel prefix, 2 token, 3 mode 'w'|'r', 4 the hold's fence (its
--       id: only the hold the release was sent for is ended, never a later
--       hold of the same process), 5 (optional) the registration id the hold
--       was taken or last claimed with, which names it as well (redlock://,
--       whose servers give one hold different fences),
--       6 (redlock:// only; absent elsewhere) 'o': ARGV[4] is then the
--       largest fence the caller's quorum gave it, which the meta hash's
--       fence is raised to (so the next hold's fence is above it on every
--       server, whatever their clocks say), and where the caller holds
--       nothing (any more) a death trace older than its hold goes too
--       (common.lua, forget_older); '' where ARGV[7] follows elsewhere,
--       7 (a robust lock's holder that was told EOWNERDEAD and did not make
--       it consistent: dist_mutex_consistent) the unrecoverable mark, the
--       hold's fence as its holder knows it: held, the lock is left
--       unrecoverable (common.lua, put_unrecoverable) rather than handed
--       on, and its queued waiters are told to ask again ('u KEY'), to be
--       refused; lapsed, its death trace stays, so that the next holder
--       is told EOWNERDEAD (the state is as inconsistent as after a death)
-- Reply: 1 released; 0 the caller held nothing (lease ran out, key deleted,
--        the server lost it); 2 this very hold was released already, by an
--        earlier copy of the call whose reply was lost (a resend), or it is
--        no longer the process's latest hold (a release that arrived late)
local token, mode, fence, rid = ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local older = ARGV[6] == 'o' and fence or nil
local unrec = ARGV[7] ~= nil and ARGV[7] ~= '' and ARGV[7] or nil
-- The last hold each process released, so that a resend can tell "released
-- by my first copy" (2) from "lost" (0).  Fences are unique, so an old mark
-- never matches a later hold.
local MARK = 'x:' .. token

local function named(f, r)
  return f == fence or (rid ~= nil and rid ~= '' and r == rid)
end

-- redlock: adds the meta hash's fence, raised to the caller's, to `set`
-- (the meta hash's fields to write) if it is below (`cur`).
local function raise(set, cur)
  if older and (tonumber(cur) or 0) < tonumber(fence) then
    set[#set + 1] = 'fence'
    set[#set + 1] = fence
  end
  return set
end

if mode == 'w' then
  local h = rcall('HMGET', K_LOCK, 'owner', 'fence', 'rid', 'mx')
  if h[1] == token then
    if not named(h[2], h[3]) then return 2 end
    if unrec then
      local cur = older and rcall('HGET', K_META, 'fence')
      marks_added(rcall('HSET', K_META, unpack(raise({'wh', '', 'wi', '', MARK, fence}, cur))))
      put_unrecoverable(unrec)
      for _, t in ipairs(rcall('ZRANGE', K_Q, 0, -1)) do
        push(t, 'u ' .. K_LOCK)
      end
      return 1
    end
    local hw, w, more = head_waiter()
    if hw and w[1] == 'w' then
      -- Hand it to the waiting writer in place: its hold overwrites ours.
      -- No reader can hold it (we did), and the meta hash's fence is ours
      -- (every acquisition sets both), so the next one follows from it.
      local now = now_ms()
      local f = next_fence(h[2])
      -- (the grantee is traced once it claims the grant: take_meta)
      local set = {'fence', int(f), 'wh', PENDING .. hw, 'wi', '', 'wr', w[4], 'wf', int(f),
                   MARK, fence}
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
    local cur = older and rcall('HGET', K_META, 'fence')
    marks_added(rcall('HSET', K_META, unpack(raise({'wh', '', 'wi', '', MARK, fence}, cur))))
    if hw then grant_waiters(nil, true) end
    return 1
  end
  local m = rcall('HMGET', K_META, MARK, 'wh', 'fence', 'wr', 'wf')
  if m[1] == fence then return 2 end
  -- Lapsed.  Its holder reports the lapse (ENOLCK): the next one need not
  -- hear of it too, unless someone took the lock in between.  Its trace
  -- names it by fence, or (redlock, where each server gave the hold a
  -- fence of its own) by registration id.
  if not unrec and m[2] == token and ((m[5] or m[3]) == fence or named(nil, m[4])) then
    rcall('HSET', K_META, unpack(raise({'wh', '', 'wi', '', 'wr', '', 'wf', ''}, m[3])))
  else
    forget_older(older, {m[2], m[5]})
    local set = raise({}, m[3])
    if #set > 0 then rcall('HSET', K_META, unpack(set)) end
  end
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
-- (redlock: the meta hash's fence and trace too, in the same read)
local m = older and rcall('HMGET', K_META, MARK, 'fence', 'wh', 'wf')
if held == 1 then
  marks_added(rcall('HSET', K_META, unpack(raise({MARK, fence}, m and m[2]))))
elseif (m and m[1] or m == nil and rcall('HGET', K_META, MARK)) == fence then
  held = 2
elseif m then
  forget_older(older, {m[3], m[4]})
  local set = raise({}, m[2])
  if #set > 0 then rcall('HSET', K_META, unpack(set)) end
end
grant_waiters(nil, false)
return held
