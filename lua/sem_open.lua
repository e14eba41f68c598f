-- SPDX-License-Identifier: BSD-3-Clause
-- sem_open.lua: dist_sem_init (and the interposer's sem_open): the
-- semaphore, created with the caller's kind and value if it does not exist.
-- KEYS: the semaphore's six (sem_common.lua)
-- ARGV[1] channel prefix, [2] token, [3] kind 'c'|'l', [4] initial value,
--     [5] how: 'c' create it if it does not exist, 'x' create it, only if
--     it does not exist (O_EXCL), 'o' open it only if it exists, [6] an
--     operation id of the caller's (for the incarnation it may create)
-- Reply: {1, value, inc} created, {0, value, inc} it existed (value: its
--     permits free now; inc: its incarnation, which the caller uses from
--     now on, whatever it knew before), {-1} it does not exist ('o'), {-5}
--     it exists ('x'), {-2, kind} it exists as the other kind.
local token, kind, value, how = ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local id = tonumber(ARGV[6]) or 0
local s, other = sem_get(kind, value, false, 0, token, id)
if not s then
  if other ~= '' then return {-2, other} end
  if how == 'o' then return {-1} end
  s = sem_get(kind, value, true, 0, token, id)
  return {1, tonumber(value), s[4]}
end
if how == 'x' then return {-5} end
rcall('PEXPIRE', K_SEM, IDLE)
return {0, available(s, now_ms()), s[4]}
