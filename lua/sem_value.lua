-- SPDX-License-Identifier: BSD-3-Clause
-- sem_value.lua: the semaphore's value (dist_sem_getvalue): counting, its
-- count; leased, the permits that no live hold has (holders whose lease ran
-- out are dropped first, their permits back).
-- KEYS: the semaphore's six (sem_common.lua)
-- ARGV[1] channel prefix, [2] token, [3] kind 'c'|'l', [4] initial value
-- Reply: {1, value}, {-2, kind} the semaphore exists as the other kind.
-- A semaphore that does not exist yet is not created: its value is the
-- one its first init would give it.
local kind, value = ARGV[3], ARGV[4]
local s, other = sem_get(kind, value, false)
if not s then
  if other ~= '' then return {-2, other} end
  return {1, tonumber(value)}
end
local avail = available(s, now_ms())
return {1, avail}
