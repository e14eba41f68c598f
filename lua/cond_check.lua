-- SPDX-License-Identifier: BSD-3-Clause
-- cond_check.lua: is a waiter of a condition still registered?  Its waiter
-- asks every third of the registration's life (a push lost, or never sent
-- while the subscriber was away), which pushes its deadline back.
-- KEYS: as cond_enter.lua.
-- ARGV: 1 channel prefix, 2 token, 3 registration id, 4 its life (ms)
-- Reply: 1 still waiting (deadline pushed back); 0 no longer: a signal or
--        a broadcast took it (its push may be lost), or it lapsed (its
--        waiter paused past its deadline, or Redis lost it): either way
--        the waiter returns, a spurious wake-up at worst, rather than
--        sleep through a signal it can no longer be found by
local K_C = KEYS[1]
local K_D = KEYS[2] or K_C .. ':d'
local K_I = KEYS[3] or K_C .. ':i'
local member, ttl = ARGV[2] .. ':' .. ARGV[3], tonumber(ARGV[4])
local now = now_ms()
local d = rcall('ZSCORE', K_D, member)
if d and tonumber(d) > now then
  rcall('ZADD', K_D, int(now + ttl), member)
  extend(K_C, 2 * ttl)
  extend(K_D, 2 * ttl)
  extend(K_I, 2 * ttl)
  return 1
end
if d then
  rcall('ZREM', K_C, member)
  rcall('ZREM', K_D, member)
  rcall('HDEL', K_I, member)
end
return 0
