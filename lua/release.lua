-- release.lua: end the caller's hold and hand the lock to the next waiters.
-- KEYS: the six keys of common.lua.
-- ARGV: 1 channel prefix, 2 token, 3 mode 'w'|'r'
-- Reply: 1 released; 0 the caller held nothing (lease ran out, key deleted)
local token, mode = ARGV[2], ARGV[3]
local held = 1
if mode == 'w' then
  if rcall('HGET', K_LOCK, 'owner') == token then
    rcall('DEL', K_LOCK)
    rcall('HDEL', K_META, 'wh', 'wi')
  else
    held = 0
    -- The lapsed holder itself reports the lapse (ENOLCK): the next one
    -- need not hear of it too, unless someone took the lock in between.
    if rcall('HGET', K_META, 'wh') == token then rcall('HDEL', K_META, 'wh', 'wi') end
  end
else
  local s = rcall('ZSCORE', K_RD, token)
  if not s or tonumber(s) <= now_ms() then held = 0 end
  if s then
    rcall('ZREM', K_RD, token)
    rcall('HDEL', K_RI, token)
  end
end
grant_waiters(nil, mode == 'w' and held == 1)
return held
