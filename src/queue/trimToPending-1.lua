--[[
  Trims a stream to the oldest entry any of its consumer groups may still need, atomically.
  Redis 7.0 has no "trim acknowledged entries" option, and MAXLEN drops entries whether or not
  they are pending, so the bound is computed here: for each group, its smallest pending id, or,
  when nothing is pending, its last-delivered id (everything at or below it has been acked and
  everything above it is undelivered). XTRIM MINID keeps entries >= that id.

  KEYS[1] the stream
  Output: number of entries removed; -1 when the stream is missing or has no consumer group
          (nobody has read anything, so nothing may go).
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

if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
local groups = redis.call('XINFO', 'GROUPS', KEYS[1])
if #groups == 0 then return -1 end

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

return redis.call('XTRIM', KEYS[1], 'MINID', minid)
