-- common.lua: helpers shared by every operation script; the build prefixes
-- it to each lua/<op>.lua, so each embedded script is self-contained.
--
-- Every operation gets the same six KEYS, all sharing the {name} hash tag:
--   KEYS[1] lock     <prefix>{name}     hash while write-held: owner, info, since,
--                                       fence, lease, od (acquired after a lapse),
--                                       rid (the registration id of the request
--                                       the owner last took or claimed it with)
--   KEYS[2] readers  <prefix>{name}:r   zset reader token -> lease deadline (ms)
--   KEYS[3] rinfo    <prefix>{name}:ri  hash reader token -> msgpack {info, since, fence,
--                                       od, rid}
--   KEYS[4] queue    <prefix>{name}:q   zset waiter token -> arrival sequence
--   KEYS[5] waiters  <prefix>{name}:w   hash waiter token -> msgpack {mode, lease, deadline,
--                                       regid, info, claim}
--   KEYS[6] meta     <prefix>{name}:m   hash fence, seq, wh/wi (the writer whose hold
--                                       has not been released: its lapse means EOWNERDEAD
--                                       unless wl, the writer whose hold lingers after its
--                                       unlock (shim/mark.c), names the same)
-- ARGV[1] is the channel prefix: a process listens on ARGV[1] .. its token.
-- All times are Redis's clock, in ms: no client clock decides anything.
local rcall = redis.call
local K_LOCK, K_RD, K_RI, K_Q, K_W, K_META = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local CHAN = ARGV[1]
local META_TTL = 7 * 24 * 3600 * 1000

-- Lua numbers are doubles: format whole numbers ourselves, tostring() would
-- print large ones in exponent form.
local function int(n) return string.format('%.0f', n) end

-- Redis time, read once per script and only if needed (an uncontended
-- release never needs it).
local NOW
local function now_ms()
  if not NOW then
    local t = rcall('TIME')
    NOW = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  end
  return NOW
end

-- Extends a key's TTL to at least ms; never shortens it.
local function extend(key, ms)
  ms = tonumber(ms)
  if rcall('PTTL', key) < ms then rcall('PEXPIRE', key, ms) end
end

-- Count of readers whose lease has not run out; drops the lapsed ones.
local function live_readers(now)
  if rcall('EXISTS', K_RD) == 0 then return 0 end
  local gone = rcall('ZRANGEBYSCORE', K_RD, '-inf', now)
  for _, t in ipairs(gone) do
    rcall('ZREM', K_RD, t)
    rcall('HDEL', K_RI, t)
  end
  return rcall('ZCARD', K_RD)
end

-- ms until the current holders' leases run out (what a waiter may sleep).
local function holders_pttl(now)
  local p = rcall('PTTL', K_LOCK)
  if p > 0 then return p end
  local last = rcall('ZRANGE', K_RD, -1, -1, 'WITHSCORES')
  if last[2] then return math.max(tonumber(last[2]) - now, 1) end
  return 1
end

-- The next fence: above every earlier one, and never below Redis time in us,
-- so fences keep increasing even after the meta hash expired unused.  The
-- meta TTL is pushed back only when a day of it has passed (`exp`), not at
-- every acquisition.
local function take_meta(now, writer, info)
  local m = rcall('HMGET', K_META, 'fence', 'wh', 'exp', 'wl')
  local fence = math.max((tonumber(m[1]) or 0) + 1, now * 1000)
  local dead = 0
  if m[2] and m[2] ~= m[4] then dead = 1 end
  if m[4] then rcall('HDEL', K_META, 'wl') end
  if writer then
    rcall('HSET', K_META, 'fence', int(fence), 'wh', writer, 'wi', info)
  else
    rcall('HSET', K_META, 'fence', int(fence))
    if m[2] then rcall('HDEL', K_META, 'wh', 'wi') end
  end
  if not m[3] or tonumber(m[3]) < now + META_TTL - 86400000 then
    rcall('HSET', K_META, 'exp', int(now + META_TTL))
    rcall('PEXPIRE', K_META, META_TTL)
  end
  return fence, dead
end

-- ttl is the lease, or for a hold pushed to a waiter the shorter claim
-- window: a waiter that died before its grant arrived holds the lock only
-- that long; a live one's watchdog extends it to the lease.  rid is the
-- registration id of the request the hold is for (withdraw.lua).
local function take_write(token, lease, info, now, ttl, rid)
  local fence, dead = take_meta(now, token, info)
  rcall('HSET', K_LOCK, 'owner', token, 'info', info, 'since', int(now),
        'fence', int(fence), 'lease', lease, 'od', dead, 'rid', rid)
  rcall('PEXPIRE', K_LOCK, ttl)
  return fence, dead
