-- SPDX-License-Identifier: BSD-3-Clause
-- acquire.lua: take the lock in mode ARGV[3], or queue for it.
-- KEYS: the six keys of common.lua.
-- ARGV: 1 channel prefix, 2 token, 3 mode 'w'|'r', 4 lease ms, 5 holder info
--       ("host\tpid\ttid"), 6 enqueue on failure '1'|'0', 7 registration id,
--       8 waiter ttl ms (how long the registration lives unrefreshed),
--       9 claim ms (first ttl of a hold pushed to this waiter),
--       10 (redlock:// only; absent elsewhere) the writer mark's ttl ms: a
--       write that finds the lock busy and will wait sets the mark with it
--       ('0': a request that will not wait); a read refuses while another
--       process's mark lives (common.lua, ww_live); '' elsewhere when 11
--       follows,
--       11 (optional) the fence of a hold of the caller's whose EOWNERDEAD
--       the caller was told, and whose release failed (it may still be
--       here): a claim of that very hold (`was` equal to it) takes its
--       death as told: od goes to 0 and the trace it consumed is dropped,
--       so that neither a later claim nor a withdrawal of this request
--       (withdraw.lua puts a consumed trace back) tells it again ('' when
--       12 follows),
--       12 (redlock:// only; optional) the fence of the caller's last hold
--       whose EOWNERDEAD it was told, released since (common.lua, OLDER):
--       a trace older than it is not told, nor a claim of a hold of the
--       caller's that old (its release was owed here)
-- Reply: {3, mark} the lock is unrecoverable (common.lua, put_unrecoverable):
--        refused (ENOTRECOVERABLE), the caller's registration dropped;
--        {1, fence, ownerdead 0|1, waiters still queued, claimed 0|1, was}
--        acquired in mode ARGV[3]; waiters still queued: 0 none, else someone
--        is; claimed: it was granted to us earlier, perhaps with the short
--        claim ttl; was (claimed only): the fence the hold had when found,
--        so that a process that was told of its EOWNERDEAD already (its
--        unlock failed, and the hold stayed) is not told again
--        {0, ms until the holders' leases run out}      busy (queued if ARGV[6])
--! fast path
-- A write request that finds no writer, no reader, nobody queued and no
-- registration at all (not even its own) takes the lock here, exactly as
-- the full path below would in that state (take_write: nothing to serve,
-- nothing of its own to claim or withdraw).  Not under an ASK (only
-- KEYS[1] declared: every command names one key) nor on redlock:// (its
-- writer mark).  (A contended request pays the one EXISTS more.)
if KEYS[6] and ARGV[3] == 'w' and not ARGV[10] and rcall('EXISTS', K_LOCK, K_RD, K_Q, K_W) == 0 then
  local fence, dead = take_write(ARGV[2], ARGV[4], ARGV[5], now_ms(), ARGV[4], ARGV[7])
  return {1, fence, dead, 0}
end
--! end of fast path
local token, mode, lease, info, rid, marks = ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[7], ARGV[10]
if marks == '' then marks = nil end
local told = tonumber(ARGV[11])
OLDER = tonumber(ARGV[12])
local w = rcall('HMGET', K_LOCK, 'owner', 'fence', 'od', 'rid', 'nr')
local writer = w[1]

if w[5] then
  dequeue_upto(token, rid)
  if marks and mode == 'w' then ww_clear(token) end
  return {3, tonumber(w[5])}
end

-- Ours already: a grant whose push has not arrived, or a retried request.
local mine = held_by(token, mode, mode == 'w' and 0 or now_ms(), w)
if mine then
  local was = mine[1]
  if ((told and was == told) or (OLDER and tonumber(was) <= OLDER)) and mine[2] == 1 then
    death_told(token, mode)
    mine[2] = 0
  end
  mine = claim_hold(token, mode, rid, mine, mode == 'w' and w[4] or nil, lease, info)
  dequeue_upto(token, rid)
  if marks and mode == 'w' then ww_clear(token) end
  return {1, mine[1], mine[2], rcall('ZCARD', K_Q), 1, was}
end

-- A stale request (sent before a stall, run after its process asked
-- again) does nothing: the later request is already queued, and serving
-- the queue now could push it a grant this request then takes a hold over;
-- replacing its registration would let this one's withdrawal take the
-- live waiter out of the queue.
local raw = rcall('HGET', K_W, token)
local reg = raw and cmsgpack.unpack(raw)
if reg and tonumber(reg[4]) > tonumber(rid) then
  return {0, holders_pttl(now_ms())}
end

-- redlock: a writer elsewhere waits; a new reader lets it go first.
if marks and mode == 'r' then
  local ww, left = ww_live(now_ms())
  if ww and ww ~= token then return {0, left} end
end

if not writer then
  -- Serve the queue first: it holds earlier requests, and after a holder's
  -- lease ran out nobody else would hand the lock on.
  local g, granted, empty = grant_waiters(token, true, mode, rid)
  if g then return {1, g[1], g[2], g[3]} end
  if empty and (granted == 0 or rcall('EXISTS', K_LOCK) == 0)
     and (mode == 'r' or live_readers(now_ms()) == 0) then
    local fence, dead
    if mode == 'w' then
      fence, dead = take_write(token, lease, info, now_ms(), lease, rid)
      if marks then ww_clear(token) end
    else
      fence, dead = take_read(token, lease, info, now_ms(), lease, rid)
    end
    return {1, fence, dead, 0}
  end
  writer = rcall('HGET', K_LOCK, 'owner')
  -- Serving the queue may have dropped our registration (expired, or of
  -- the other mode): read it again.
  if reg then
    raw = rcall('HGET', K_W, token)
    reg = raw and cmsgpack.unpack(raw)
  end
end

local now = now_ms()
local pttl = holders_pttl(now)
if marks and mode == 'w' and tonumber(marks) > 0 then ww_set(token, tonumber(marks), now) end
if ARGV[6] == '1' then
  local ttl = tonumber(ARGV[8])
  -- A registration of the other mode is a leftover (a withdrawal that never
  -- ran): granted, it would be a hold this request did not ask for.  It
  -- goes, and this one queues at the back.
  if reg and reg[1] ~= mode then
    dequeue(token)
    reg = nil
  end
  if not reg then
    -- Nor may one queue behind a hold of its process's taken by a later
    -- request (in the other mode: the same mode is "mine" above).  Its
    -- registration would be granted when that hold ends, to nobody who
    -- waits: the lock kept from everyone for a claim window, and its
    -- lapse taken for a death.
    local cur
    if writer == token then
      cur = rcall('HGET', K_LOCK, 'rid')
    elseif mode == 'w' then
      cur = hold_rid(token, 'r')
    end
    if cur and tonumber(cur) > tonumber(rid) then return {0, pttl} end
    local seq = rcall('HINCRBY', K_META, 'seq', 1)
    if seq == 1 then rcall('PEXPIRE', K_META, META_TTL) end
    rcall('ZADD', K_Q, seq, token)
    -- Tell the holders someone waits (once, at the first registration), so
    -- they stop passing the lock between their own threads.
    if writer then
      push(writer, 'w ' .. K_LOCK)
    elseif mode == 'w' then
      for _, r in ipairs(rcall('ZRANGE', K_RD, 0, -1)) do
        push(r, 'w ' .. K_LOCK)
      end
    end
  end
  -- The queue keys only collect what dead waiters leave: they live at least
  -- QTTL/2 past any live registration, pushed back (never shortened: every
  -- waiter sets the same) only when that margin runs low, not at each
  -- refresh.  kexp, kept in each registration, says until when they live.
  -- since: when this registration first queued (Redis time), kept by its
  -- refreshes, so that `distlock top` and `metrics` can say how long a
  -- waiter has waited (a record of an older library lacks it: from now).
  local since = reg and tonumber(reg[8]) or now
  local qttl = math.max(3 * ttl, 600000)
  local kexp = reg and tonumber(reg[7])
  local push = not kexp or kexp < now + qttl / 2
  if push then kexp = now + qttl end
  rcall('HSET', K_W, token, cmsgpack.pack({mode, lease, now + ttl, rid, info, ARGV[9], kexp, since}))
  if push then
    rcall('PEXPIRE', K_Q, qttl)
    rcall('PEXPIRE', K_W, qttl)
  end
end
return {0, pttl}
