-- SPDX-License-Identifier: BSD-3-Clause
-- sem_status.lua: a read-only snapshot of one semaphore, for `distlock top`
-- and `metrics` (tools/cli/objsem.c).  One script, so the value, the holds
-- and the queue are read at one instant of Redis's clock (the holders'
-- and waiters' times are not compared with the client's clock).  It writes
-- nothing: holders whose lease ran out and registrations past their
-- deadline are left for the next operation to drop (sem_value prunes; this
-- one only leaves them out), and the msgpack records are decoded here, so
-- the caller sees plain strings.
-- KEYS: the semaphore's six (sem_common.lua).
-- ARGV: none.
-- Reply (every leaf a string, '' for none):
--   { now_ms,
--     kind:    'c' counting, 'l' leased, '' no such semaphore,
--     value:   counting: the value; leased: the permits (n),
--     holders: { {token, info, since, fence, count, deadline}, ... } leased:
--              the live holds (lease deadline after now), by deadline,
--     waiters: { {token, info, since}, ... } live registrations (deadline
--              after now), in queue order; since: when it first queued
--              ('' from an older library),
--     incarnation: its incarnation (sem_common.lua; '' none yet: made by
--              an older library and not used since),
--     born:    when that incarnation was created (ms, '' unknown) }
local function str(v)
  if v == nil or v == false then return '' end
  if type(v) == 'number' then return int(v) end
  return tostring(v)
end

local now = now_ms()
local s = rcall('HMGET', K_SEM, 'k', 'v', 'n', 'i', 'ib')
local kind = s[1] or ''
local value = kind == 'c' and s[2] or kind == 'l' and s[3] or ''
local holders = {}
if kind == 'l' then
  local live = rcall('ZRANGEBYSCORE', K_SL, '(' .. str(now), '+inf', 'WITHSCORES')
  for i = 1, #live, 2 do
    local raw = rcall('HGET', K_SH, live[i])
    if raw then
      local h = cmsgpack.unpack(raw)
      holders[#holders + 1] = {live[i], str(h[4]), str(h[3]), str(h[2]), str(h[1]),
                               str(tonumber(live[i + 1]))}
    end
  end
end
local waiters = {}
for _, tok in ipairs(rcall('ZRANGE', K_SQ, 0, -1)) do
  local due, raw = tonumber(rcall('ZSCORE', K_SD, tok)), rcall('HGET', K_SW, tok)
  if raw and due and due > now then
    local w = cmsgpack.unpack(raw)
    waiters[#waiters + 1] = {tok, str(w[2]), str(w[3])}
  end
end
return {str(now), kind, str(value), holders, waiters, str(s[4]), str(s[5])}
