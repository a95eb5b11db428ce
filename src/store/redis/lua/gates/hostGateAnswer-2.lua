--[[
  hostGateAnswer: the first answer to a host-owned gate wins. Refused when the gate is closed or past
  its expiry; an answer through the callback also spends the one-time token, in the same step. The
  answer is stored apart, expiring with the gate; who answered stays in the gate's hash. Publishes
  the gate id on the gates channel when it answers.

  Input:
    KEYS[1]     the gate        <prefix>:{hostgate:<hex>}:gate     (hash)
    KEYS[2]     its answer      <prefix>:{hostgate:<hex>}:answer   (string)
    ARGV[1]     the answer (JSON text)
    ARGV[2]     its digest
    ARGV[3]     provenance (`human` | `api`)
    ARGV[4]     actor ('' for none)
    ARGV[5]     request id ('' for none)
    ARGV[6]     '1' when answered through the callback token, else '0'
    ARGV[7]     the gates channel (pub/sub, not a key)
    ARGV[8]     the gate id (the message)

  Output:
    { outcome, HGETALL of the gate, answer or false } with outcome one of `answered`, `same` (this
    request id with this answer won before), `already`, `closed`, `expired`, `token_used`;
    { 'missing' } when there is no such gate
]]
--- @include "serverTime"

if redis.call('EXISTS', KEYS[1]) == 0 then return { 'missing' } end
local now = serverTimeMs()
local function reply(outcome)
  return { outcome, redis.call('HGETALL', KEYS[1]), redis.call('GET', KEYS[2]) }
end
local gate = redis.call('HMGET', KEYS[1], 'state', 'expiresAt', 'tokenUsed', 'answerRequestId', 'answerDigest')
local state, expiresAt = gate[1], tonumber(gate[2])
if ARGV[6] == '1' and gate[3] == '1' then return reply('token_used') end
if state == 'closed' then return reply('closed') end
if expiresAt <= now then return reply('expired') end
if state == 'answered' then
  if ARGV[6] == '0' and ARGV[5] ~= '' and gate[4] == ARGV[5] and gate[5] == ARGV[2] then return reply('same') end
  return reply('already')
end
redis.call('HSET', KEYS[1], 'state', 'answered', 'answeredAt', now, 'provenance', ARGV[3], 'answerActor', ARGV[4], 'answerRequestId', ARGV[5], 'answerDigest', ARGV[2])
if ARGV[6] == '1' then redis.call('HSET', KEYS[1], 'tokenUsed', '1') end
redis.call('SET', KEYS[2], ARGV[1], 'PXAT', expiresAt)
redis.call('PUBLISH', ARGV[7], ARGV[8])
return reply('answered')
