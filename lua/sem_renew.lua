-- SPDX-License-Identifier: BSD-3-Clause
-- sem_renew.lua: extend the caller's hold of leased permits by a lease (the
-- watchdog's renewal, as renew.lua for a lock's hold).
-- KEYS: the semaphore's six (sem_common.lua)
-- ARGV[1] channel prefix, [2] token, [3] mode (unused), [4] lease (ms; 0:
--     only check that the hold is there), [5] the hold's fence
-- Reply: 0 the hold is gone (or is another one); n >= 1 renewed, and n - 1
--     processes wait in the queue.
local token, lease, fence = ARGV[2], tonumber(ARGV[4]), ARGV[5]
local now = now_ms()
local due = rcall('ZSCORE', K_SL, token)
if not due or tonumber(due) <= now then return 0 end
local h = hold_of(token)
if not h or int(h[2]) ~= fence then return 0 end
if lease > 0 then
  rcall('ZADD', K_SL, int(now + lease), token)
  rcall('PEXPIRE', K_SL, IDLE)
  rcall('PEXPIRE', K_SH, IDLE)
  rcall('PEXPIRE', K_SEM, IDLE)
end
return 1 + rcall('ZCARD', K_SQ)
