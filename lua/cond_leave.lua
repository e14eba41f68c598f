-- SPDX-License-Identifier: BSD-3-Clause
-- cond_leave.lua: a waiter of a condition stops waiting without a signal
-- from Redis (its timed wait ran out, or a signal of its own process woke
-- it): its registration goes, so that no later signal is spent on it.
-- KEYS: as cond_enter.lua.
-- ARGV: 1 channel prefix, 2 token, 3 registration id
-- Reply: 1 it was still waiting, and is removed; 0 it was no longer: a
--        signal or broadcast took it meanwhile (or it lapsed).  A timed
--        wait told 0 returns 0, not ETIMEDOUT: the signal that took it
--        woke this waiter, and would be lost otherwise; a waiter woken by
--        its own process's signal passes such a signal on (it signals
--        again: shim/prim/cond.c)
local K_C = KEYS[1]
local K_D = KEYS[2] or K_C .. ':d'
local K_I = KEYS[3] or K_C .. ':i'
local member = ARGV[2] .. ':' .. ARGV[3]
local now = now_ms()
local d = rcall('ZSCORE', K_D, member)
rcall('ZREM', K_C, member)
rcall('ZREM', K_D, member)
rcall('HDEL', K_I, member)
if d and tonumber(d) > now then return 1 end
return 0
