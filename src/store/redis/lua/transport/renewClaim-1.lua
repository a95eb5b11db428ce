--[[
  renewClaim: the claimant's heartbeat. Extends the lease while the claim is still held.

  Input:
    KEYS[1]  attempt record  <prefix>:{<root>}:attempt:<attemptId>
    ARGV[1]  claim token
    ARGV[2]  lease ms

  Output:
    { held (1|0), canceled (1|0) }: held 0 means the owner gave up on the attempt (lapsed/expired)
]]
local fields = redis.call('HMGET', KEYS[1], 'state', 'token', 'canceled')
if fields[1] ~= 'claimed' or fields[2] ~= ARGV[1] then return { 0, tonumber(fields[3] or '0') } end
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
redis.call('HSET', KEYS[1], 'leaseUntil', tostring(now + tonumber(ARGV[2])))
return { 1, tonumber(fields[3]) }
