--[[
  streamSlotRenew: extends the leases of slots this node still holds (a slot already expired and
  dropped is not brought back: its stream counted as gone, and it keeps running uncounted until it ends).

  Input:
    KEYS[1]     the caller's slots    <prefix>:streams:key:<keyId>   (zset)
    ARGV[1]     lease (ms, decimal > 0)
    ARGV[2..]   slot members

  Output:
    the number of slots renewed, or { -4, why } for malformed arguments
]]
local key = KEYS[1]
if not string.match(ARGV[1] or '', '^[1-9][0-9]*$') then return { -4, 'the lease must be a positive decimal' } end
local time = redis.call('TIME')
local expiry = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000) + tonumber(ARGV[1])
local renewed = 0
for index = 2, #ARGV do
  renewed = renewed + redis.call('ZADD', key, 'XX', 'CH', expiry, ARGV[index])
end
if renewed > 0 then redis.call('PEXPIRE', key, tonumber(ARGV[1])) end
return renewed
