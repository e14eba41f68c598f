-- SPDX-License-Identifier: BSD-3-Clause
-- sem_post.lua: post the semaphore (counting: one more permit; leased: give
-- back one of the caller's own permits), and wake the waiters that may take
-- a permit now.
-- KEYS: the semaphore's six (sem_common.lua)
-- ARGV[1] channel prefix, [2] token, [3] kind 'c'|'l', [4] initial value,
--     [5] this operation's id, [6] the incarnation the caller knows ('0'
--     none), [7] leased: the fence of the caller's hold
-- Reply: {1, value, inc} posted (value: the permits free now; leased: the
--     caller's count of permits after), {2, inc} posted already (a copy
--     resent after its reply was lost), {0, inc} leased: the caller holds no
--     permit of that hold (it lapsed: its lease ran out, or the server lost
--     it), {-2, kind} the semaphore exists as the other kind, {-3} a stale
--     copy: nothing done, {-4} counting: the value would pass INT_MAX:
--     nothing done, {-7} not the incarnation the caller knows (or none): a
--     post to a semaphore Redis lost adds nothing to a new one.
local token, kind, value, id = ARGV[2], ARGV[3], ARGV[4], tonumber(ARGV[5])
local s, other = sem_get(kind, value, true, tonumber(ARGV[6]), token, id)
if not s then
  if other == LOST then return {LOST} end
  return {-2, other}
end
local inc = s[4]
local now = now_ms()
local last, res = sess_get(token)
if id < last then return {-3} end
if id == last and res == 'p' then return {2, inc} end
prune_waiters(now)
if kind == 'c' then
  if not counting_post(s) then
    sess_set(token, id, 'o')
    return {-4}
  end
  sess_set(token, id, 'p')
  rcall('PEXPIRE', K_SEM, IDLE)
  wake(s[2])
  sess_prune()
  return {1, s[2], inc}
end
local avail = available(s, now)
local h = hold_of(token)
if not h or int(h[2]) ~= ARGV[7] then
  sess_set(token, id, 'o')
  return {0, inc}
end
local count = permit_drop(token, h, s[3])
sess_set(token, id, 'p')
rcall('PEXPIRE', K_SEM, IDLE)
wake(avail + 1)
sess_prune()
return {1, count, inc}
