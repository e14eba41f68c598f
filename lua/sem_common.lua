-- SPDX-License-Identifier: BSD-3-Clause
-- sem_common.lua: what the semaphore's scripts (lua/sem_*.lua) share; the
-- build puts it after common.lua in front of each of them.
--
-- The keys of semaphore NAME (tag \x01 's' NAME: shim/base/keys.c), in
-- KEYS order:
--   KEYS[1] sem      <prefix>{tag}     hash: k ('c' counting, 'l' leased),
--                                      n0 (the value it was created with),
--                                      v (counting: the value), n (leased:
--                                      the number of permits), used (leased:
--                                      permits of the holders in :l, live or
--                                      not yet dropped), seq (queue counter),
--                                      fence (leased: the last hold's),
--                                      i (its incarnation: a number drawn
--                                      when it was created, never 0), ib
--                                      (when it was created, ms),
--                                      s:<token> (that process's last
--                                      operation: "ID OUTCOME MS", see
--                                      sess_*), sp (when old s: fields were
--                                      last pruned, ms)
--   KEYS[2] queue    <prefix>{tag}:q   zset token -> arrival sequence: a
--                                      process's one registration (its one
--                                      thread that waits in Redis)
--   KEYS[3] due      <prefix>{tag}:d   zset token -> the registration's
--                                      deadline (ms): a waiter that dies
--                                      leaves the queue that soon
--   KEYS[4] regs     <prefix>{tag}:w   hash token -> msgpack {regid, info,
--                                      since}: the id its wake-ups carry,
--                                      when it first queued (ms)
--   KEYS[5] leases   <prefix>{tag}:l   zset holder token -> lease deadline
--                                      (ms) (leased)
--   KEYS[6] holders  <prefix>{tag}:h   hash holder token -> msgpack {count,
--                                      fence, since, info} (leased)
-- Only KEYS[1] may be declared (redis-cluster://, under ASK: the others
-- are derived, and every command names one key).  ARGV[1] is the channel
-- prefix, ARGV[2] the caller's token; the operations (sem_wait, sem_post,
-- sem_cancel) then take ARGV[3] the kind the caller's object has ('c',
-- 'l'), ARGV[4] its initial value, ARGV[5] the operation's id, ARGV[6] the
-- incarnation the caller knows ('0': none yet).
-- Every key lives IDLE past its last write: a semaphore nobody uses for
-- that long is forgotten (its next use creates it anew).
--
-- Incarnations.  Redis can lose a semaphore (a restart without
-- persistence, a flush, eviction, IDLE): its next use would create it
-- anew with its first value, and a process inside a section it gated
-- would not know that others now enter beside it.  So each semaphore
-- gets an incarnation when it is created, and a caller that knows one
-- (it used the semaphore before) is answered LOST, with nothing done or
-- created, by a semaphore that is not that incarnation (or by none):
-- the process then says ENOLCK until it initializes the semaphore again
-- (sem_open, which tells it the incarnation there is now).  Only a caller
-- that knows none yet may create it.  A counting semaphore reset by
-- `distlock break` gets a new incarnation too (sem_break.lua): the same
-- event for the processes inside.
local K_SEM = KEYS[1]
local K_SQ, K_SD = KEYS[2] or K_SEM .. ':q', KEYS[3] or K_SEM .. ':d'
local K_SW, K_SL, K_SH = KEYS[4] or K_SEM .. ':w', KEYS[5] or K_SEM .. ':l', KEYS[6] or K_SEM .. ':h'
local IDLE = 30 * DAY
local INT_MAX = 2147483647

-- The reply of an operation that finds no semaphore, or another
-- incarnation than the caller's.
local LOST = -7

