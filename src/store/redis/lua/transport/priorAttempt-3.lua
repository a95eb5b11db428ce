--[[
  priorAttempt: before a restored or replayed dispatch enqueues a new attempt, what earlier attempts
  of the effect left: a definite settlement in the inbox (adopt it instead of executing again), or a
  claim still running under a live lease (wait for it instead of running beside it).

  Input:
    KEYS[1]  settled effects <prefix>:{<root>}:settled
    KEYS[2]  current claims  <prefix>:{<root>}:current
    KEYS[3]  effect inbox    <prefix>:{<root>}:inbox:<effectId>
    ARGV[1]  effect id
    ARGV[2]  attempt record prefix (`<prefix>:{<root>}:`, same hash tag)

  Output:
    { 'adopt', attempt id, json } | { 'running', attempt id, ms until its lease lapses } | { 'none' }
]]
local settledBy = redis.call('HGET', KEYS[1], ARGV[1])
if settledBy then
  local entry = redis.call('HGET', KEYS[3], settledBy)
  if entry then return { 'adopt', settledBy, entry } end
end
local current = redis.call('HGET', KEYS[2], ARGV[1])
if current then
  local entry = redis.call('HGET', KEYS[3], current)
  local fields = redis.call('HMGET', ARGV[2] .. current, 'state', 'leaseUntil')
  if not entry and fields[1] == 'claimed' then
    local time = redis.call('TIME')
    local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
    local leaseUntil = tonumber(fields[2])
    if now < leaseUntil then return { 'running', current, leaseUntil - now } end
  end
end
return { 'none' }
