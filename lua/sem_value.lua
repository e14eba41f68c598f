-- SPDX-License-Identifier: BSD-3-Clause
-- sem_value.lua: the semaphore's value (dist_sem_getvalue): counting, its
-- count; leased, the permits that no live hold has (holders whose lease ran
-- out are dropped first, their permits back).
-- KEYS: the semaphore's six (sem_common.lua)
-- ARGV[1] channel prefix, [2] token, [3] kind 'c'|'l', [4] initial value,
--     [5] the incarnation the caller knows ('0' none)
-- Reply: {1, value, inc} (inc 0: it does not exist), {-2, kind} the
--     semaphore exists as the other kind, {-7} not the incarnation the
--     caller knows (or none).
-- A semaphore that does not exist yet is not created: its value is the
-- one its first init would give it.
local token, kind, value = ARGV[2], ARGV[3], ARGV[4]
local s, other = sem_get(kind, value, false, tonumber(ARGV[5]) or 0, token, 0)
if not s then
  if other == LOST then return {LOST} end
  if other ~= '' then return {-2, other} end
  return {1, tonumber(value), 0}
end
local avail = available(s, now_ms())
return {1, avail, s[4]}
