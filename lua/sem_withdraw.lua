-- SPDX-License-Identifier: BSD-3-Clause
-- sem_withdraw.lua: settle one operation of the caller's that failed with no
-- reply: a wait or try that may have run (or may still run: a stalled
-- server) is withdrawn (sess_undo), a post is completed (sess_complete).
-- Sent behind the operation on a connection given up, by the caller before
-- its next operation on the semaphore, and by its watchdog until Redis
-- answers (sem_common.lua: whichever comes first does it, once).
-- KEYS: the semaphore's six (sem_common.lua)
-- ARGV[1] channel prefix, [2] token, [3] 'w' withdraw a wait | 'r' complete
--     a post, [4] the operation's id, [5] the incarnation it was sent to ('0'
--     the caller knew none: whatever semaphore there is)
-- Reply: 1 done now (a permit given back, or posted), 2 a registration
--     withdrawn, 0 nothing to do, -4 the post would pass INT_MAX (dropped),
--     -7 (LOST) the incarnation it was sent to is not there: nothing done.
local token, rid, known = ARGV[2], tonumber(ARGV[4]), tonumber(ARGV[5]) or 0
local k = rcall('HGET', K_SEM, 'k')
if not k then
  -- Gone (or never made): a withdrawal has nothing to undo, and a post
  -- of a semaphore that Redis lost has nothing to add to.
  if known ~= 0 then return LOST end
  return 0
end
-- Nor has a semaphore made since (another incarnation): what the
-- operation did, if anything, was lost with the one it was sent to.
local s = sem_get(k, 0, false, known, token, rid)
if not s then return LOST end
local now = now_ms()
local n
if ARGV[3] == 'r' then
  n = sess_complete(token, rid, s, now)
else
  n = sess_undo(token, rid, s, now)
end
if n > 0 then
  prune_waiters(now)
  wake(available(s, now))
end
return n
