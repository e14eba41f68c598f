-- SPDX-License-Identifier: BSD-3-Clause
-- sem_unlink.lua: dist_sem_unlink (sem_unlink(3)): the semaphore's name
-- removed from Redis, with its value, its queue and its leased holds; the
-- next init of the name creates a new semaphore.  Every process queued on
-- it is pushed its registration's wake-up, so that it asks again at once
-- (and learns what became of the semaphore it waited for) rather than at
-- its next refresh.
-- KEYS: the semaphore's six (sem_common.lua)
-- ARGV[1] channel prefix, [2] token
-- Reply: 1 removed; 0 Redis has no semaphore of that name (its other keys,
--        leftovers without the semaphore's hash, are removed all the same).
local had = rcall('EXISTS', K_SEM)
local regs = rcall('HGETALL', K_SW)
for i = 1, #regs, 2 do
  push(regs[i], 'g ' .. int(cmsgpack.unpack(regs[i + 1])[1]) .. ' 0 0 0 ' .. K_SEM)
end
-- One key per command (common.lua: a cluster node importing the slot).
rcall('DEL', K_SEM)
rcall('DEL', K_SQ)
rcall('DEL', K_SD)
rcall('DEL', K_SW)
rcall('DEL', K_SL)
rcall('DEL', K_SH)
return had
