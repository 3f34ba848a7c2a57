-- Checks that a session is still at the version an occurrence that changed nothing read
-- from the replica's cache (redisstore.Store.Commit), and refreshes its TTL when it is:
-- a session read is a session in use.
-- KEYS[1]  the session's key
-- ARGV[1]  the version read ("" when the key did not exist)
-- ARGV[2]  the TTL in milliseconds (0: none)
-- Returns 1 when it is, else the session's fields (HGETALL) for the next attempt.
local v = redis.call('HGET', KEYS[1], 'v') or ''
if v == ARGV[1] then
  local ttl = tonumber(ARGV[2])
  if ttl > 0 and v ~= '' then
    redis.call('PEXPIRE', KEYS[1], ttl)
  end
  return 1
end
return redis.call('HGETALL', KEYS[1])
