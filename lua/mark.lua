-- SPDX-License-Identifier: BSD-3-Clause
-- mark.lua: what Redis must know of a lingering hold (shim/mark.c): a
-- linger clears the meta hash's `wh` (the lapse of a lingering hold is no
-- death: the next holder is not told EOWNERDEAD), a relock sets it again.
-- Posted, and sent with its text every time (EVAL: a SCRIPT FLUSH cannot
-- make it fail); not prefixed with common.lua, and the build sends it as
-- one line without its comments (cmake/embed_lua.cmake).  It names its hold
-- by token and fence, and changes nothing unless that very hold is there
-- (a mark can reach Redis late, after the hold was released and taken
-- again).
-- KEYS: 1 lock, 2 meta (common.lua's KEYS[1] and KEYS[6]).
-- ARGV: 1 token, 2 the hold's fence, 3 'l' lingers | 'h' held again,
--       4 ms ('0': none): lingering, the TTL is cut to it; held again, the
--       lease it is restored to (a relock after a cut: a pause right after
--       it must not lose the hold)
-- Reply: 1 marked, 0 that hold is not there
local h = redis.call('HMGET', KEYS[1], 'owner', 'fence', 'info')
if h[1] ~= ARGV[1] or h[2] ~= ARGV[2] then return 0 end
local ms = tonumber(ARGV[4])
if ARGV[3] == 'h' then
  redis.call('HSET', KEYS[2], 'wh', ARGV[1], 'wi', h[3])
  if ms > 0 then redis.call('PEXPIRE', KEYS[1], ms) end
  return 1
end
redis.call('HSET', KEYS[2], 'wh', '', 'wi', '')
if ms > 0 and redis.call('PTTL', KEYS[1]) > ms then
  redis.call('PEXPIRE', KEYS[1], ms)
end
return 1
