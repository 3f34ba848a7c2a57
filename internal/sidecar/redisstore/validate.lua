-- Checks that a session is still at the version an occurrence that changed nothing read
-- from the replica's cache (redisstore.Store.Commit).
-- KEYS[1]  the session's key
-- ARGV[1]  the version read ("" when the key did not exist)
-- Returns 1 when it is, else the session's fields (HGETALL) for the next attempt.
local v = redis.call('HGET', KEYS[1], 'v') or ''
if v == ARGV[1] then
  return 1
end
return redis.call('HGETALL', KEYS[1])
