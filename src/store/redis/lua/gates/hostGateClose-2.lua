--[[
  hostGateClose: closes a host-owned gate (idempotent) and deletes its answer: the hash keeps who
  answered, when, with which provenance, and the answer's digest. The record is kept for the
  retention from now (never longer than it already would be). Publishes the gate id on the gates
  channel when it closes.

  Input:
    KEYS[1]     the gate        <prefix>:{hostgate:<hex>}:gate     (hash)
    KEYS[2]     its answer      <prefix>:{hostgate:<hex>}:answer   (string)
    ARGV[1]     retention (ms, decimal > 0)
    ARGV[2]     the gates channel (pub/sub, not a key)
    ARGV[3]     the gate id (the message)

  Output:
    { 'closed', HGETALL of the gate }, or { 'missing' } when there is no such gate
]]
--- @include "serverTime"

if redis.call('EXISTS', KEYS[1]) == 0 then return { 'missing' } end
if redis.call('HGET', KEYS[1], 'state') ~= 'closed' then
  local now = serverTimeMs()
  redis.call('HSET', KEYS[1], 'state', 'closed', 'closedAt', now)
  redis.call('DEL', KEYS[2])
  local keepUntil = now + tonumber(ARGV[1])
  local ttl = redis.call('PTTL', KEYS[1])
  if ttl < 0 or now + ttl > keepUntil then redis.call('PEXPIREAT', KEYS[1], keepUntil) end
  redis.call('PUBLISH', ARGV[2], ARGV[3])
end
return { 'closed', redis.call('HGETALL', KEYS[1]) }
