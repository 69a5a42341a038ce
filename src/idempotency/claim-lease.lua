--[[
  claimLease: the in-progress side of idempotency. MySQL holds the committed replies; Redis
  only says "someone is executing this key right now" (a lease) and "this key has a committed
  reply" (a marker), so that concurrent identical requests execute once and a replay needs one
  indexed MySQL read.

  KEYS[1]  lease key   (value: fingerprint hex .. ':' .. token)
  KEYS[2]  done marker (value: fingerprint hex)
  ARGV[1]  fingerprint hex
  ARGV[2]  token (random, identifies the holder)
  ARGV[3]  lease ms

  Output: { state, sameFingerprint }
    state  'claimed' | 'done' | 'in_progress'
    sameFingerprint  1 when the existing lease/marker carries this request's fingerprint
]]
local done = redis.call('GET', KEYS[2])
if done then
  return { 'done', done == ARGV[1] and 1 or 0 }
end
local lease = redis.call('GET', KEYS[1])
if lease then
  local fp = string.sub(lease, 1, string.find(lease, ':', 1, true) - 1)
  return { 'in_progress', fp == ARGV[1] and 1 or 0 }
end
redis.call('SET', KEYS[1], ARGV[1] .. ':' .. ARGV[2], 'PX', ARGV[3])
return { 'claimed', 1 }
