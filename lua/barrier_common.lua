-- SPDX-License-Identifier: BSD-3-Clause
-- barrier_common.lua: what the barrier's scripts (lua/barrier_*.lua) share;
-- the build puts it after common.lua in front of each of them.
--
-- The keys of barrier NAME (tag \x01 'b' NAME: shim/base/keys.c), in KEYS
-- order:
--   KEYS[1] barrier  <prefix>{tag}     hash: c (the count every process must
--                                      use), id (the incarnation: Redis time
--                                      in us when the barrier was made; a
--                                      barrier that Redis lost and that is
--                                      made again has another), g (the
--                                      generation under way: numbered from
--                                      id up, so a generation's number is
--                                      never another incarnation's), n (its
--                                      arrivals so far), t (Redis time of the
--                                      last init or arrival, ms), s:<token>
--                                      (that process's last operation: "ID
--                                      OUTCOME GEN ARRIVAL MS", see bsess_*), sp (when
--                                      old s: fields were last pruned, ms)
--   KEYS[2] arrivals <prefix>{tag}:a   hash "token:id" -> generation: the
--                                      arrivals of generation g, each named
--                                      by its process and its operation id,
--                                      so that a timed wait withdraws its
--                                      own; emptied when g trips
-- Only KEYS[1] may be declared (redis-cluster://, under ASK: the other is
-- derived, and every command names one key).  ARGV[1] is the channel
-- prefix, ARGV[2] the caller's token.
-- An arrival never lapses: it counts once made, also when its process
-- dies afterwards.  Every key lives IDLE past its last write: a barrier
-- nobody uses for that long is forgotten (its next use makes it anew).
local K_BAR = KEYS[1]
local K_BA = KEYS[2] or K_BAR .. ':a'
local IDLE = 30 * DAY

-- The barrier: {count, id, g, n}, or nil if Redis has none.
local function bar_get()
  local b = rcall('HMGET', K_BAR, 'c', 'id', 'g', 'n')
  if not b[1] then return nil end
  return {tonumber(b[1]), tonumber(b[2]), tonumber(b[3]), tonumber(b[4]) or 0}
end

-- Makes the barrier with count (it does not exist): a new incarnation.
local function bar_make(count)
  now_ms()
  local id = NOW_US
  rcall('HSET', K_BAR, 'c', count, 'id', int(id), 'g', int(id), 'n', 0, 't', int(NOW))
  rcall('PEXPIRE', K_BAR, IDLE)
  return {tonumber(count), id, id, 0}
end

-- A process sends its operations on a barrier one at a time, with ids that
-- grow in the order it sends them (shim/prim/barrier.c), and the last
-- one's outcome is kept: an arrival's ('a' it waits in generation GEN, 's'
-- it tripped GEN: the serial), or a leave's ('W' it withdrew arrival ARR,
-- 'R' ARR had been released already, 'N' nothing: ARR never counted).  A
-- copy resent after a lost reply (the same id) is told its first outcome
-- and counts nothing twice; a copy that runs after a later operation (a
-- connection given up during a stall) does nothing at all.
local function bsess_get(token)
  local s = rcall('HGET', K_BAR, 's:' .. token)
  if not s then return 0, '', 0, 0 end
  local id, res, gen, arr = string.match(s, '^(%d+) (%a) (%d+) (%d+)')
  return tonumber(id), res, tonumber(gen), tonumber(arr)
end

local function bsess_set(token, id, res, gen, arr)
  rcall('HSET', K_BAR, 's:' .. token, int(id) .. ' ' .. res .. ' ' .. int(gen) .. ' ' ..
        int(arr) .. ' ' .. int(now_ms()))
end

-- s: fields of processes silent for an hour go, at most once a minute and
-- only past 256 fields (a process's copies all come within the I/O
-- time-out, or after a stall of the server: not an hour later).
local function bsess_prune()
  if rcall('HLEN', K_BAR) <= 256 then return end
  local now = now_ms()
  if (tonumber(rcall('HGET', K_BAR, 'sp')) or 0) > now - 60000 then return end
  rcall('HSET', K_BAR, 'sp', int(now))
  local all, old = rcall('HGETALL', K_BAR), {}
  for i = 1, #all, 2 do
    if string.sub(all[i], 1, 2) == 's:' then
      local ms = tonumber(string.match(all[i + 1], ' (%d+)$')) or 0
      if ms < now - 3600000 then old[#old + 1] = all[i] end
      if #old == 1000 then
        rcall('HDEL', K_BAR, unpack(old))
        old = {}
      end
    end
  end
  if #old > 0 then rcall('HDEL', K_BAR, unpack(old)) end
end
