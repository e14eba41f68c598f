-- SPDX-License-Identifier: BSD-3-Clause
--! sent with its text
-- touch.lua: the renewal posted when a hold granted by push is claimed
-- (shim/core/tenure.c, dl_post_renew): the grant lives a claim window in Redis
-- until its holder renews it to its lease.  Posted, so its reply is never
-- read: it is sent with its text every time (EVAL), so that an emptied
-- script cache (SCRIPT FLUSH, a restart, a failover) cannot make it fail
-- unseen.  Not prefixed with common.lua; the build sends it as one line
-- without its comments (cmake/embed_lua.cmake), so no comment may follow
-- code on a line.  It names its hold by token and fence, and changes
-- nothing unless that very hold is there.  A write hold's claim also names
-- its holder in the death trace (the meta hash's wh): a grant made to a
-- waiter is marked pending ('g:' .. token, common.lua) until then, so that
-- a waiter that died before its grant is no death.
-- It is numbered with the marks of shim/mark.c (mk, as mark.lua): a claim
-- that runs after a later mark of the same hold (a linger's, sent on the
-- next connection) changes nothing.
-- KEYS: 1 lock, 2 readers, 3 rinfo, 4 meta (common.lua's KEYS[1..3], [6]).
-- ARGV: 1 token, 2 mode 'w'|'r', 3 lease ms ('0': a fixed lease, claimed
--       but not extended), 4 the hold's fence, 5 its number
-- Reply: 1 renewed (claimed), 0 that hold is not there, or a later mark of
--        it ran
local t, f, ms = ARGV[1], ARGV[4], tonumber(ARGV[3])
if ARGV[2] == 'w' then
  local h = redis.call('HMGET', KEYS[1], 'owner', 'fence', 'info')
  if h[1] ~= t or h[2] ~= f then return 0 end
  local mf, mq = string.match(redis.call('HGET', KEYS[4], 'mk') or '', '^(%d+):(%d+)$')
  if mf == f and tonumber(mq) >= tonumber(ARGV[5]) then return 0 end
  if ms > 0 then redis.call('PEXPIRE', KEYS[1], ms) end
  redis.call('HSET', KEYS[4], 'wh', t, 'wi', h[3], 'wp', '', 'mk', f .. ':' .. ARGV[5])
  return 1
end
if ms == 0 then return 1 end
local s = redis.call('ZSCORE', KEYS[2], t)
local r = redis.call('HGET', KEYS[3], t)
if not s or not r or string.format('%.0f', cmsgpack.unpack(r)[3]) ~= f then return 0 end
local now = redis.call('TIME')
now = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
if tonumber(s) <= now then return 0 end
redis.call('ZADD', KEYS[2], string.format('%.0f', now + ms), t)
for _, k in ipairs({KEYS[2], KEYS[3]}) do
  if redis.call('PTTL', k) < ms then redis.call('PEXPIRE', k, ms) end
end
return 1
