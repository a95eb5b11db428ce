--[[
  idempotencyReplace: compare-and-set of an idempotency pointer.

  Input:
    KEYS[1]     idempotency pointer   <prefix>:idempotency:<sha256(key)>
    ARGV[1]     the expected value
    ARGV[2]     the new value
    ARGV[3]     its TTL in ms

  Output:
    1  replaced
    0  the pointer did not hold the expected value; nothing written
]]
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
return 1
