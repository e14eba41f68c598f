-- renew.lua: extend the caller's hold by a lease (the watchdog's call).
-- KEYS: the six keys of common.lua.
-- ARGV: 1 channel prefix, 2 token, 3 mode 'w'|'r', 4 lease ms
-- Reply: 1 renewed; 0 the hold is gone
local token, mode, lease = ARGV[2], ARGV[3], tonumber(ARGV[4])
if mode == 'w' then
  if rcall('HGET', K_LOCK, 'owner') ~= token then return 0 end
  rcall('PEXPIRE', K_LOCK, lease)
  return 1
end
local now = now_ms()
local s = rcall('ZSCORE', K_RD, token)
if not s or tonumber(s) <= now then return 0 end
rcall('ZADD', K_RD, int(now + lease), token)
extend(K_RD, lease)
extend(K_RI, lease)
return 1
