--[[
  consumeLimits: GCRA over several policies, all-or-nothing, on the server's clock.

  KEYS[i]      the TAT (theoretical arrival time) key of policy i, in the caller's priority order
  ARGV[2i-1]   emission interval of policy i in microseconds (window / limit)
  ARGV[2i]     burst tolerance of policy i in microseconds (emission interval * (burst - 1))

  Output: { refusedIndex, waitUs, r1, t1, r2, t2, ... }
    refusedIndex  0 when every policy conformed and all were consumed; otherwise the 1-based index
                  of the first policy that refused, and then nothing was consumed
    waitUs        when refused: microseconds until that policy conforms again
    ri            remaining requests of policy i after this decision
    ti            microseconds until policy i is full again (or until it conforms, when refused)

  Redis TIME is the only clock, so every API process agrees and Retry-After is exact.
]]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local n = #KEYS
local newTat = {}
local out = { 0, 0 }
local refused = 0
local wait = 0

for i = 1, n do
  local interval = tonumber(ARGV[2 * i - 1])
  local tolerance = tonumber(ARGV[2 * i])
  local tat = tonumber(redis.call('GET', KEYS[i]) or now)
  if tat < now then tat = now end
  local nt = tat + interval
  local allowAt = nt - interval - tolerance
  if now < allowAt then
    if refused == 0 then
      refused = i
      wait = allowAt - now
    end
    newTat[i] = false
    out[2 * i + 1] = 0
    out[2 * i + 2] = allowAt - now
  else
    newTat[i] = nt
    out[2 * i + 1] = math.floor((now + tolerance - nt) / interval) + 1
    if out[2 * i + 1] < 0 then out[2 * i + 1] = 0 end
    out[2 * i + 2] = nt - now
  end
end

if refused == 0 then
  for i = 1, n do
    -- %.0f: Lua's default number formatting keeps only 14 digits, too few for microseconds.
    redis.call('SET', KEYS[i], string.format('%.0f', newTat[i]), 'PX', math.ceil((newTat[i] - now) / 1000) + 1)
  end
else
  -- Nothing is consumed: report the policies as they stand, not as they would after this request.
  for i = 1, n do
    if newTat[i] then
      out[2 * i + 1] = out[2 * i + 1] + 1
      out[2 * i + 2] = out[2 * i + 2] - tonumber(ARGV[2 * i - 1])
      if out[2 * i + 2] < 0 then out[2 * i + 2] = 0 end
    end
  end
end
out[1] = refused
out[2] = wait
return out
