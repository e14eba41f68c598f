-- SPDX-License-Identifier: BSD-3-Clause
-- sem_wait.lua: take a permit of the semaphore, or (a wait) register for one.
-- KEYS: the semaphore's six (sem_common.lua)
-- ARGV[1] channel prefix, [2] token, [3] kind 'c'|'l', [4] initial value,
--     [5] this operation's id, [6] the incarnation the caller knows ('0'
--     none), [7] '1' a wait (register if no permit) | '0' a try, [8]
--     registration ttl (ms), [9] lease (ms, leased), [10] holder info
-- Reply: {1, fence, count, new, value, inc} a permit taken (leased: fence
--     and count of the caller's hold, new 1 if this permit began it; value:
--     the permits still free), {0, nap, inc} none (a wait is registered, or
--     its registration refreshed; nap: ms until a holder's lease runs out,
--     0 none), {-2, kind} the semaphore exists as the other kind, {-3} a
--     stale copy (a later operation of the caller's ran first): nothing
--     done, {-7} not the incarnation the caller knows (or none): nothing
--     done.  inc: the semaphore's incarnation.
-- The caller may take a permit when one is free and it is within the
-- first `free` registrations (FIFO: permits go to waiters in the order
-- they registered), or, not queued (a try, or a first ask), when more are
-- free than waiters are queued.  Permits are taken only by a live waiter's
-- own call, never handed to a registration: a waiter that died cannot take
-- (and lose) a permit that was posted.
local token, kind, value, id = ARGV[2], ARGV[3], ARGV[4], tonumber(ARGV[5])
local known = tonumber(ARGV[6])
local wait, wttl, lease, info = ARGV[7] == '1', tonumber(ARGV[8]), tonumber(ARGV[9]), ARGV[10]
local s, other = sem_get(kind, value, true, known, token, id)
if not s then
  if other == LOST then return {LOST} end
  return {-2, other}
end
local inc = s[4]
local now = now_ms()
local last, res = sess_get(token)
if id < last then return {-3} end
if id == last and res ~= 'o' then
  -- This very call ran before its reply was lost: it took a permit, or
  -- was withdrawn since (then it takes nothing, ever).
  if res ~= 't' then return {0, 0, inc} end
  local h = kind == 'l' and hold_of(token)
  if h then return {1, h[2], h[1], 0, 0, inc} end
  return {1, 0, 0, 0, 0, inc}
end
local pruned = prune_waiters(now)
local avail = available(s, now)
local pos = rcall('ZRANK', K_SQ, token)
local queued = rcall('ZCARD', K_SQ)
-- A try never uses the process's registration (another thread's): it
-- takes only what no waiter is queued for.
local mine = wait and pos
if avail > 0 and ((mine and pos < avail) or (not mine and queued < avail)) then
  local fence, count, new = 0, 0, 0
  if kind == 'c' then
    rcall('HSET', K_SEM, 'v', avail - 1)
  else
    fence, count, new = permit_add(token, lease, info, now, s[3])
  end
  if mine then sem_dequeue(token) end
  sess_set(token, id, 't')
  rcall('PEXPIRE', K_SEM, IDLE)
  -- Registrations that expired or were withdrawn moved the window: those
  -- now inside it learn so (they were not woken when they entered it).
  if pruned > 0 then wake(avail - 1) end
  sess_prune()
  return {1, fence, count, new, avail - 1, inc}
end
if wait then
  if not pos then
    local seq = rcall('HINCRBY', K_SEM, 'seq', 1)
    rcall('ZADD', K_SQ, seq, token)
    rcall('PEXPIRE', K_SQ, IDLE)
  end
  -- The registration keeps when its process first queued (a refresh, or
  -- another of its threads taking it over, keeps it): `distlock top`
  -- shows how long the process has waited.
  local since = now
  local prev = pos and rcall('HGET', K_SW, token)
  if prev then since = cmsgpack.unpack(prev)[3] or now end
  rcall('ZADD', K_SD, int(now + wttl), token)
  rcall('HSET', K_SW, token, cmsgpack.pack({id, info, since}))
  rcall('PEXPIRE', K_SD, IDLE)
  rcall('PEXPIRE', K_SW, IDLE)
end
sess_set(token, id, 'o')
rcall('PEXPIRE', K_SEM, IDLE)
if pruned > 0 and avail > 0 then wake(avail) end
local nap = 0
if kind == 'l' then
  local first = rcall('ZRANGE', K_SL, 0, 0, 'WITHSCORES')
  if first[2] then nap = math.max(tonumber(first[2]) - now, 1) end
end
return {0, nap, inc}
