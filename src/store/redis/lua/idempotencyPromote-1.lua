--[[
  idempotencyPromote: after the start commit landed (its record with it), the pointer names the root
  alone.

  Input:
    KEYS[1]     idempotency pointer   <prefix>:idempotency:<sha256(key)>
    ARGV[1]     the reservation token
    ARGV[2]     the root id
    ARGV[3]     TTL in ms

  Output:
    1  promoted
    0  the pointer is no longer this token's committing value; nothing written
]]
local current = redis.call('GET', KEYS[1])
local committing = 'committing:' .. ARGV[1] .. ':'
if not current or string.sub(current, 1, #committing) ~= committing then return 0 end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
return 1
