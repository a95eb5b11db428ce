--[[
  idempotencyCommitting: right before a start commit, the reservation names the root it is about to
  create: `committing:<token>:<server ms>:<root>`. Holds when the pointer is this token's reservation,
  its own earlier committing value (a retried commit), or free.

  Input:
    KEYS[1]     idempotency pointer   <prefix>:idempotency:<sha256(key)>
    ARGV[1]     the reservation token
    ARGV[2]     the root id
    ARGV[3]     TTL in ms

  Output:
    1  set
    0  another start holds the key; nothing written
]]
--- @include "serverTime"

local current = redis.call('GET', KEYS[1])
local committing = 'committing:' .. ARGV[1] .. ':'
if current and current ~= 'reserved:' .. ARGV[1] and string.sub(current, 1, #committing) ~= committing then return 0 end
redis.call('SET', KEYS[1], committing .. string.format('%d', serverTimeMs()) .. ':' .. ARGV[2], 'PX', ARGV[3])
return 1