-- A new incarnation: 52 bits (exact in a Lua number) of a hash of the
-- creator's token, its operation's id and Redis's time in us, so that two
-- creations of one name are told apart even under a clock that stands
-- still or goes back (a process's ids grow; tokens are unique).
local function incarnation_new(token, id)
  now_ms()
  local n = tonumber(string.sub(redis.sha1hex(token .. ' ' .. tostring(id) .. ' ' ..
                                              int(NOW_US)), 1, 13), 16)
  if n == 0 then n = 1 end
  return n
end

local function incarnation_set(inc)
  rcall('HSET', K_SEM, 'i', int(inc), 'ib', int(now_ms()))
end

-- The semaphore: {kind, value or permits, used, incarnation}, created with
-- the caller's kind and value if it does not exist yet (create, and the
-- caller knows no incarnation: known 0; a later init with another value
-- keeps it).  nil and why otherwise: LOST (the caller knows an incarnation
-- and this is not it, or there is none), its kind (it exists as the other
-- kind), '' (it does not exist, and is not created).  A semaphore an older
-- library made has no incarnation: it gets one now.
local function sem_get(kind, value, create, known, token, id)
  local s = rcall('HMGET', K_SEM, 'k', 'v', 'n', 'used', 'i')
  if not s[1] then
    if known ~= 0 then return nil, LOST end
    if not create then return nil, '' end
    local inc = incarnation_new(token, id)
    if kind == 'c' then
      rcall('HSET', K_SEM, 'k', 'c', 'v', value, 'n0', value)
    else
      rcall('HSET', K_SEM, 'k', 'l', 'n', value, 'n0', value, 'used', 0)
    end
    incarnation_set(inc)
    rcall('PEXPIRE', K_SEM, IDLE)
    return {kind, tonumber(value), 0, inc}, 'new'
  end
  local inc = tonumber(s[5])
  if known ~= 0 and inc ~= known then return nil, LOST end
  if s[1] ~= kind then return nil, s[1] end
  if not inc then
    inc = incarnation_new(token, id)
    incarnation_set(inc)
  end
  if kind == 'c' then return {kind, tonumber(s[2]), 0, inc} end
  return {kind, tonumber(s[3]), tonumber(s[4]) or 0, inc}
end

-- A process's operations carry ids that grow in the order it sends them
-- (it sends one at a time: shim/prim/sem.c), and the last one's outcome is
-- kept: 't' took a permit, 'p' posted, 'u' taken but withdrawn, 'o' other.
-- A copy resent after a lost reply (the same id) is told its first outcome
-- and does nothing twice; a copy that runs after a later operation (a
-- connection given up during a stall) does nothing at all.  So a post is
-- never counted twice, and a permit never taken twice for one wait.
local function sess_get(token)
  local s = rcall('HGET', K_SEM, 's:' .. token)
  if not s then return 0, '' end
  local id, res = string.match(s, '^(%d+) (%a)')
  return tonumber(id), res
end

local function sess_set(token, id, res)
  rcall('HSET', K_SEM, 's:' .. token, int(id) .. ' ' .. res .. ' ' .. int(now_ms()))
end

-- s: fields of processes silent for an hour go, at most once a minute and
-- only past 256 fields (a process's copies all come within the I/O
-- time-out, or after a stall of the server: not an hour later).
local function sess_prune()
  if rcall('HLEN', K_SEM) <= 256 then return end
  local now = now_ms()
  if (tonumber(rcall('HGET', K_SEM, 'sp')) or 0) > now - 60000 then return end
  rcall('HSET', K_SEM, 'sp', int(now))
  local all, old = rcall('HGETALL', K_SEM), {}
  for i = 1, #all, 2 do
    if string.sub(all[i], 1, 2) == 's:' then
      local ms = tonumber(string.match(all[i + 1], ' (%d+)$')) or 0
      if ms < now - 3600000 then old[#old + 1] = all[i] end
      if #old == 1000 then
        rcall('HDEL', K_SEM, unpack(old))
        old = {}
      end
    end
  end
  if #old > 0 then rcall('HDEL', K_SEM, unpack(old)) end
end

local function sem_dequeue(t)
  rcall('ZREM', K_SQ, t)
  rcall('ZREM', K_SD, t)
  rcall('HDEL', K_SW, t)
end

-- Drops the registrations whose deadline passed (waiters that died or
-- stopped refreshing); returns how many.
local function prune_waiters(now)
  local gone = rcall('ZRANGEBYSCORE', K_SD, '-inf', now)
  for _, t in ipairs(gone) do sem_dequeue(t) end
  return #gone
end

-- Leased: drops the holders whose lease ran out (a process that died, or
-- stalled past its lease): their permits come back.  Returns `used` after.
local function prune_holders(now, used)
  local gone = rcall('ZRANGEBYSCORE', K_SL, '-inf', now)
  local freed = 0
  for _, t in ipairs(gone) do
    local r = rcall('HGET', K_SH, t)
    if r then freed = freed + cmsgpack.unpack(r)[1] end
    rcall('ZREM', K_SL, t)
    rcall('HDEL', K_SH, t)
  end
  if freed > 0 then used = used - freed end
  -- Nobody holds: nothing is used (heals a count that a lost key left).
  if used ~= 0 and rcall('ZCARD', K_SL) == 0 then used = 0 end
  if freed > 0 or #gone > 0 then rcall('HSET', K_SEM, 'used', used) end
  return used
end

-- Permits free now (s from sem_get; leased holders pruned first).
local function available(s, now)
  if s[1] == 'c' then return s[2] end
  s[3] = prune_holders(now, s[3])
  return s[2] - s[3]
end

-- Wakes the first `avail` registrations (those that may take a permit
-- now): each process is pushed, on its channel, the id of its registration,
-- and asks again.  The push is a hint: a waiter asks again at least every
-- third of its registration's life anyway.
local function wake(avail)
  if avail <= 0 then return end
  for _, t in ipairs(rcall('ZRANGE', K_SQ, 0, avail - 1)) do
    local w = rcall('HGET', K_SW, t)
    if w then
      push(t, 'g ' .. int(cmsgpack.unpack(w)[1]) .. ' 0 0 0 ' .. K_SEM)
    end
  end
end

-- Leased: the caller's hold {count, fence, since, info}, or nil (none, or
-- lapsed: prune_holders ran).
local function hold_of(token)
  local r = rcall('HGET', K_SH, token)
  return r and cmsgpack.unpack(r)
