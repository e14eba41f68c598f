-- SPDX-License-Identifier: BSD-3-Clause
-- common.lua: helpers shared by every operation script; the build prefixes
-- it to each lua/<op>.lua, so each embedded script is self-contained.
--
-- Every operation gets the same six KEYS, all sharing the lock's hash tag:
--   KEYS[1] lock     <prefix>{tag}      hash while write-held: owner, info, since,
--                                       fence, lease, od (acquired after a lapse),
--                                       rid (the registration id of the request
--                                       the owner last took or claimed it with),
--                                       mx (when the meta hash expires, ms);
--                                       or, with no TTL, an unrecoverable lock
--                                       (put_unrecoverable): nr (its mark),
--                                       owner '' (nobody's)
--   KEYS[2] readers  <prefix>{tag}:r    zset reader token -> lease deadline (ms)
--   KEYS[3] rinfo    <prefix>{tag}:ri   hash reader token -> msgpack {info, since, fence,
--                                       od, rid}
--   KEYS[4] queue    <prefix>{tag}:q    zset waiter token -> arrival sequence
--   KEYS[5] waiters  <prefix>{tag}:w    hash waiter token -> msgpack {mode, lease, deadline,
--                                       regid, info, claim, kexp (the queue keys live
--                                       at least until then, ms)}
--   KEYS[6] meta     <prefix>{tag}:m    hash fence, seq, exp (when it expires, ms),
--                                       wh/wi (the writer whose hold has not been
--                                       released, '' none: its lapse means EOWNERDEAD;
--                                       a lingering hold is not one, shim/mark.c;
--                                       'g:' .. token: granted to a waiter by push
--                                       and not claimed yet, no death either: see
--                                       take_meta), mk (the last mark's fence:seq),
--                                       wr/wf (that hold's registration id and its
--                                       fence here: the trace names its hold, so
--                                       a release can tell its own trace, and one
--                                       older than its hold, on every redlock
--                                       server, where each numbers a hold itself),
--                                       wp (the trace that hold replaced, packed,
--                                       '' none: put back should it lapse before
--                                       its withdrawal runs, withdraw.lua),
--                                       x:<token> (the fence of the last hold that
--                                       process released, release.lua), xp (when
--                                       old x: fields were last pruned, ms),
--                                       ww/wwx (redlock://: the writer that waits,
--                                       and until when its mark lives, ms)
-- Only KEYS[1] may be declared (redis-cluster://, a call that an ASK
-- redirection sends to the node importing the lock's slot, shim/cluster.c):
-- the others are then KEYS[1] and their suffix, as shim/keys.c builds them,
-- and every command on them names one key.  A 7th key (the cluster's slot
-- guard, which never exists) is never read.
-- ARGV[1] is the channel prefix: a process listens on ARGV[1] .. its token
-- (push, below).
-- All times are Redis's clock, in ms: no client clock decides anything.
local rcall = redis.call
local K_LOCK = KEYS[1]
local K_RD, K_RI, K_Q = KEYS[2] or K_LOCK .. ':r', KEYS[3] or K_LOCK .. ':ri', KEYS[4] or K_LOCK .. ':q'
local K_W, K_META = KEYS[5] or K_LOCK .. ':w', KEYS[6] or K_LOCK .. ':m'
local CHAN = ARGV[1]
local META_TTL = 7 * 24 * 3600 * 1000
-- The death trace of a grant not claimed yet (see take_meta).
local PENDING = 'g:'
local DAY = 24 * 3600 * 1000

-- Lua numbers are doubles: format whole numbers ourselves, tostring() would
-- print large ones in exponent form.  Every number formatted here is whole
-- (fences in us, times in ms, counts) and far below 2^63, so '%d' (a C
-- long) formats it exactly, at a third of what '%.0f' costs Redis (glibc
-- formats a double digit by digit).  A string (read from Redis, or given
-- as an argument) is passed on as it is: a number given to redis.call
-- costs Redis its own formatting too.
local function int(n) return string.format('%d', n) end
local function text(v) if type(v) == 'string' then return v end return int(v) end

-- Redis time, read once per script and only if needed (an uncontended
-- release never needs it), in ms and in us.
local NOW, NOW_US
local function now_ms()
  if not NOW then
    local t = rcall('TIME')
    local sec, us = tonumber(t[1]), tonumber(t[2])
    NOW = sec * 1000 + math.floor(us / 1000)
    NOW_US = sec * 1000000 + us
  end
  return NOW
end

-- The next fence: above every earlier one, and never below Redis time in us,
-- so fences keep increasing even after the meta hash expired unused (and,
-- with redlock://, two servers rarely give the same one).
local function next_fence(last)
  now_ms()
  return math.max((tonumber(last) or 0) + 1, NOW_US)
end

-- The meta hash's expiry (ms), pushed back only when a day of it has passed,
-- not at every acquisition; `set` gets the field to write with the others.
-- Kept, it is returned as it was read (text).
local function meta_exp(exp, now, set)
  local n = tonumber(exp)
  if n and n >= now + META_TTL - DAY then return exp end
  exp = now + META_TTL
  set[#set + 1] = 'exp'
  set[#set + 1] = int(exp)
  return exp, true
end

-- Whether a death trace (the meta hash's wh) names a writer whose hold
-- lapsed: a lingering hold's ('') and a grant's not yet claimed (PENDING)
-- do not.
local function traced(wh)
  return wh and wh ~= '' and string.sub(wh, 1, #PENDING) ~= PENDING
end

-- redlock:// (acquire.lua's ARGV[12], acquire_all.lua's ARGV[7] for each
-- lock; nil elsewhere): the fence (its quorum's largest) of the caller's
-- last hold whose EOWNERDEAD it was told, released since.  A trace here
-- older than that hold is a lapse the caller was told of: its release,
-- which clears it (release.lua, forget_older), may still be owed to this
-- server (unreachable when the caller released), and the caller's next
-- acquisition must not be told the same lapse again.  (Any caller's: such
-- a trace is older than a hold that had a quorum, and its lapse was told.)
local OLDER

-- Whether trace {wh, wf} is one OLDER says was told.
local function told_before(wh, wf)
  wf = tonumber(wf)
  return OLDER ~= nil and wh and wh ~= '' and wf ~= nil and wf < OLDER
end

-- A new hold's fence and whether the last writer's hold lapsed (EOWNERDEAD).
-- A writer leaves its own trace (wh, wi, wr, wf), named by its registration
-- id `rid` and fence.  A hold taken over a lapse also returns the trace it
-- consumed ({wh, wi, wr, wf}), which the hold keeps: should the acquisition
-- be withdrawn (withdraw.lua), nobody was told of that lapse, and the trace
-- goes back.
-- A write hold granted to a waiter by push (`pending`) is traced only as
-- pending: a waiter that died before its push arrived never held the lock,
-- and its grant's lapse is no death.  Its holder's claim (touch.lua, a
-- renewal, or acquire.lua finding it "mine") names it.  A death it is told
-- of stays traced until then, so that the holder after a grantee that died
-- unclaimed still hears of it (and a withdrawal of the grant puts it back
-- should the claim have replaced it).
local function take_meta(now, writer, info, rid, pending)
  local m = rcall('HMGET', K_META, 'fence', 'wh', 'exp', 'wi', 'wr', 'wf')
  local fence, dead, prev = next_fence(m[1]), 0, nil
  local f = int(fence)
  local set
  if traced(m[2]) and not told_before(m[2], m[6]) then
    dead = 1
    prev = {m[2], m[4] or '', m[5] or '', m[6] or ''}
  end
  -- (each table made whole at once: cheaper for Redis than grown)
  if pending and writer then
    if dead == 0 then
      set = {'fence', f, 'wh', PENDING .. writer, 'wi', '', 'wr', rid, 'wf', f, 'wp', ''}
    else
      set = {'fence', f}
    end
  elseif writer then
    -- wp: this grant's fence, then the trace it replaced, packed
    -- (trace_lapsed_unclaimed: only the grant that wrote the trace may
    -- take it back)
    set = {'fence', f, 'wh', writer, 'wi', info, 'wr', rid, 'wf', f,
           'wp', dead == 1 and (f .. '|' .. cmsgpack.pack(prev)) or f}
  elseif dead == 1 or (m[2] and m[2] ~= '') then
    set = {'fence', f, 'wh', '', 'wi', ''}
  else
    set = {'fence', f}
  end
  local exp, renew = meta_exp(m[3], now, set)
  rcall('HSET', K_META, unpack(set))
  if renew then rcall('PEXPIRE', K_META, META_TTL) end
  return fence, dead, exp, prev, f
end

-- Writes the write hold (every field: a hold handed on by release.lua
-- overwrites the last one's without deleting it first).  ttl is the lease,
-- or for a hold pushed to a waiter the shorter claim window: a waiter that
-- died before its grant arrived holds the lock only that long; a live one's
-- watchdog extends it to the lease.  rid is the registration id of the
-- request the hold is for (withdraw.lua).
-- `prev`: the trace a hold taken over a lapse consumed (take_meta), kept
-- as `pt` beside od = 1 (a later hold's od = 0 makes a stale pt moot).
-- fence and mx: numbers, or their text.
local function put_write(token, lease, info, now, ttl, rid, fence, dead, mx, prev)
  local od = dead == 1 and '1' or '0'
  if prev then
    rcall('HSET', K_LOCK, 'owner', token, 'info', info, 'since', int(now),
          'fence', text(fence), 'lease', lease, 'od', od, 'rid', rid, 'mx', text(mx),
          'pt', cmsgpack.pack(prev))
  else
    rcall('HSET', K_LOCK, 'owner', token, 'info', info, 'since', int(now),
          'fence', text(fence), 'lease', lease, 'od', od, 'rid', rid, 'mx', text(mx))
  end
  rcall('PEXPIRE', K_LOCK, ttl)
end

local function take_write(token, lease, info, now, ttl, rid, pending)
  local fence, dead, mx, prev, f = take_meta(now, token, info, rid, pending)
  put_write(token, lease, info, now, ttl, rid, f, dead, mx, prev)
  return fence, dead
end

-- The release mark (release.lua): set with the other meta fields in one
-- HSET, whose reply (fields added) is `added`.  A new field means a process
-- releasing this lock for the first time: the meta hash may have to be
-- given its TTL back (it expired under a long hold and HSET made it anew),
-- and old marks pruned.  A resend comes within the I/O time-out of its
-- first copy, so only marks of holds taken over an hour ago go (their
-- fence says when), at most once a minute: never a mark a live resend needs.
local function marks_added(added)
  if added == 0 then return end
  if rcall('PTTL', K_META) < 0 then rcall('PEXPIRE', K_META, META_TTL) end
  if rcall('HLEN', K_META) <= 256 then return end
  local now = now_ms()
  if (tonumber(rcall('HGET', K_META, 'xp')) or 0) > now - 60000 then return end
  rcall('HSET', K_META, 'xp', int(now))
  local all, old = rcall('HGETALL', K_META), {}
  for i = 1, #all, 2 do
    if string.sub(all[i], 1, 2) == 'x:' and (tonumber(all[i + 1]) or 0) < (now - 3600000) * 1000 then
      old[#old + 1] = all[i]
      if #old == 1000 then
        rcall('HDEL', K_META, unpack(old))
        old = {}
      end
    end
  end
  if #old > 0 then rcall('HDEL', K_META, unpack(old)) end
end

-- What the fast paths of the lock's scripts use ends here; below it, what
-- only their full paths do.  A script's fast path (its lines between
-- `--! fast path` and `--! end of fast path`) is put here by the build
-- (cmake/lua_assemble.cmake): it handles the common case (an uncontended
-- acquire or release) before the many helpers below are made, which costs
-- Redis more than that case's commands (docs/PERFORMANCE.md, "Script
-- cost"), and the script's full path, after it, handles everything else.
--! fast paths

-- On redis-cluster:// ARGV[1] is '<prefix>n:{TAG}:', TAG putting it in the
-- slot of the keys (shim/conn/channel.h): pushes are sharded (SPUBLISH),
-- so they stay in the slot's shard instead of crossing the whole cluster
-- bus; a node without SPUBLISH (before Redis 7) publishes them on the
-- classic channel, '<prefix>n:' .. token.  Elsewhere ARGV[1] is
-- '<prefix>n:' (it ends so, never with '}:'), published as it is.
local CLASSIC = CHAN and string.match(CHAN, '^(.*){[^{}]*}:$')

-- Pushes msg to the process whose token is `to`.
local function push(to, msg)
  if CLASSIC then
    local r = redis.pcall('SPUBLISH', CHAN .. to, msg)
    if type(r) ~= 'table' or not r.err then return end
    rcall('PUBLISH', CLASSIC .. to, msg)
  else
    rcall('PUBLISH', CHAN .. to, msg)
  end
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

-- Puts back the death trace a withdrawn hold had consumed (take_meta's
-- prev), or clears the withdrawn writer's own.
local function trace_restore(prev)
  if prev then
    rcall('HSET', K_META, 'wh', prev[1], 'wi', prev[2], 'wr', prev[3], 'wf', prev[4])
  else
    rcall('HSET', K_META, 'wh', '', 'wi', '')
  end
end

-- The write hold that request `rid` of `token` was granted here lapsed
-- before its withdrawal (withdraw.lua) ran: a server that stalled between
-- the two for longer than the lease (the request's reply came too late,
-- or its quorum did not count it, and the withdrawal waited in the
-- stalled server's buffer), or a withdrawal owed to it that reached it
-- late.  Its caller was told it did not get the lock (or, under redlock,
-- holds it on a majority, whose own traces tell of its lapse), so that
-- lapse is no death: the trace it left names nobody who held, and the next
-- holder would be told EOWNERDEAD though nobody died.  The trace the grant
-- had replaced (take_meta's wp, the lock hash's pt having lapsed with it)
-- is put back; a later trace (another holder's, a later request's of the
-- caller) stays.
-- The trace must be the one that grant wrote (take_meta): wp names the
-- grant's fence and the trace's wf must be it.  Request ids are numbered
-- per process, so `wr` alone may be another hold's: a grant by push over
-- a lapse writes only the fence and its claim names only its holder (wh),
-- leaving the dead holder's wr and wf; every such later write of wh
-- (a claim, a mark) clears wp, and a withdrawal then takes back nothing
-- (at worst the next holder is told of a lapse that was no death, never
-- the other way round).
local function trace_lapsed_unclaimed(token, rid)
  local m = rcall('HMGET', K_META, 'wh', 'wr', 'wp', 'wf')
  if m[1] ~= token or tonumber(m[2]) ~= rid or not m[3] or m[3] == '' then return end
  local bar = string.find(m[3], '|', 1, true)
  if (bar and string.sub(m[3], 1, bar - 1) or m[3]) ~= m[4] then return end
  trace_restore(bar and cmsgpack.unpack(string.sub(m[3], bar + 1)) or nil)
  rcall('HSET', K_META, 'wp', '')
end

-- redlock:// (ARGV `older`, the caller's hold's fence, the largest of its
-- quorum's): each server keeps its own trace, and one left where the
-- caller's quorum did not reach (a server that was busy or down when it
-- acquired) would tell the next holder of a lapse again, or of one that
-- never counted.  A trace older than the caller's hold was reported to it
-- (any two quorums share a server) or belongs to a hold that never had a
-- quorum: it goes.  A later one (taken, or broken, after the caller's hold,
-- as its fence or break time says) stays.  Servers' clocks are taken to
-- agree, as for fences.  `m` is the meta hash's {wh, wf} when read.
local function forget_older(older, m)
  if not older or older == '' then return end
  m = m or rcall('HMGET', K_META, 'wh', 'wf')
  local wf = tonumber(m[2])
  if m[1] and m[1] ~= '' and wf and wf < tonumber(older) then
    rcall('HSET', K_META, 'wh', '', 'wi', '')
  end
end

-- A robust lock unlocked after EOWNERDEAD without dist_mutex_consistent
-- (release.lua's ARGV[7]): the lock hash stays, with no TTL and nobody's
-- (owner ''), so that every script that looks for a holder finds the lock
-- busy and grants nothing, and acquire.lua refuses every request with
-- ENOTRECOVERABLE ({3, nr}).  Its mark `nr` names this state: only a
-- process told of this very mark clears it (recover.lua), and `distlock
-- break` (which deletes the hash) does too.  The status scripts show it as
-- a holder whose info says so.
local function put_unrecoverable(nr)
  rcall('DEL', K_LOCK)
  rcall('HSET', K_LOCK, 'owner', '', 'info', 'unrecoverable\t0\t0', 'since', int(now_ms()),
        'fence', nr, 'lease', 0, 'od', 1, 'nr', nr)
end

local function take_read(token, lease, info, now, ttl, rid)
  local fence, dead, _, prev = take_meta(now, nil, info, rid)
  rcall('ZADD', K_RD, int(now + ttl), token)
  rcall('HSET', K_RI, token, cmsgpack.pack({info, now, fence, dead, rid, prev}))
  extend(K_RD, ttl)
  extend(K_RI, ttl)
  return fence, dead
end

-- The registration id of the caller's hold in this mode (nil: none, or a
-- hold from before ids were kept).
local function hold_rid(token, mode)
  if mode == 'w' then return rcall('HGET', K_LOCK, 'rid') end
  local r = rcall('HGET', K_RI, token)
  return r and cmsgpack.unpack(r)[5]
end

-- A request `rid` that finds the caller's hold already its own ("mine")
-- takes it over: withdrawing an earlier request no longer ends it, and it
-- gets a new fence, so that a release of it sent before (on a connection
-- given up since) no longer names it (release.lua).  It is a hold as the
-- request asked for: the lease from now (the old hold's TTL may be nearly
-- gone, or cut by a linger; a fixed lease is never renewed), and for a
-- writer the trace that makes its lapse a death (`wh`: a lingering hold's
-- mark had cleared it, shim/mark.c).  A process numbers its requests in
-- order, so a stale request that arrives late claims nothing from a later
-- one.  `mine` is held_by's {fence, od}; returns the hold's.
local function claim_hold(token, mode, rid, mine, cur, lease, info)
  if cur == nil then cur = hold_rid(token, mode) end
  cur = tonumber(cur)
  if cur and cur >= tonumber(rid) then return mine end
  local fence = next_fence(rcall('HGET', K_META, 'fence'))
  if mode == 'w' then
    rcall('HSET', K_META, 'fence', int(fence), 'wh', token, 'wi', info, 'wr', rid, 'wf', int(fence))
    rcall('HSET', K_LOCK, 'rid', rid, 'fence', int(fence), 'info', info, 'lease', lease)
    rcall('PEXPIRE', K_LOCK, lease)
  else
    rcall('HSET', K_META, 'fence', int(fence))
    local r = rcall('HGET', K_RI, token)
    if r then
      local v = cmsgpack.unpack(r)
      v[3], v[5] = fence, rid
      rcall('HSET', K_RI, token, cmsgpack.pack(v))
    end
    rcall('ZADD', K_RD, int(now_ms() + lease), token)
    extend(K_RD, lease)
    extend(K_RI, lease)
  end
  return {fence, mine[2]}
end

-- The caller was told of the death its hold in `mode` found (acquire.lua's
-- ARGV[11]): the hold no longer says so (od 0), and the trace it consumed
-- is dropped, so that no withdrawal puts it back to be told again.
local function death_told(token, mode)
  if mode == 'w' then
    rcall('HSET', K_LOCK, 'od', 0)
    rcall('HDEL', K_LOCK, 'pt')
    rcall('HSET', K_META, 'wp', '')
    return
  end
  local r = rcall('HGET', K_RI, token)
  if not r then return end
  local v = cmsgpack.unpack(r)
  v[4], v[6] = 0, nil
  rcall('HSET', K_RI, token, cmsgpack.pack(v))
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

-- Dequeues the caller's registration if it is request `rid`'s or an
-- earlier one's, never a later one: a request (acquire, cancel, withdraw)
-- run late, after its process queued again, must leave that place alone.
-- Returns whether it did.
local function dequeue_upto(token, rid)
  local raw = rcall('HGET', K_W, token)
  if not raw or tonumber(cmsgpack.unpack(raw)[4]) > tonumber(rid) then return false end
  dequeue(token)
  return true
end

-- The first waiter whose registration has not expired, its registration,
-- and 1 if someone is queued behind it (perhaps an expired registration:
-- a hint only), else 0.  Expired ones (waiters that died or gave up) are
-- dropped on the way.  q: the queue's first two, when the caller read them.
local function head_waiter(q)
  while true do
    q = q or rcall('ZRANGE', K_Q, 0, 1)
    local h = q[1]
    if not h then return nil end
    local raw = rcall('HGET', K_W, h)
    if raw then
      local w = cmsgpack.unpack(raw)
      if w[3] > now_ms() then return h, w, q[2] and 1 or 0 end
    end
    dequeue(h)
    q = nil
  end
end

-- Tells grantee h (registration w) of its grant: the push carries its
-- registration id and fence, so it needs no further round trip.
local function push_grant(h, w, fence, dead, more)
  push(h, 'g ' .. w[4] .. ' ' .. int(fence) .. ' ' .. dead .. ' ' .. more .. ' ' .. K_LOCK)
end

-- Hands the lock, if no writer holds it, to the head of the queue: one
-- writer, or every reader up to the next writer.  A grant to `caller` (a
-- request for mode `cmode` with registration id `crid`) is returned instead
-- of pushed, and only in that mode: a registration of the caller's in the
-- other mode (a withdrawal that never ran) is dropped, not granted.  Returns
-- that grant {fence, od, more} (or nil), how many holds were granted, and
-- whether the queue is now empty.  `free` says the caller already knows no
-- writer holds it.
local function grant_waiters(caller, free, cmode, crid)
  local mine, n = nil, 0
  while free or rcall('EXISTS', K_LOCK) == 0 do
    free = false
    local h, w, more = head_waiter()
    if not h then return mine, n, true end
    local now = now_ms()
    -- The caller's registration, unless a later request of the caller made
    -- it (this one is stale: the grant is that request's, pushed).
    local me = h == caller and tonumber(w[4]) <= tonumber(crid)
    if me and w[1] ~= cmode then
      dequeue(h)
      free = true
    else
      local fence, dead
      local ttl, rid = w[6], w[4]
      if me then ttl, rid = w[2], crid end
      if w[1] == 'w' then
        if live_readers(now) > 0 then break end
        fence, dead = take_write(h, w[2], w[5], now, ttl, rid, not me)
      else
        fence, dead = take_read(h, w[2], w[5], now, ttl, rid)
      end
      dequeue(h)
      n = n + 1
      if me then
        mine = {fence, dead, more}
      else
        push_grant(h, w, fence, dead, more)
      end
      if w[1] == 'w' then break end
    end
  end
  return mine, n, false
end

-- redlock:// has no queue, so writer preference rests on a mark: a writer
-- that finds the lock busy and is going to wait sets ww (its token) and
-- wwx (until when, ms) in the meta hash, refreshed at each of its retries
-- and cleared when it gets the lock or gives up; a writer that dies leaves
-- a mark that lapses by itself within its short ttl.  New readers refuse
-- while another process's mark lives.  One mark for all writers: the last
-- to refresh names itself, and the deadline only grows while marks live,
-- so a writer giving up while another still waits leaves the mark to the
-- other (its token is no longer there).  Returns the live mark's token and
-- ms left, or nil.
local function ww_live(now)
  local m = rcall('HMGET', K_META, 'ww', 'wwx')
  local left = (tonumber(m[2]) or 0) - now
  if m[1] and m[1] ~= '' and left > 0 then return m[1], left end
  return nil
end

local function ww_set(token, ttl, now)
  local _, left = ww_live(now)
  local until_ms = now + ttl
  if left and now + left > until_ms then until_ms = now + left end
  rcall('HSET', K_META, 'ww', token, 'wwx', int(until_ms))
  if rcall('PTTL', K_META) < 0 then rcall('PEXPIRE', K_META, META_TTL) end
  -- A new mark tells the readers, so they stop letting new readers of
  -- their process join their hold (as a first registration does).
  if not left then
    for _, r in ipairs(rcall('ZRANGE', K_RD, 0, -1)) do
      push(r, 'w ' .. K_LOCK)
    end
  end
end

local function ww_clear(token)
  if rcall('HGET', K_META, 'ww') == token then rcall('HDEL', K_META, 'ww', 'wwx') end
end

-- How many wait for the lock named by the K_ keys (marks: a live writer
-- mark of another process counts as one, redlock://).
local function renew_waiting(token, marks)
  local n = rcall('ZCARD', K_Q)
  if marks then
    local ww = ww_live(now_ms())
    if ww and ww ~= token then n = n + 1 end
  end
  return n
end

-- The caller's hold on the lock named by the K_ keys, in mode 'w'|'r',
-- renewed to lease ms (0: only looked at) if it is the hold named by
-- fence (nil: the caller's hold in that mode; redlock's servers each
-- number a hold themselves), and how many wait (renew_waiting).
-- 0: the hold is gone (or is another hold than the one named);
-- n >= 1: renewed (or there), and n - 1 wait.  renew.lua's reply, and
-- renew_many.lua's for each of its holds.
-- A write hold granted by push is named in the death trace only once its
-- holder claims it (take_meta): a renewal (or a check) is its holder's
-- claim, should the posted one (touch.lua) not have reached Redis.
local function renew_hold(token, mode, lease, fence, marks)
  if mode == 'w' then
    local h = rcall('HMGET', K_LOCK, 'owner', 'fence', 'info')
    if h[1] ~= token or (fence and tonumber(h[2]) ~= fence) then return 0 end
    if lease > 0 then rcall('PEXPIRE', K_LOCK, lease) end
    if rcall('HGET', K_META, 'wh') == PENDING .. token then
      rcall('HSET', K_META, 'wh', token, 'wi', h[3], 'wp', '')
    end
    return 1 + renew_waiting(token, marks)
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
  return 1 + renew_waiting(token, marks)
end
