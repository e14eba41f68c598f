-- SPDX-License-Identifier: BSD-3-Clause
-- barrier_leave.lua: an arrival leaves without being released: a timed
-- wait ran out (dist_barrier_timedwait), or the process settles, before
-- its next operation on the barrier, a request that got no reply (an
-- arrival, or a leave: it may have run, or may still, on a stalled
-- server).  The arrival no longer counts, unless its generation tripped
-- already; and a copy of the request that got no reply that runs later
-- does nothing (this leave is a later operation of the process).
-- KEYS: the barrier's two (barrier_common.lua)
-- ARGV[1] channel prefix, [2] token, [3] the arrival's id, [4] the
--     generation it waits in (0: unknown, its reply was lost), [5] its
--     incarnation (0: unknown), [6] this leave's own operation id, [7] the
--     id of the request being settled (0: none; the arrival's, or a
--     leave's of it)
-- Reply: 1 withdrawn: it counts no more; 2 its generation tripped: it was
--     released (as a wait returns); 0 nothing: it never counted (and a copy
--     that runs now does nothing), or Redis lost the barrier; -3 a stale
--     copy (a later operation of the caller's ran first): nothing done.
local token, arr, gen, inc = ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local op, failed = tonumber(ARGV[6]), tonumber(ARGV[7])
local b = bar_get()
if not b or (inc ~= 0 and b[2] ~= inc) then return 0 end
local last, res, sgen, sarr = bsess_get(token)
if op < last then return -3 end
if op == last then
  -- This very leave ran before its reply was lost.
  if res == 'W' then return 1 end
  if res == 'R' then return 2 end
  return 0
end
local out
if failed ~= 0 and failed == last and sarr == arr and (res == 'W' or res == 'R' or res == 'N') then
  -- Settling a leave of it that ran: its outcome stands.
  out = res == 'W' and 1 or res == 'R' and 2 or 0
elseif rcall('HDEL', K_BA, token .. ':' .. int(arr)) == 1 then
  rcall('HSET', K_BAR, 'n', math.max(b[4] - 1, 0))
  out = 1
elseif arr == last and (res == 'a' or res == 's') then
  -- Its own record is the last: it ran, and is no longer waiting.
  out = (res == 's' or b[3] > sgen) and 2 or 0
elseif gen ~= 0 and b[3] > gen then
  out = 2
else
  -- Never ran (a copy still on its way is now stale), or gone.
  out = 0
end
bsess_set(token, op, out == 1 and 'W' or out == 2 and 'R' or 'N', 0, arr)
rcall('PEXPIRE', K_BAR, IDLE)
return out
