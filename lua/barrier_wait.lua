-- SPDX-License-Identifier: BSD-3-Clause
-- barrier_wait.lua: an arrival at the barrier (dist_barrier_wait).  The
-- count-th arrival of a generation trips it: every process with an arrival
-- in it but the caller's is pushed "k GEN KEY" (one push per process,
-- however many of its threads wait), and the next generation starts.
-- KEYS: the barrier's two (barrier_common.lua)
-- ARGV[1] channel prefix, [2] token, [3] count (the caller's object's),
--     [4] this operation's id
-- Reply: {0, gen, id, n} the arrival waits in generation gen of
--     incarnation id (n arrivals so far); {2, gen, id} it tripped gen: the
--     caller is the serial; {1, gen, id} a resend of an arrival that waited
--     in gen, which has tripped since; {-2, count} the barrier has another
--     count; {-3} a stale copy (a later operation of the caller's ran
--     first); {-4} its id is a leave's: nothing done.
-- A barrier Redis does not have (lost, or forgotten idle) is made anew
-- with the caller's count.
local token, count, id = ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
local b = bar_get() or bar_make(count)
if b[1] ~= count then return {-2, b[1]} end
local last, res, sgen = bsess_get(token)
if id < last then return {-3} end
if id == last then
  -- This very call ran before its reply was lost.
  if res ~= 'a' and res ~= 's' then return {-4} end
  if res == 's' then return {2, sgen, b[2]} end
  if b[3] > sgen then return {1, sgen, b[2]} end
  return {0, sgen, b[2], b[4]}
end
local gen, n = b[3], b[4] + 1
local now = now_ms()
if n >= b[1] then
  -- Tripped: every other process with an arrival in it is told once.
  local told = {[token] = true}
  local members = rcall('HKEYS', K_BA)
  rcall('DEL', K_BA)
  rcall('HSET', K_BAR, 'g', int(gen + 1), 'n', 0, 't', int(now))
  bsess_set(token, id, 's', gen, id)
  for _, m in ipairs(members) do
    local at = string.find(m, ':', 1, true)
    local t = at and string.sub(m, 1, at - 1)
    if t and not told[t] then
      told[t] = true
      push(t, 'k ' .. int(gen) .. ' ' .. K_BAR)
    end
  end
  rcall('PEXPIRE', K_BAR, IDLE)
  bsess_prune()
  return {2, gen, b[2]}
end
rcall('HSET', K_BA, token .. ':' .. int(id), int(gen))
rcall('HSET', K_BAR, 'n', n, 't', int(now))
bsess_set(token, id, 'a', gen, id)
rcall('PEXPIRE', K_BAR, IDLE)
rcall('PEXPIRE', K_BA, IDLE)
bsess_prune()
return {0, gen, b[2], n}
