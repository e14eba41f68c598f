-- SPDX-License-Identifier: BSD-3-Clause
--! sent with its text
-- mark.lua: what Redis must know of a lingering hold (shim/core/mark.c): a
-- linger clears the meta hash's `wh` (the lapse of a lingering hold is no
-- death: the next holder is not told EOWNERDEAD), a relock sets it again.
-- Posted, and sent with its text every time (EVAL: a SCRIPT FLUSH cannot
-- make it fail); not prefixed with common.lua, and the build sends it as
-- one line without its comments (cmake/embed_lua.cmake).  It names its hold
-- by token and fence, and changes nothing unless that very hold is there
-- (a mark can reach Redis late, after the hold was released and taken
-- again).
-- Marks of one hold are numbered in the order the process made them: a
-- mark that arrives after a later one (a linger mark written on a
-- connection given up since, run after the relock's mark sent on the next)
-- changes nothing, or it would clear the trace of a hold that is held.
-- KEYS: 1 lock, 2 meta (common.lua's KEYS[1] and KEYS[6]).
-- ARGV: 1 token, 2 the hold's fence, 3 'l' lingers | 'h' held again,
--       4 ms ('0': none): lingering, the TTL is cut to it; held again, the
--       lease it is restored to (a relock after a cut: a pause right after
--       it must not lose the hold),
--       5 the mark's number (the process's marks only grow)
-- Reply: 1 marked, 0 that hold is not there, or a later mark of it ran
local h = redis.call('HMGET', KEYS[1], 'owner', 'fence', 'info')
if h[1] ~= ARGV[1] or h[2] ~= ARGV[2] then return 0 end
local mf, mq = string.match(redis.call('HGET', KEYS[2], 'mk') or '', '^(%d+):(%d+)$')
if mf == ARGV[2] and tonumber(mq) >= tonumber(ARGV[5]) then return 0 end
local mk = ARGV[2] .. ':' .. ARGV[5]
local ms = tonumber(ARGV[4])
if ARGV[3] == 'h' then
  redis.call('HSET', KEYS[2], 'wh', ARGV[1], 'wi', h[3], 'wp', '', 'mk', mk)
  if ms > 0 then redis.call('PEXPIRE', KEYS[1], ms) end
  return 1
end
redis.call('HSET', KEYS[2], 'wh', '', 'wi', '', 'mk', mk)
if ms > 0 and redis.call('PTTL', KEYS[1]) > ms then
  redis.call('PEXPIRE', KEYS[1], ms)
end
return 1
