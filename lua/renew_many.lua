-- SPDX-License-Identifier: BSD-3-Clause
-- renew_many.lua: renew.lua for many holds of the caller in one call: the
-- watchdog's renewals, a batch per call (shim/core/watchdog.c).  Each hold
-- is renewed, or found gone, exactly as renew.lua would (common.lua,
-- renew_hold), and the reply says so hold by hold, so that a hold gone
-- among thousands renewed is found lost.
-- The holds' keys must all sit in one cluster slot (the caller groups
-- them by slot): KEYS declares the first hold's six, and the script
-- reaches the others by their main keys in ARGV[4], deriving each one's
-- other keys by suffix (as common.lua does when only KEYS[1] is declared),
-- one key per command.  Under redis-cluster://'s ASK form (only KEYS[1]
-- declared: the slot migrates) the other holds' keys may still be on the
-- node the slot leaves, and would read here as gone: the script refuses.
-- KEYS: the six keys of common.lua, of the first hold.
-- ARGV: 1 channel prefix, 2 token, 3 'm' (redlock:// only: a live writer
--       mark of another process counts as one waiter, as renew.lua's
--       ARGV[6]) or '',
--       4 the holds, in order: for each, "MODE:LEASE:FENCE:LEN:KEY": its
--       mode 'w'|'r', its lease ms ('0': only checked), its fence ('' for
--       redlock: the caller's hold in that mode, as renew.lua's ARGV[5]),
--       and its main key <prefix>{TAG} of LEN bytes
-- Reply: {r1, r2, ...} for each hold in order, renew.lua's reply: 0 the
--        hold is gone, n >= 1 renewed (or there) with n - 1 waiters;
--        -1 not here (only the first key declared: cluster ASK): renew
--        each hold alone
if not KEYS[6] then return -1 end
local token, marks, blob = ARGV[2], ARGV[3] == 'm', ARGV[4]
local out, pos = {}, 1
while pos <= #blob do
  local mode, lease, fence, len, at = string.match(blob, '^([wr]):(%d+):(%d*):(%d+):()', pos)
  if not mode then return redis.error_reply('renew_many: malformed hold list') end
  local key = string.sub(blob, at, at + tonumber(len) - 1)
  pos = at + tonumber(len)
  K_LOCK, K_RD, K_RI, K_Q, K_META = key, key .. ':r', key .. ':ri', key .. ':q', key .. ':m'
  out[#out + 1] = renew_hold(token, mode, tonumber(lease), tonumber(fence), marks)
end
return out
