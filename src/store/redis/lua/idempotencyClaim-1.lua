--[[
  idempotencyClaim: reserves a free Idempotency-Key pointer for one start, or reports who holds it.

  Input:
    KEYS[1]     idempotency pointer   <prefix>:idempotency:<sha256(key)>
    ARGV[1]     the reservation value (`reserved:<token>`)
    ARGV[2]     its TTL in ms

  Output (array, server clock in ms last):
    { 1, ARGV[1], nowMs }        reserved for this start
    { 0, current value, nowMs }  held already ('' when it vanished between the two commands)
]]
--- @include "serverTime"

local taken = redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2])
local now = serverTimeMs()
if taken then return { 1, ARGV[1], now } end
return { 0, redis.call('GET', KEYS[1]) or '', now }
