-- SPDX-License-Identifier: BSD-3-Clause
-- cond_status.lua: a read-only snapshot of one condition, for `distlock
-- status`, `list`, `top` and `metrics` (tools/cli/objcond.c): its waiters,
-- in the order a signal wakes them, at one instant of Redis's clock.  It
-- writes nothing: registrations past their deadline (waiters whose process
-- died) are left for cond_enter.lua and cond_signal.lua to drop; this one
-- only leaves them out.  A registration carries no host or pid, only its
-- process's token.
-- KEYS: as cond_enter.lua (the condition, its deadlines).
-- ARGV: none.
-- Reply (every leaf a string):
--   { now_ms,
--     waiters: { {token, regid, since, deadline}, ... } live registrations
--              (deadline after now), oldest first; since: when it
--              registered (ms) }
local K_C = KEYS[1]
local K_D = KEYS[2] or K_C .. ':d'
local now = now_ms()
local waiters = {}
local all = rcall('ZRANGE', K_C, 0, -1, 'WITHSCORES')
for i = 1, #all, 2 do
  local m = all[i]
  local due = tonumber(rcall('ZSCORE', K_D, m))
  if due and due > now then
    local at = string.find(m, ':', 1, true)
    local tok, reg = m, ''
    if at then tok, reg = string.sub(m, 1, at - 1), string.sub(m, at + 1) end
    waiters[#waiters + 1] = {tok, reg, int(math.floor(tonumber(all[i + 1]) / 1000)), int(due)}
  end
end
return {int(now), waiters}
