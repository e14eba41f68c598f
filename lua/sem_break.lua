-- SPDX-License-Identifier: BSD-3-Clause
-- sem_break.lua: `distlock break` on a semaphore (tools/cli/break.c).
-- Leased: removes holds whatever their lease (every hold, or the one of
-- the process ARGV[2] names), so that the permits of a holder that died
-- come back now rather than when its lease runs out; each process whose
-- hold it removes is told ('r KEY' on its channel, as break.lua tells a
-- lock's holders), so that it confirms its holds at once and finds this
-- one gone.  Counting: sets the value back to the one the semaphore was
-- created with (n0).  Either way the waiters that may now take a permit
-- are woken.  The queue and the processes' operation records stay.
-- KEYS: the semaphore's six (sem_common.lua)
-- ARGV[1] channel prefix, [2] the holder's token, '' every holder
-- Reply: {kind, a, b} (numbers as strings):
--   kind ''  no such semaphore;
--        'l' leased: a holds removed, b permits they had;
--        'c' counting: a the value before, b the value now (a = b: it was
--            at its initial value already), '' for b when the semaphore
--            does not know its initial value (nothing done).
local only = ARGV[2]
local s = rcall('HMGET', K_SEM, 'k', 'v', 'n0', 'used')
local kind = s[1]
if not kind then return {'', '', ''} end
local now = now_ms()
if kind == 'c' then
  local v, n0 = tonumber(s[2]) or 0, tonumber(s[3])
  if not n0 then return {'c', int(v), ''} end
  if v ~= n0 then
    rcall('HSET', K_SEM, 'v', int(n0))
    rcall('PEXPIRE', K_SEM, IDLE)
    prune_waiters(now)
    wake(n0)
  end
  return {'c', int(v), int(n0)}
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
return {'l', int(removed), int(permits)}
