-- SPDX-License-Identifier: BSD-3-Clause
-- acquire_all.lua: take several locks in write mode at once, all or none
-- (dist_mutex_lockall, shim/prim/lockall.c): every lock must be free (no
-- writer, no live reader) with nobody queued for it, or be the caller's
-- already (a hold of this very request, resent after a reconnect, or one
-- whose release is still on its way: claimed, as acquire.lua's "mine").
-- It never queues: a lock-all that finds one busy falls back to taking the
-- locks one by one, in the same order, with acquire.lua.
-- The locks' keys must all sit in one cluster slot (the caller checks):
-- KEYS declares the first lock's six, and the script reaches the others by
-- their main keys in ARGV[6], deriving each one's five others by suffix
-- (common.lua), one key per command.  Under redis-cluster://'s ASK form
-- (only KEYS[1] declared: the slot migrates) the other locks' keys may
-- still be on the source node and read here as free: the script refuses.
-- KEYS: the six keys of common.lua, of the first lock.
-- ARGV: 1 channel prefix, 2 token, 3 holder info ("host\tpid\ttid"),
--       4 registration id (one for every lock: withdraw.lua undoes each by
--       it), 5 '1' (redlock://) clear the caller's own writer mark on each
--       lock taken, '' elsewhere,
--       6 the locks, in order: for each, "LEASE:LEN:KEY", its lease ms and
--       its main key <prefix>{TAG} of LEN bytes (the first lock's is
--       KEYS[1]),
--       7 (redlock:// only; optional) for each lock in order, "F1,F2,...",
--       the fence of the caller's last hold of it whose EOWNERDEAD it was
--       told, released since ('0' none): as acquire.lua's ARGV[12]
--       (common.lua, OLDER)
-- Reply: {1, n, then for each lock: fence, ownerdead 0|1, claimed 0|1, was}
--        every lock taken (claimed: it was the caller's already; was: its
--        fence when found, as acquire.lua's);
--        {0, i, pttl} lock i (1-based) is busy or queued for: nothing taken,
--        pttl ms until its holders' leases run out;
--        {2} not here: only the first key declared (cluster ASK);
--        {3, i, mark} lock i is unrecoverable (common.lua,
--        put_unrecoverable): nothing taken, the call refused
local token, info, rid = ARGV[2], ARGV[3], ARGV[4]
local marks = ARGV[5] == '1'
if not KEYS[6] then return {2} end

-- The locks: {lease, main key}.
local locks, blob, pos = {}, ARGV[6], 1
while pos <= #blob do
  local lease, len, at = string.match(blob, '^(%d+):(%d+):()', pos)
  if not lease then return redis.error_reply('acquire_all: malformed lock list') end
  len = tonumber(len)
  locks[#locks + 1] = {lease, string.sub(blob, at, at + len - 1)}
  pos = at + len
end

-- Each lock's OLDER (ARGV[7]).
local olders = {}
for f in string.gmatch(ARGV[7] or '', '%d+') do
  local n = tonumber(f)
  olders[#olders + 1] = n ~= 0 and n or false
end

-- The helpers of common.lua act on the lock named by these.
local function use(key)
  K_LOCK, K_RD, K_RI, K_Q = key, key .. ':r', key .. ':ri', key .. ':q'
  K_W, K_META = key .. ':w', key .. ':m'
end

-- First look at every lock; change nothing but dropping what has expired
-- (registrations, readers), as any script may.
local now = now_ms()
local found = {}
for i, l in ipairs(locks) do
  use(l[2])
  local w = rcall('HMGET', K_LOCK, 'owner', 'fence', 'od', 'rid', 'nr')
  if w[5] then return {3, i, tonumber(w[5])} end
  local mine = held_by(token, 'w', 0, w)
  if not mine then
    -- A stale request (a later one of the caller's is registered) takes
    -- nothing; a lock held, read, or queued for is busy.
    local raw = rcall('HGET', K_W, token)
    local reg = raw and cmsgpack.unpack(raw)
    if (reg and tonumber(reg[4]) > tonumber(rid)) or w[1] or live_readers(now) > 0
       or head_waiter() then
      return {0, i, holders_pttl(now)}
    end
  end
  found[i] = {mine, w[4]}
end

-- Then take them all.
local out = {1, #locks}
for i, l in ipairs(locks) do
  use(l[2])
  OLDER = olders[i] or nil
  local mine, fence, dead, claimed, was = found[i][1], nil, nil, 0, 0
  if mine then
    was = mine[1]
    -- A hold of the caller's from before its last told one (that one,
    -- its release owed here): its death was told.
    if OLDER and mine[2] == 1 and mine[1] <= OLDER then
      death_told(token, 'w')
      mine[2] = 0
    end
    mine = claim_hold(token, 'w', rid, mine, found[i][2], l[1], info)
    dequeue_upto(token, rid)
    fence, dead, claimed = mine[1], mine[2], 1
  else
    fence, dead = take_write(token, l[1], info, now, l[1], rid)
  end
  if marks then ww_clear(token) end
  out[#out + 1] = fence
  out[#out + 1] = dead
  out[#out + 1] = claimed
  out[#out + 1] = was
end
return out
