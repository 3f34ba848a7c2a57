-- Commits one occurrence's changes to a session hash if no one changed it since it
-- was read (redisstore.Store.Commit).
-- KEYS[1]  the session's key
-- ARGV[1]  the version read ("" when the key did not exist)
-- ARGV[2]  the new version
-- ARGV[3]  the TTL in milliseconds (0: none)
-- ARGV[4]  "1" when the activity window changed, ARGV[5] the window
-- ARGV[6]  how long, in milliseconds, the session stays pending a correction of this
--          commit (0: it cannot need one, and any pending marker is cleared)
-- ARGV[7]  the writer, named in the pending marker
-- ARGV[8]  "1" when the commit corrects the one that left ARGV[1]: it applies only
--          while that commit's pending marker holds the session
-- ARGV[9…] counter field, value pairs; an empty value removes the field
-- Returns 1 when committed (or already committed by this same call, sent again after
-- its answer was lost); 0 when a correction came after its marker expired; on a
-- conflict, the session's fields (HGETALL) as another writer left them, so the next
-- attempt needs no read of its own.
local v = redis.call('HGET', KEYS[1], 'v') or ''
if v ~= ARGV[1] then
  if v == ARGV[2] then
    return 1
  end
  return redis.call('HGETALL', KEYS[1])
end
local now
local function millis()
  if not now then
    local t = redis.call('TIME')
    now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  end
  return now
end
if ARGV[8] == '1' then
  local version, expiry = string.match(redis.call('HGET', KEYS[1], 'p') or '', '^(%S+) (%d+)')
  if version ~= ARGV[1] or tonumber(expiry) <= millis() then
    return 0
  end
end
local fields = {'v', ARGV[2]}
if ARGV[4] == '1' then
  fields[#fields + 1] = 'w'
  fields[#fields + 1] = ARGV[5]
end
local gone = {}
local pending = tonumber(ARGV[6])
if pending > 0 then
  -- The marker names the version it holds pending, when it expires by Redis's clock,
  -- which every replica reads the same, and its writer.
  fields[#fields + 1] = 'p'
  fields[#fields + 1] = ARGV[2] .. ' ' .. string.format('%d', millis() + pending) .. ' ' .. ARGV[7]
else
  gone[#gone + 1] = 'p'
end
for i = 9, #ARGV - 1, 2 do
  if ARGV[i + 1] == '' then
    gone[#gone + 1] = ARGV[i]
  else
    fields[#fields + 1] = ARGV[i]
    fields[#fields + 1] = ARGV[i + 1]
  end
end
redis.call('HSET', KEYS[1], unpack(fields))
if #gone > 0 then
  redis.call('HDEL', KEYS[1], unpack(gone))
end
local ttl = tonumber(ARGV[3])
if ttl > 0 then
  redis.call('PEXPIRE', KEYS[1], ttl)
end
return 1
