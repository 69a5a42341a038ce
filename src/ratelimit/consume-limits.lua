--[[
  consumeLimits: GCRA over several policies, all-or-nothing, on the server's clock; and, when the
  request carries an Idempotency-Key, the claim of its in-flight lease in the same round trip.

  KEYS[1..n]   the TAT (theoretical arrival time) key of each policy, in the caller's priority order
  KEYS[n+1]    (optional) the idempotency lease key  (value: fingerprint .. ':' .. token)
  KEYS[n+2]    (optional) the idempotency done marker (value: fingerprint)
  ARGV[1]      the policies, "n,interval1,tolerance1,...,intervalN,toleranceN": n, then per policy
               its emission interval in microseconds (window / limit) and burst tolerance in
               microseconds (emission interval * (burst - 1)); one argument rather than 2n+1,
               each of which the web process encodes per request
  ARGV[2]      (with the lease keys) request fingerprint
  ARGV[3]      (with the lease keys) lease token
  ARGV[4]      (with the lease keys) lease ms

  Output: one string, "refusedIndex,waitUs,r1,t1,...,rn,tn,leaseState,leaseSameFingerprint\nreply"
  (an array of as many values cost the web process a decoder step and a value each, measurably)
    refusedIndex  0 when every policy conformed and all were consumed; otherwise the 1-based index
                  of the first policy that refused, and then nothing was consumed or claimed
    waitUs        when refused: microseconds until that policy conforms again
    ri            remaining requests of policy i after this decision
    ti            microseconds until policy i is full again (or until it conforms, when refused)
    leaseState    'none' (no lease asked, or a limit refused), 'claimed', 'done', 'in_progress'
    leaseSameFingerprint  1 when an existing lease or marker carries this request's fingerprint
    reply         when leaseState is 'done' with this fingerprint and the reply lives in Redis
                  (finish-lease.lua ARGV[4]): "<status>\n<body>", so a replay costs this round trip
                  only; otherwise ''

  Redis TIME is the only clock, so every API process agrees and Retry-After is exact. All keys of
  one call share the application's hash tag, so the script also runs on Redis Cluster.
]]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local spec = {}
for v in string.gmatch(ARGV[1], '[^,]+') do spec[#spec + 1] = tonumber(v) end
local n = spec[1]
local newTat = {}
local out = { 0, 0 }
local refused = 0
local wait = 0

for i = 1, n do
  local interval = spec[2 * i]
  local tolerance = spec[2 * i + 1]
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

local leaseState = 'none'
local leaseSame = 0
local reply = ''
if refused == 0 then
  for i = 1, n do
    -- %.0f: Lua's default number formatting keeps only 14 digits, too few for microseconds.
    redis.call('SET', KEYS[i], string.format('%.0f', newTat[i]), 'PX', math.ceil((newTat[i] - now) / 1000) + 1)
  end
  if #KEYS >= n + 2 then
    local fp = ARGV[2]
    local done = redis.call('GET', KEYS[n + 2])
    local lease = redis.call('GET', KEYS[n + 1])
    if done then
      leaseState = 'done'
      -- The marker is the 64-character fingerprint, then optionally "\n" and the stored reply.
      if string.sub(done, 1, 64) == fp then
        leaseSame = 1
        if #done > 65 then reply = string.sub(done, 66) end
      end
    elseif lease then
      leaseState = 'in_progress'
      if string.sub(lease, 1, string.find(lease, ':', 1, true) - 1) == fp then leaseSame = 1 end
    else
      redis.call('SET', KEYS[n + 1], fp .. ':' .. ARGV[3], 'PX', ARGV[4])
      leaseState = 'claimed'
      leaseSame = 1
    end
  end
else
  -- Nothing is consumed: report the policies as they stand, not as they would after this request.
  for i = 1, n do
    if newTat[i] then
      out[2 * i + 1] = out[2 * i + 1] + 1
      out[2 * i + 2] = out[2 * i + 2] - spec[2 * i]
      if out[2 * i + 2] < 0 then out[2 * i + 2] = 0 end
    end
  end
end
out[1] = refused
out[2] = wait
-- %.0f: whole numbers, all digits (tostring would switch to exponent notation past 14 digits).
for i = 1, 2 * n + 2 do out[i] = string.format('%.0f', out[i]) end
out[2 * n + 3] = leaseState
out[2 * n + 4] = leaseSame
return table.concat(out, ',') .. '\n' .. reply
