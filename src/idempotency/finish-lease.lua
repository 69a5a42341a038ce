--[[
  finishLease: end a lease held by this token; optionally leave the committed-reply marker.

  KEYS[1]  lease key
  KEYS[2]  done marker
  ARGV[1]  fingerprint hex (64 characters)
  ARGV[2]  token
  ARGV[3]  marker ttl ms, or 0 to release without a marker (the request failed before commit)
  ARGV[4]  (optional) the committed reply itself, "<status>\n<body>", for replies that live in
           Redis (zero-credit inline lookups); absent when the reply was committed to MySQL
  ARGV[5]  (with ARGV[4]) the most bytes of reply a marker may hold: a larger one is not kept,
           the lease is released instead (no marker), so an identical retry runs again, which a
           zero-credit lookup may; the service never holds a reply larger than an inline reply
           may be (INLINE_REPLY_MAX_BYTES) for IDEMPOTENCY_TTL_HOURS

  Marker value: the fingerprint, followed by "\n" and the reply when ARGV[4] was given. The
  admission script (consume-limits.lua) compares the first 64 characters and returns the rest.

  Output: 1 when this token held the lease, 0 when it had expired or was taken over.
]]
local held = redis.call('GET', KEYS[1]) == (ARGV[1] .. ':' .. ARGV[2])
if held then redis.call('DEL', KEYS[1]) end
local ttl = tonumber(ARGV[3])
if ARGV[4] and #ARGV[4] > tonumber(ARGV[5]) then ttl = 0 end
if ttl > 0 then
  local value = ARGV[1]
  if ARGV[4] then value = value .. '\n' .. ARGV[4] end
  redis.call('SET', KEYS[2], value, 'PX', ttl)
end
return held and 1 or 0
