-- SPDX-License-Identifier: BSD-3-Clause
-- recover.lua: an unrecoverable lock (common.lua, put_unrecoverable) made
-- usable again: dist_mutex_destroy by a process that was told
-- ENOTRECOVERABLE with this very mark (a process told of an earlier mark
-- never clears a later one: the lock was recovered, and left unrecoverable
-- again, since).  The next holder is told nothing of the past (no
-- EOWNERDEAD): the lock is as new, as after pthread_mutex_init.
-- KEYS: the six keys of common.lua.
-- ARGV: 1 channel prefix, 2 token, 3 the mark the caller was told
-- Reply: 1 recovered; 0 not unrecoverable with that mark (never, or
--        recovered already, or marked anew)
if rcall('HGET', K_LOCK, 'nr') ~= ARGV[3] then return 0 end
rcall('DEL', K_LOCK)
grant_waiters(nil, true)
return 1
