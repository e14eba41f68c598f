-- SPDX-License-Identifier: BSD-3-Clause
-- barrier_open.lua: dist_barrier_init: the barrier, made with the caller's
-- count if Redis has none, else checked against it.
-- KEYS: the barrier's two (barrier_common.lua)
-- ARGV[1] channel prefix, [2] token, [3] count, [4] idle (ms): how long
--     the barrier must have gone without an init or an arrival for another
--     count to replace its own
-- Reply: {1, count} made or the same count; {2, count} another count
--     replaced an idle barrier's (no arrival waits, and none came, nor an
--     init, for `idle` ms: a program run again with another count is not
--     refused); {-2, count, waiting, ms} the barrier has another count and
--     is in use (waiting: arrivals of the generation under way; ms since
--     its last init or arrival): EINVAL, naming both counts.
local count, idle = tonumber(ARGV[3]), tonumber(ARGV[4])
local b = bar_get()
local now = now_ms()
if not b then
  bar_make(count)
  return {1, count}
end
local res = 1
if b[1] ~= count then
  local since = now - (tonumber(rcall('HGET', K_BAR, 't')) or 0)
  if b[4] > 0 or since < idle then return {-2, b[1], b[4], math.max(since, 0)} end
  rcall('HSET', K_BAR, 'c', count)
  res = 2
end
rcall('HSET', K_BAR, 't', int(now))
rcall('PEXPIRE', K_BAR, IDLE)
return {res, count}
