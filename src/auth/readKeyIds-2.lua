--[[
  One read of the issued-key-id index (key-id-index.ts) in one round trip: the node's time, the
  ids above what the caller already holds, and when the last scan of MySQL started. Both keys
  share a hash tag ({lss:auth}), so they sit on one node of a Redis Cluster and TIME is that
  node's clock, the one the scans stamp with.

  KEYS[1] the sorted set of issued ids, scored by the key's row id
  KEYS[2] the Redis time (ms) at which the last completed scan started
  ARGV[1] the highest row id the caller holds (exclusive lower bound of the read)
  Output: { now_ms, scanned_ms, id1, score1, id2, score2, ... }
]]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local scanned = tonumber(redis.call('GET', KEYS[2]) or '0') or 0
local out = { now, scanned }
local fresh = redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. ARGV[1], '+inf', 'WITHSCORES')
for i = 1, #fresh do out[#out + 1] = fresh[i] end
return out
