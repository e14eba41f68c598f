-- SPDX-License-Identifier: BSD-3-Clause
-- sem_break.lua: `distlock break` on a semaphore (tools/cli/break.c).
-- Leased: removes holds whatever their lease (every hold, or the one of
-- the process ARGV[2] names), so that the permits of a holder that died
-- come back now rather than when its lease runs out; each process whose
-- hold it removes is told ('r KEY' on its channel, as break.lua tells a
-- lock's holders), so that it confirms its holds at once and finds this
-- one gone.  The incarnation stays: every permit has a named holder, the
-- ones removed are told, and the count the others rely on (the holds that
-- remain) is still exact.  The waiters that may now take a permit are
-- woken.
-- Counting: sets the value back to the one the semaphore was created with
-- (n0), as a new incarnation.  A counting semaphore does not know who is
-- inside on its permits, so a reset is told to everyone that used it, as
-- a loss of the semaphore is (sem_common.lua, "Incarnations"): their next
-- operation is answered LOST (ENOLCK, dist_onlost) until they initialize
-- it again.  Its registrations, all of processes that used the old
-- incarnation, are woken (so they hear it at once) and leave the queue.
-- The processes' operation records stay (an older operation settled later
-- names the old incarnation and is refused).
-- KEYS: the semaphore's six (sem_common.lua)
-- ARGV[1] channel prefix, [2] the holder's token, '' every holder
-- Reply: {kind, a, b, inc} (numbers as strings):
--   kind ''  no such semaphore;
--        'l' leased: a holds removed, b permits they had;
--        'c' counting: a the value before, b the value now (a = b: it was
--            at its initial value already: nothing done), '' for b when
--            the semaphore does not know its initial value (nothing done).
--   inc: the incarnation now ('' unknown).
local only = ARGV[2]
local s = rcall('HMGET', K_SEM, 'k', 'v', 'n0', 'used', 'i')
local kind = s[1]
if not kind then return {'', '', '', ''} end
local now = now_ms()
local inc = tonumber(s[5])
if kind == 'c' then
  local v, n0 = tonumber(s[2]) or 0, tonumber(s[3])
  if not n0 then return {'c', int(v), '', inc and int(inc) or ''} end
  if v ~= n0 then
    rcall('HSET', K_SEM, 'v', int(n0))
    local old = inc or 0
    inc = incarnation_new('break ' .. int(old), old)
    if inc == old then inc = inc % 4503599627370495 + 1 end
    incarnation_set(inc)
    rcall('PEXPIRE', K_SEM, IDLE)
    for _, t in ipairs(rcall('ZRANGE', K_SQ, 0, -1)) do
      local w = rcall('HGET', K_SW, t)
      if w then
        push(t, 'g ' .. int(cmsgpack.unpack(w)[1]) .. ' 0 0 0 ' .. K_SEM)
      end
      sem_dequeue(t)
    end
  end
  return {'c', int(v), int(n0), int(inc)}
end
local used = tonumber(s[4]) or 0
local holders = only ~= '' and {only} or rcall('HKEYS', K_SH)
local removed, permits = 0, 0
for _, t in ipairs(holders) do
  local h = hold_of(t)
  if h then
    rcall('HDEL', K_SH, t)
    rcall('ZREM', K_SL, t)
    push(t, 'r ' .. K_SEM)
    removed = removed + 1
    permits = permits + h[1]
  end
end
if removed > 0 then
  used = math.max(used - permits, 0)
  rcall('HSET', K_SEM, 'used', used)
  prune_waiters(now)
  wake(available({'l', tonumber(rcall('HGET', K_SEM, 'n')) or 0, used}, now))
end
return {'l', int(removed), int(permits), inc and int(inc) or ''}
