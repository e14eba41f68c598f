-- SPDX-License-Identifier: BSD-3-Clause
-- status.lua: a read-only snapshot of one lock, for `distlock status`,
-- `list`, `break` and the waiting line (tools/cli/lockstat.c).  One script,
-- so the snapshot is consistent and in Redis's own clock: comparing the
-- holders' times with the client's clock would show the clock skew.  The
-- msgpack records of readers and waiters are decoded here, so the caller
-- only ever sees plain strings.  It writes nothing.
-- KEYS: the six keys of common.lua.
-- ARGV: none.
-- Reply (every leaf a string, '' for none):
--   { now_ms,
--     writer:  {} or {owner, info, since, fence, lease, od, pttl},
--     readers: { {token, info, since, fence, od, deadline}, ... } live ones,
--     waiters: { {token, mode, info, since}, ... } live registrations, in queue
--              order; since: when it first queued ('' from an older library),
--     meta:    {fence, wh, wi} }
local function str(v)
  if v == nil or v == false then return '' end
  if type(v) == 'number' then return int(v) end
  return tostring(v)
end

local now = now_ms()
local w = rcall('HMGET', K_LOCK, 'owner', 'info', 'since', 'fence', 'lease', 'od')
local writer = {}
if w[1] then
  writer = {str(w[1]), str(w[2]), str(w[3]), str(w[4]), str(w[5]), str(w[6]), str(rcall('PTTL', K_LOCK))}
end
local readers = {}
local rd = rcall('ZRANGEBYSCORE', K_RD, '(' .. str(now), '+inf', 'WITHSCORES')
for i = 1, #rd, 2 do
  local info, since, fence, od = '', '', '', ''
  local raw = rcall('HGET', K_RI, rd[i])
  if raw then
    local v = cmsgpack.unpack(raw)
    info, since, fence, od = str(v[1]), str(v[2]), str(v[3]), str(v[4])
  end
  readers[#readers + 1] = {rd[i], info, since, fence, od, str(tonumber(rd[i + 1]))}
end
local waiters = {}
for _, tok in ipairs(rcall('ZRANGE', K_Q, 0, -1)) do
  local raw = rcall('HGET', K_W, tok)
  if raw then
    local v = cmsgpack.unpack(raw)
    if tonumber(v[3]) > now then waiters[#waiters + 1] = {tok, str(v[1]), str(v[5]), str(v[8])} end
  end
end
local m = rcall('HMGET', K_META, 'fence', 'wh', 'wi')
return {str(now), writer, readers, waiters, {str(m[1]), str(m[2]), str(m[3])}}
