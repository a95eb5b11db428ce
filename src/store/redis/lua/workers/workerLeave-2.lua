--[[
  workerLeave: a worker leaves the registry (graceful shutdown): its entry and its status go at once.

  Input:
    KEYS[1]  live workers  <prefix>:{workers}:live    (zset worker id → expiry ms)
    KEYS[2]  statuses      <prefix>:{workers}:status  (hash worker id → status JSON)
    ARGV[1]  worker id

  Output:
    1 when the worker had an entry, else 0
]]
redis.call('HDEL', KEYS[2], ARGV[1])
return redis.call('ZREM', KEYS[1], ARGV[1])
