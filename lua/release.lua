-- release.lua: end the caller's hold and hand the lock to the next waiters.
-- KEYS: the six keys of common.lua.
-- ARGV: 1 channel prefix, 2 token, 3 mode 'w'|'r', 4 (optional) the hold's
--       id (its fence), the same in every copy of one call
-- Reply: 1 released; 0 the caller held nothing (lease ran out, key deleted,
--        the server lost it); 2 this very hold was released already, by an
--        earlier copy of the call whose reply was lost (a resend)
local token, mode, relid = ARGV[2], ARGV[3], ARGV[4]
local MARK = 'x:' .. token

-- Remember the last hold each process released, so that a resend can tell
-- "released by my first copy" (2) from "lost" (0).  Fences are unique, so an
-- old mark never matches a later hold and needs no clean-up, except to keep
-- the meta hash small when many processes come and go.
local function mark()
  if not relid then return end
  if rcall('HSET', K_META, MARK, relid) == 1 then
    if rcall('PTTL', K_META) < 0 then rcall('PEXPIRE', K_META, META_TTL) end
    if rcall('HLEN', K_META) > 256 then
      for _, f in ipairs(rcall('HKEYS', K_META)) do
        if string.sub(f, 1, 2) == 'x:' and f ~= MARK then rcall('HDEL', K_META, f) end
      end
    end
  end
end

local held = 1
if mode == 'w' then
  if rcall('HGET', K_LOCK, 'owner') == token then
    rcall('DEL', K_LOCK)
    rcall('HDEL', K_META, 'wh', 'wi', 'wl')
  else
    held = 0
    -- The lapsed holder itself reports the lapse (ENOLCK): the next one
    -- need not hear of it too, unless someone took the lock in between.
    if rcall('HGET', K_META, 'wh') == token then rcall('HDEL', K_META, 'wh', 'wi', 'wl') end
  end
else
  local s = rcall('ZSCORE', K_RD, token)
  if not s or tonumber(s) <= now_ms() then held = 0 end
  if s then
    rcall('ZREM', K_RD, token)
    rcall('HDEL', K_RI, token)
  end
end
if held == 1 then
  mark()
elseif relid and rcall('HGET', K_META, MARK) == relid then
  held = 2
end
grant_waiters(nil, mode == 'w' and held == 1)
return held
