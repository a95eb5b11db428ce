--[[
  inspectAttempt: the owner's view of one attempt, deciding atomically what time has decided: an
  attempt unclaimed past its window is revoked (no claim can succeed after; it provably never ran),
  a claim past the dispatch deadline expires, a claim whose lease lapsed is abandoned. A settlement
  in the inbox wins over all of them.

  Input:
    KEYS[1]  attempt record  <prefix>:{<root>}:attempt:<attemptId>
    KEYS[2]  inbox           <prefix>:{<root>}:inbox
    ARGV[1]  attempt id

  Output:
    { 'settled', json } | { 'unclaimed' } | { 'expired' } | { 'lapsed' } | { 'missing' }
    | { 'offered', ms until the window closes } | { 'claimed', ms until the lease or deadline }
]]
local settled = redis.call('HGET', KEYS[2], ARGV[1])
if settled then return { 'settled', settled } end
local fields = redis.call('HMGET', KEYS[1], 'state', 'claimBy', 'deadline', 'leaseUntil')
local state = fields[1]
if not state then return { 'missing' } end
if state == 'revoked' then return { 'unclaimed' } end
if state ~= 'offered' and state ~= 'claimed' then return { state } end
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
if state == 'offered' then
  local claimBy = tonumber(fields[2])
  if now >= claimBy then
    redis.call('HSET', KEYS[1], 'state', 'revoked')
    return { 'unclaimed' }
  end
  return { 'offered', claimBy - now }
end
local deadline = tonumber(fields[3])
local leaseUntil = tonumber(fields[4])
if now >= deadline then
  redis.call('HSET', KEYS[1], 'state', 'expired')
  return { 'expired' }
end
if now >= leaseUntil then
  redis.call('HSET', KEYS[1], 'state', 'lapsed')
  return { 'lapsed' }
end
return { 'claimed', math.min(deadline, leaseUntil) - now }
