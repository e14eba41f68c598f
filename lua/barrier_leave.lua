-- SPDX-License-Identifier: BSD-3-Clause
-- barrier_leave.lua: an arrival leaves without being released: a timed
-- wait ran out (dist_barrier_timedwait), or the process settles an arrival
-- whose reply was lost, before its next operation on the barrier (it may
-- have run, or may still: a stalled server).  It no longer counts, unless
-- its generation tripped already; and a copy of it that runs later does
-- nothing.
-- KEYS: the barrier's two (barrier_common.lua)
-- ARGV[1] channel prefix, [2] token, [3] the arrival's operation id, [4]
--     the generation it waits in (0: unknown, its reply was lost), [5] its
--     incarnation (0: unknown)
-- Reply: 1 withdrawn: it waited, and counts no more; 2 its generation
--     tripped: it was released (as a wait returns); 0 nothing: it never
--     ran (and a copy that runs now does nothing), or Redis lost the
--     barrier.
local token, id, gen, inc = ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local b = bar_get()
if not b or (inc ~= 0 and b[2] ~= inc) then return 0 end
local last, res, sgen = bsess_get(token)
local member = token .. ':' .. int(id)
if rcall('HDEL', K_BA, member) == 1 then
  rcall('HSET', K_BAR, 'n', math.max(b[4] - 1, 0))
  if id >= last then bsess_set(token, id, 'w', sgen) end
  return 1
end
if id > last then
  -- Never ran: mark it, so that a copy still on its way does nothing.
  bsess_set(token, id, 'w', 0)
  return 0
end
if id == last then
  if res == 's' or (res == 'a' and b[3] > sgen) then return 2 end
  return 0
end
-- A later operation of the caller's ran since: the arrival ran (the
-- caller had its reply) and is no longer waiting.
if gen ~= 0 and b[3] > gen then return 2 end
return 0
