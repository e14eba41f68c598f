-- SPDX-License-Identifier: BSD-3-Clause
-- sem_open.lua: dist_sem_init (and the interposer's sem_open): the
-- semaphore, created with the caller's kind and value if it does not exist.
-- KEYS: the semaphore's six (sem_common.lua)
-- ARGV[1] channel prefix, [2] token, [3] kind 'c'|'l', [4] initial value,
--     [5] how: 'c' create it if it does not exist, 'x' create it, only if
--     it does not exist (O_EXCL), 'o' open it only if it exists
-- Reply: {1, value} created, {0, value} it existed (value: its permits free
--     now), {-1} it does not exist ('o'), {-5} it exists ('x'), {-2, kind} it
--     exists as the other kind.
local kind, value, how = ARGV[3], ARGV[4], ARGV[5]
local s, other = sem_get(kind, value, false)
if not s then
  if other ~= '' then return {-2, other} end
  if how == 'o' then return {-1} end
  sem_get(kind, value, true)
  return {1, tonumber(value)}
end
if how == 'x' then return {-5} end
rcall('PEXPIRE', K_SEM, IDLE)
return {0, available(s, now_ms())}
