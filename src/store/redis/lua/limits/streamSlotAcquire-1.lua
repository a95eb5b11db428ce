--[[
  streamSlotAcquire: takes one of a caller's stream slots, across every node on this Redis. Each slot
  is a member whose score is its lease expiry (server time, ms); expired members (a node that died
  with streams open) are dropped first, so a dead node's slots come back by themselves.

  Input:
    KEYS[1]     the caller's slots    <prefix>:streams:key:<keyId>   (zset)
    ARGV[1]     slot member (unique per stream)
    ARGV[2]     lease (ms, decimal > 0)
    ARGV[3]     cap (decimal > 0)

  Output:
    { 1, held } when the slot was taken, { 0, held } when the caller already holds `cap`
    (held: slots held after the call), or { -4, why } for malformed arguments
]]
local key = KEYS[1]
local member = ARGV[1]
if member == nil or member == '' then return { -4, 'a slot member is required' } end
if not string.match(ARGV[2] or '', '^[1-9][0-9]*$') then return { -4, 'the lease must be a positive decimal' } end
if not string.match(ARGV[3] or '', '^[1-9][0-9]*$') then return { -4, 'the cap must be a positive decimal' } end
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', key, '-inf', now)
local held = redis.call('ZCARD', key)
if redis.call('ZSCORE', key, member) == false and held >= tonumber(ARGV[3]) then return { 0, held } end
redis.call('ZADD', key, now + tonumber(ARGV[2]), member)
-- The key outlives its newest lease by nothing: an idle caller leaves no key behind.
redis.call('PEXPIRE', key, tonumber(ARGV[2]))
return { 1, redis.call('ZCARD', key) }
