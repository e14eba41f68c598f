-- SPDX-License-Identifier: BSD-3-Clause
-- cond_signal.lua: dist_cond_signal (the oldest live waiter) and
-- dist_cond_broadcast (every live waiter registered when it runs): each
-- waiter taken is removed and woken by a push to its process's channel,
-- "k REGID KEY" (KEY: the condition's main key, which names it).  A
-- signal with nobody waiting is not remembered.
-- KEYS: as cond_enter.lua.
-- ARGV: 1 channel prefix, 2 token (the caller's; unused), 3 's' the
--       oldest waiter, 'a' every waiter
-- Reply: the number of waiters woken
local K_C = KEYS[1]
local K_D = KEYS[2] or K_C .. ':d'
local now = now_ms()
-- Waiters whose deadline passed (their process died, or stalled past it)
-- are never woken: a signal taken by one would be lost.  Their waiter, if
-- it lives, learns it at its next check (cond_check.lua) and returns.
while true do
  local gone = rcall('ZRANGEBYSCORE', K_D, '-inf', now, 'LIMIT', 0, 1000)
  if #gone == 0 then break end
  for _, m in ipairs(gone) do
    rcall('ZREM', K_C, m)
    rcall('ZREM', K_D, m)
  end
end
local woken
if ARGV[3] == 'a' then
  woken = rcall('ZRANGE', K_C, 0, -1)
  rcall('DEL', K_C)
  rcall('DEL', K_D)
else
  woken = rcall('ZRANGE', K_C, 0, 0)
  for _, m in ipairs(woken) do
    rcall('ZREM', K_C, m)
    rcall('ZREM', K_D, m)
  end
end
for _, m in ipairs(woken) do
  local at = string.find(m, ':', 1, true)
  if at then
    push(string.sub(m, 1, at - 1), 'k ' .. string.sub(m, at + 1) .. ' ' .. K_C)
  end
end
return #woken