end

local function take_read(token, lease, info, now, ttl, rid)
  local fence, dead = take_meta(now, nil, info)
  rcall('ZADD', K_RD, int(now + ttl), token)
  rcall('HSET', K_RI, token, cmsgpack.pack({info, now, fence, dead, rid}))
  extend(K_RD, ttl)
  extend(K_RI, ttl)
  return fence, dead
end

-- The registration id of the caller's hold in this mode (nil: none, or a
-- hold from before ids were kept), and a request `rid` taking it over: a
-- request that finds the hold already its own ("mine") claims it, so that
-- withdrawing an earlier request no longer ends it.  A process numbers its
-- requests in order, so a stale request that arrives late claims nothing
-- from a later one.
local function hold_rid(token, mode)
  if mode == 'w' then return rcall('HGET', K_LOCK, 'rid') end
  local r = rcall('HGET', K_RI, token)
  return r and cmsgpack.unpack(r)[5]
end

local function claim_hold(token, mode, rid)
  local cur = tonumber(hold_rid(token, mode))
  if cur and cur >= tonumber(rid) then return end
  if mode == 'w' then
    rcall('HSET', K_LOCK, 'rid', rid)
    return
  end
  local r = rcall('HGET', K_RI, token)
  if r then
    local v = cmsgpack.unpack(r)
    v[5] = rid
    rcall('HSET', K_RI, token, cmsgpack.pack(v))
  end
end

-- {fence, od} of the caller's hold in this mode, or nil.  `w` is the lock
-- hash's {owner, fence, od} when the caller already read it.
local function held_by(token, mode, now, w)
  if mode == 'w' then
    local h = w or rcall('HMGET', K_LOCK, 'owner', 'fence', 'od')
    if h[1] == token then return {tonumber(h[2]), tonumber(h[3]) or 0} end
    return nil
  end
  local s = rcall('ZSCORE', K_RD, token)
  if not s or tonumber(s) <= now then return nil end
  local r = rcall('HGET', K_RI, token)
  if not r then return {0, 0} end
  local v = cmsgpack.unpack(r)
  return {v[3], v[4]}
end

local function dequeue(token)
  rcall('ZREM', K_Q, token)
  rcall('HDEL', K_W, token)
end

-- The first waiter whose registration has not expired; expired ones (waiters
-- that died or gave up) are dropped on the way.
local function head_waiter(now)
  while true do
    local h = rcall('ZRANGE', K_Q, 0, 0)[1]
    if not h then return nil end
    local raw = rcall('HGET', K_W, h)
    if raw then
      local w = cmsgpack.unpack(raw)
      if w[3] > now then return h, w end
    end
    dequeue(h)
  end
end

-- Hands the lock, if no writer holds it, to the head of the queue: one
-- writer, or every reader up to the next writer.  Each grantee is told by a
-- push that carries its registration id and fence, so it needs no further
-- round trip.  A grant to `caller` is returned instead of pushed.  Returns
-- that grant (or nil), how many holds were granted, and whether the queue
-- is now empty.  `free` says the caller already knows no writer holds it.
local function grant_waiters(caller, free)
  local mine, n = nil, 0
  while free or rcall('EXISTS', K_LOCK) == 0 do
    free = false
    if n == 0 and rcall('EXISTS', K_Q) == 0 then return nil, 0, true end
    local now = now_ms()
    local h, w = head_waiter(now)
    if not h then return mine, n, true end
    local fence, dead
    local ttl = w[6]
    if h == caller then ttl = w[2] end
    if w[1] == 'w' then
      if live_readers(now) > 0 then break end
      fence, dead = take_write(h, w[2], w[5], now, ttl, w[4])
    else
      fence, dead = take_read(h, w[2], w[5], now, ttl, w[4])
    end
    dequeue(h)
    n = n + 1
    local more = rcall('ZCARD', K_Q)
    if h == caller then
      mine = {fence, dead, more}
    else
      rcall('PUBLISH', CHAN .. h, 'g ' .. w[4] .. ' ' .. int(fence) .. ' ' .. dead ..
            ' ' .. more .. ' ' .. K_LOCK)
    end
    if w[1] == 'w' then break end
  end
  return mine, n, false
end
