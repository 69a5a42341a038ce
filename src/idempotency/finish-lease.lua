--[[
  finishLease: end a lease held by this token; optionally leave the committed-reply marker.

  KEYS[1]  lease key
  KEYS[2]  done marker
  ARGV[1]  fingerprint hex (64 characters)
  ARGV[2]  token
  ARGV[3]  marker ttl ms, or 0 to release without a marker (the request failed before commit)
  ARGV[4]  (optional) the committed reply itself, "<status>\n<body>", for replies that live in
           Redis (zero-credit inline lookups); absent when the reply was committed to MySQL

  Marker value: the fingerprint, followed by "\n" and the reply when ARGV[4] was given. The
  admission script (consume-limits.lua) compares the first 64 characters and returns the rest.

  Output: 1 when this token held the lease, 0 when it had expired or was taken over.
]]
local held = redis.call('GET', KEYS[1]) == (ARGV[1] .. ':' .. ARGV[2])
if held then redis.call('DEL', KEYS[1]) end
local ttl = tonumber(ARGV[3])
if ttl > 0 then
  local value = ARGV[1]
  if ARGV[4] then value = value .. '\n' .. ARGV[4] end
  redis.call('SET', KEYS[2], value, 'PX', ttl)
end
return held and 1 or 0
