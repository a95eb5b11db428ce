--[[
  hostGateReserve: counts a new host-owned gate against the tenant's and the cluster's caps and
  indexes it, in one step, or says why not. Gates past their expiry, and closed ones (removed from the
  live sets by the close), are not counted; index entries past their retention are dropped.

  Input:
    KEYS[1]     cluster live gates    <prefix>:{gates}:live               (zset id → expiry ms)
    KEYS[2]     tenant live gates     <prefix>:{gates}:live:<tenant>      (zset id → expiry ms)
    KEYS[3]     tenant index          <prefix>:{gates}:index:<tenant>     (zset id → retention end ms)
    KEYS[4]     tenant requests       <prefix>:{gates}:requests:<tenant>  (hash id → `<digest> <created> <expiry>`)
    ARGV[1]     gate id
    ARGV[2]     the create request's digest
    ARGV[3]     timeout (ms, decimal > 0)
    ARGV[4]     retention after expiry (ms, decimal > 0)
    ARGV[5]     tenant cap (decimal > 0)
    ARGV[6]     cluster cap (decimal > 0)

  Output (server clock, ms):
    { 1, createdAt, expiresAt }                   reserved
    { 2, digest, createdAt, expiresAt }           the id was reserved before (a retry of the same request id)
    { 0, 'tenant' | 'cluster', oldestExpiry, now } a cap is reached
    { -4, why }                                   malformed arguments
]]
--- @include "serverTime"

local id = ARGV[1]
if id == nil or id == '' then return { -4, 'a gate id is required' } end
for index = 3, 6 do
  if not string.match(ARGV[index] or '', '^[1-9][0-9]*$') then return { -4, 'ARGV[' .. index .. '] must be a positive decimal' } end
end
local now = serverTimeMs()
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
local gone = redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', now, 'LIMIT', 0, 1000)
if #gone > 0 then
  redis.call('ZREM', KEYS[3], unpack(gone))
  redis.call('HDEL', KEYS[4], unpack(gone))
end

local known = redis.call('HGET', KEYS[4], id)
if known then
  local digest, created, expiry = string.match(known, '^(%S+) (%d+) (%d+)$')
  return { 2, digest, tonumber(created), tonumber(expiry) }
end

local function oldest(key)
  local first = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
  return tonumber(first[2] or now)
end
if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[5]) then return { 0, 'tenant', oldest(KEYS[2]), now } end
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[6]) then return { 0, 'cluster', oldest(KEYS[1]), now } end

local expiry = now + tonumber(ARGV[3])
redis.call('ZADD', KEYS[1], expiry, id)
redis.call('ZADD', KEYS[2], expiry, id)
redis.call('ZADD', KEYS[3], expiry + tonumber(ARGV[4]), id)
redis.call('HSET', KEYS[4], id, ARGV[2] .. ' ' .. now .. ' ' .. expiry)
return { 1, now, expiry }
