-- SPDX-License-Identifier: BSD-3-Clause
-- once_done.lua: the routine of a once completed in the caller's process,
-- which holds its running state (a lock's write hold, with the lease its
-- watchdog renews): the completion is kept for good, and every process
-- queued for the running state is pushed "k 0 KEY" (KEY: the once's main
-- key), so its waiting thread stops waiting and finds it complete.  The
-- caller releases its hold next (release.lua).
-- KEYS: as once_check.lua.
-- ARGV: 1 channel prefix, 2 token, 3 the hold's fence, 4 the registration
--       id it was taken with (redlock://, whose servers each number a hold
--       themselves, names it by that), 5 holder info
-- Reply: 1 kept; 2 kept, though the caller's hold had lapsed (nobody holds
--        the running state: nobody runs the routine now); 3 another
--        process had completed it already; 0 not kept: the caller's hold
--        lapsed and another process holds the running state, and runs the
--        routine again (the caller waits for it as any caller does)
local K_DONE = KEYS[7] or K_LOCK .. ':d'
local token, fence, rid, info = ARGV[2], ARGV[3], ARGV[4], ARGV[5]
if rcall('EXISTS', K_DONE) == 1 then return 3 end
local h = rcall('HMGET', K_LOCK, 'owner', 'fence', 'rid')
local res = 1
if h[1] ~= token or (h[2] ~= fence and h[3] ~= rid) then
  if h[1] then return 0 end
  res = 2
end
rcall('HSET', K_DONE, 'at', int(now_ms()), 'by', info, 'fence', fence)
for _, t in ipairs(rcall('ZRANGE', K_Q, 0, -1)) do
  if t ~= token then push(t, 'k 0 ' .. K_LOCK) end
end
return res
