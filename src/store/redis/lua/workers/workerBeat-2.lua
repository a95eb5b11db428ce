--[[
  workerBeat: a `scope worker`'s registry heartbeat. The entry lives `ttl` ms on the Redis clock (one
  clock for every worker and API server); a few entries already past their expiry are removed with
  their status, so the status hash holds little more than the live workers. Both keys expire once
  every worker has been silent for its TTL.

  Input:
    KEYS[1]  live workers  <prefix>:{workers}:live    (zset worker id → expiry ms)
    KEYS[2]  statuses      <prefix>:{workers}:status  (hash worker id → status JSON)
    ARGV[1]  worker id
    ARGV[2]  ttl ms
    ARGV[3]  status JSON (the refs and process keys it serves)

  Output:
    the entry's expiry (ms, Redis clock)
]]
--- @include "serverTime"
local now = serverTimeMs()
local ttl = tonumber(ARGV[2])
-- Bounded work per beat: the rest of a crowd of dead entries goes on later beats (readers skip them).
local expired = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, 64)
for _, id in ipairs(expired) do
  redis.call('ZREM', KEYS[1], id)
  redis.call('HDEL', KEYS[2], id)
end
redis.call('ZADD', KEYS[1], now + ttl, ARGV[1])
redis.call('HSET', KEYS[2], ARGV[1], ARGV[3])
for _, key in ipairs(KEYS) do
  if redis.call('PTTL', key) < ttl then redis.call('PEXPIRE', key, ttl) end
end
return now + ttl
