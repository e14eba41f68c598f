-- SPDX-License-Identifier: BSD-3-Clause
-- withdraw_all.lua: undo one lock-all request (acquire_all.lua) whose reply
-- its caller never got.  The link writes it right behind that request, on
-- the same connection, when it gives up on the connection (a stalled
-- server: the request may still run when it resumes), so it runs right
-- after the request, whatever the server does with its other connections.
-- It releases exactly what that request took: on each lock of the set,
-- the caller's write hold if that very request took or claimed it (its
-- registration id is the hold's, common.lua hold_rid); a hold of a later
-- request of the caller's (a later id: it asked again on another
-- connection), or anyone else's, stays.  acquire_all.lua never queues, so
-- there is no queue place to withdraw.
-- A hold taken over a lapse consumed the death trace (common.lua,
-- take_meta): nobody was told of that lapse by this request, so the trace
-- goes back with the hold, as withdraw.lua does; the waiters queued since
-- are served.
-- KEYS: the six keys of common.lua, of the first lock (as acquire_all.lua;
-- the others are reached by their main keys in ARGV[4]).  Under
-- redis-cluster://'s ASK form (only KEYS[1] declared) it does nothing: the
-- link never sends an undo there.
-- ARGV: 1 channel prefix, 2 token, 3 the request's registration id
--       (acquire_all.lua's ARGV[4]), 4 the locks, as acquire_all.lua's
--       ARGV[6] ("LEASE:LEN:KEY" each)
-- Reply: the number of holds released
local token, rid = ARGV[2], tonumber(ARGV[3])
if not KEYS[6] then return 0 end

local function use(key)
  K_LOCK, K_RD, K_RI, K_Q = key, key .. ':r', key .. ':ri', key .. ':q'
  K_W, K_META = key .. ':w', key .. ':m'
end

local released, blob, pos = 0, ARGV[4], 1
while pos <= #blob do
  local _, len, at = string.match(blob, '^(%d+):(%d+):()', pos)
  if not len then return redis.error_reply('withdraw_all: malformed lock list') end
  len = tonumber(len)
  use(string.sub(blob, at, at + len - 1))
  pos = at + len
  local h = rcall('HMGET', K_LOCK, 'owner', 'rid', 'od', 'pt')
  if h[1] == token and tonumber(h[2]) == rid then
    local prev = h[3] == '1' and h[4] and cmsgpack.unpack(h[4]) or nil
    rcall('DEL', K_LOCK)
    trace_restore(prev)
    grant_waiters(nil, true)
    released = released + 1
  end
end
return released
