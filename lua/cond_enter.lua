-- SPDX-License-Identifier: BSD-3-Clause
-- cond_enter.lua: register a thread that is about to wait on a condition
-- (dist_cond_wait), before it releases its mutex: a signal sent after the
-- release always finds the registration.
-- KEYS: 1 the condition <prefix>{TAG}: zset "token:regid" -> Redis time
--       (us) of the registration: the order signals wake waiters in;
--       2 <prefix>{TAG}:d: zset the same -> deadline (Redis time, ms),
--       which its waiter pushes back (cond_check.lua): a waiter whose
--       process died stops counting when it passes;
--       3 <prefix>{TAG}:i: hash the same -> the waiter ("host\tpid\ttid",
--       as a lock's waiters), for `distlock status` (cond_status.lua); a
--       registration of an older library has none.  Every script that
--       drops a registration drops its entry.  (Only KEYS[1] may be
--       declared, as for a lock's scripts: the others are derived.)
-- ARGV: 1 channel prefix, 2 token, 3 registration id, 4 its life (ms),
--       5 (optional) the waiter's info
-- Reply: 1 registered
local K_C = KEYS[1]
local K_D = KEYS[2] or K_C .. ':d'
local K_I = KEYS[3] or K_C .. ':i'
local member, ttl = ARGV[2] .. ':' .. ARGV[3], tonumber(ARGV[4])
local now = now_ms()
-- Registrations of waiters that died go here too, not only at a signal,
-- so a condition nobody signals does not gather them (a bounded batch).
local gone = rcall('ZRANGEBYSCORE', K_D, '-inf', now, 'LIMIT', 0, 100)
for _, m in ipairs(gone) do
  rcall('ZREM', K_C, m)
  rcall('ZREM', K_D, m)
  rcall('HDEL', K_I, m)
end
rcall('ZADD', K_C, 'NX', int(NOW_US), member)
rcall('ZADD', K_D, int(now + ttl), member)
if ARGV[5] and ARGV[5] ~= '' then rcall('HSET', K_I, member, ARGV[5]) end
-- The keys outlive every registration in them (extend never shortens:
-- another process's waiters may live longer).
extend(K_C, 2 * ttl)
extend(K_D, 2 * ttl)
extend(K_I, 2 * ttl)
return 1