end

-- Leased: one permit more for token, its hold's lease from now.  Returns
-- its fence, its count and 1 if the hold is new.
local function permit_add(token, lease, info, now, used)
  local h, new = hold_of(token), 0
  if not h then
    local fence = next_fence(rcall('HGET', K_SEM, 'fence'))
    rcall('HSET', K_SEM, 'fence', int(fence))
    h = {0, fence, now, info}
    new = 1
  end
  h[1] = h[1] + 1
  rcall('HSET', K_SH, token, cmsgpack.pack(h))
  rcall('ZADD', K_SL, int(now + lease), token)
  rcall('HSET', K_SEM, 'used', used + 1)
  rcall('PEXPIRE', K_SH, IDLE)
  rcall('PEXPIRE', K_SL, IDLE)
  return h[2], h[1], new
end

-- Leased: one permit of token's hold fewer (the hold ends with its last).
-- Returns its count after.
local function permit_drop(token, h, used)
  h[1] = h[1] - 1
  if h[1] <= 0 then
    rcall('HDEL', K_SH, token)
    rcall('ZREM', K_SL, token)
  else
    rcall('HSET', K_SH, token, cmsgpack.pack(h))
  end
  rcall('HSET', K_SEM, 'used', math.max(used - 1, 0))
  return h[1]
end

-- Counting: one permit more (a post), unless the value would pass INT_MAX
-- (false then).
local function counting_post(s)
  if s[2] >= INT_MAX then return false end
  s[2] = s[2] + 1
  rcall('HSET', K_SEM, 'v', s[2])
  return true
end

-- Withdraws operation `rid` of token, a wait or try that failed with no
-- reply but may have run (or may still run: a stalled server).  The
-- process sends nothing else on the semaphore before this is done (it
-- withdraws first: shim/prim/sem.c), so a permit it took is still its last
-- operation's, and goes back; one that has not run yet never will (its id
-- becomes the last, withdrawn).  A registration it made goes too.
-- Returns 1 a permit given back, 2 a registration withdrawn, 0 nothing.
local function sess_undo(token, rid, s, now)
  local id, res = sess_get(token)
  local did = 0
  if id == rid and res == 't' then
    if s[1] == 'c' then
      counting_post(s)
    else
      s[3] = prune_holders(now, s[3])
      local h = hold_of(token)
      if h then
        permit_drop(token, h, s[3])
        s[3] = math.max(s[3] - 1, 0)
      end
    end
    sess_set(token, rid, 'u')
    did = 1
  elseif id < rid then
    sess_set(token, rid, 'u')
  end
  local w = rcall('HGET', K_SW, token)
  if w and tonumber(cmsgpack.unpack(w)[1]) <= rid then
    sem_dequeue(token)
    if did == 0 then did = 2 end
  end
  return did
end

-- Completes post `rid` of token, which failed with no reply (the process
-- keeps it until Redis answers, and sends nothing else on the semaphore
-- before it is done): applied now unless it ran already.  Returns 1
-- posted now, 0 it ran already (or, leased, the caller holds no permit any
-- more: its hold lapsed), -4 counting: the value would pass INT_MAX.
local function sess_complete(token, rid, s, now)
  local id = sess_get(token)
  if id >= rid then return 0 end
  if s[1] == 'c' then
    if not counting_post(s) then
      sess_set(token, rid, 'o')
      return -4
    end
  else
    s[3] = prune_holders(now, s[3])
    local h = hold_of(token)
    if not h then
      sess_set(token, rid, 'o')
      return 0
    end
    permit_drop(token, h, s[3])
    s[3] = math.max(s[3] - 1, 0)
  end
  sess_set(token, rid, 'p')
  return 1
end
