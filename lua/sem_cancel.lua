-- SPDX-License-Identifier: BSD-3-Clause
-- sem_cancel.lua: a wait that ran out (or was interrupted) leaves the queue.
-- A permit it could have taken stays: permits are taken only by a waiter's
-- own sem_wait, so nothing was handed to it.
-- KEYS: the semaphore's six (sem_common.lua)
-- ARGV[1] channel prefix, [2] token, [3] kind 'c'|'l', [4] initial value,
--     [5] this operation's id, [6] the incarnation the caller knows ('0'
--     none), [7] the id of the wait's last sem_wait: only a registration it
--     (or an earlier one) made goes
-- Reply: {1, inc} withdrawn, {0, inc} not queued, {-2, kind} the semaphore
--     exists as the other kind, {-3} a stale copy: nothing done, {-7} not
--     the incarnation the caller knows (or none): nothing done.
local token, kind, value, id = ARGV[2], ARGV[3], ARGV[4], tonumber(ARGV[5])
local s, other = sem_get(kind, value, true, tonumber(ARGV[6]), token, id)
if not s then
  if other == LOST then return {LOST} end
  return {-2, other}
end
local now = now_ms()
local last = sess_get(token)
if id < last then return {-3} end
local out = 0
local w = rcall('HGET', K_SW, token)
if w and tonumber(cmsgpack.unpack(w)[1]) <= tonumber(ARGV[7]) then
  -- Its place moves to the next in line: if that one may take a permit
  -- now, it is told so.
  local pos = rcall('ZRANK', K_SQ, token)
  sem_dequeue(token)
  out = 1
  local avail = available(s, now)
  if pos and pos < avail then wake(avail) end
end
sess_set(token, id, 'o')
return {out, s[4]}
