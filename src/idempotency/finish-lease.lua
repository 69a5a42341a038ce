--[[
  finishLease: end a lease held by this token; optionally leave the committed-reply marker.

  KEYS[1]  lease key
  KEYS[2]  done marker
  ARGV[1]  fingerprint hex
  ARGV[2]  token
  ARGV[3]  marker ttl ms, or 0 to release without a marker (the request failed before commit)

  Output: 1 when this token held the lease, 0 when it had expired or was taken over.
]]
local held = redis.call('GET', KEYS[1]) == (ARGV[1] .. ':' .. ARGV[2])
if held then redis.call('DEL', KEYS[1]) end
local ttl = tonumber(ARGV[3])
if ttl > 0 then redis.call('SET', KEYS[2], ARGV[1], 'PX', ttl) end
return held and 1 or 0
