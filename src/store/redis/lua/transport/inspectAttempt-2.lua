--[[
  inspectAttempt: the owner's view of one attempt, deciding atomically what the owner's clock has
  decided. `revoke` (the claim window passed): an attempt not claimed yet gets a revoked record, so
  no claim can succeed after and it provably never ran. `expire` (the dispatch deadline passed): a
  claimed attempt is expired, so nothing can settle into it. Without a mode, a claim whose lease
  lapsed (Redis clock) is abandoned. A settlement in the inbox wins over all of them.

  Input:
    KEYS[1]  attempt record  <prefix>:{<root>}:attempt:<attemptId>
    KEYS[2]  effect inbox    <prefix>:{<root>}:inbox:<effectId>
    ARGV[1]  attempt id
    ARGV[2]  mode: `look` | `revoke` | `expire`
    ARGV[3]  retention ms of a record created by `revoke`

  Output:
    { 'settled', json } | { 'unclaimed' } | { 'expired' } | { 'lapsed' } | { 'waiting' }
    | { 'claimed', ms until the lease lapses } | { 'settling' }
]]
local settled = redis.call('HGET', KEYS[2], ARGV[1])
if settled then return { 'settled', settled } end
local fields = redis.call('HMGET', KEYS[1], 'state', 'leaseUntil')
local state, mode = fields[1], ARGV[2]
if not state then
  if mode ~= 'revoke' then return { 'waiting' } end
  redis.call('HSET', KEYS[1], 'state', 'revoked')
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
  return { 'unclaimed' }
end
if state == 'revoked' then return { 'unclaimed' } end
if state ~= 'claimed' then return { state } end
if mode == 'expire' then
  redis.call('HSET', KEYS[1], 'state', 'expired')
  return { 'expired' }
end
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local leaseUntil = tonumber(fields[2])
if now >= leaseUntil then
  redis.call('HSET', KEYS[1], 'state', 'lapsed')
  return { 'lapsed' }
end
return { 'claimed', leaseUntil - now }
