--[[
  idempotencyRelease: compare-and-delete of an idempotency pointer (a failed start gives its
  reservation up, only while it is still its own).

  Input:
    KEYS[1]     idempotency pointer   <prefix>:idempotency:<sha256(key)>
    ARGV[1]     the expected value

  Output:
    1  deleted
    0  the pointer held another value; nothing written
]]
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
return 1
