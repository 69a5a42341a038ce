--[[
  Trims one job's task stream of a lane to the oldest entry its group may still need (as
  trimToPending-1.lua does), and when nothing is left in it (every entry delivered and
  acknowledged) deletes the stream and takes the job out of the lane's set of job streams, in one
  step: an enqueue cannot slip between the check and the delete. A job in the set whose stream no
  longer exists (Redis lost it; the reconciler re-enqueues from MySQL) leaves the set too.

  KEYS[1] the job's stream on the lane   ({lss:lane:<lane>}:tasks:<job>)
  KEYS[2] the lane's set of job streams  ({lss:lane:<lane>}:jobs)
  ARGV[1] the job id (the set's member)
  Output: 1 when the stream was dropped (or was already gone), 0 when it still holds entries.
]]
local function parse(id)
  local ms, seq = string.match(id, '^(%d+)-(%d+)$')
  return tonumber(ms), tonumber(seq)
end

local function less(a, b)
  local am, as = parse(a)
  local bm, bs = parse(b)
  if am ~= bm then return am < bm end
  return as < bs
end

if redis.call('EXISTS', KEYS[1]) == 0 then
  redis.call('ZREM', KEYS[2], ARGV[1])
  return 1
end
local groups = redis.call('XINFO', 'GROUPS', KEYS[1])
if #groups == 0 then return 0 end

local minid = nil
for _, g in ipairs(groups) do
  local f = {}
  for i = 1, #g, 2 do f[g[i]] = g[i + 1] end
  local candidate = f['last-delivered-id']
  if tonumber(f['pending']) > 0 then
    candidate = redis.call('XPENDING', KEYS[1], f['name'])[2]
  end
  if minid == nil or less(candidate, minid) then minid = candidate end
end
redis.call('XTRIM', KEYS[1], 'MINID', minid)
-- The last delivered entry itself is kept by MINID: it is acknowledged when nothing is pending.
local info = redis.call('XINFO', 'GROUPS', KEYS[1])
local pending = 0
local delivered = nil
for _, g in ipairs(info) do
  local f = {}
  for i = 1, #g, 2 do f[g[i]] = g[i + 1] end
  pending = pending + tonumber(f['pending'])
  delivered = f['last-delivered-id']
end
if pending > 0 then return 0 end
local last = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)
if #last > 0 and (delivered == nil or less(delivered, last[1][1])) then return 0 end
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], ARGV[1])
return 1
