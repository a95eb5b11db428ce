--[[
  workersLive: the live workers and their statuses: entries whose expiry is still ahead on the Redis
  clock (a dead worker drops out once its last heartbeat's TTL has passed).

  Input:
    KEYS[1]  live workers  <prefix>:{workers}:live    (zset worker id → expiry ms)
    KEYS[2]  statuses      <prefix>:{workers}:status  (hash worker id → status JSON)

  Output:
    { id1, status1, id2, status2, … } (a status is '' when the hash lost it)
]]
--- @include "serverTime"
local now = serverTimeMs()
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. now, '+inf')
local out = {}
for _, id in ipairs(ids) do
  out[#out + 1] = id
  out[#out + 1] = redis.call('HGET', KEYS[2], id) or ''
end
return out
