--[[
  claimAttempt: a worker asks to execute an attempt. It may only when the attempt is offered and
  unclaimed, inside its claim window, by the incarnation that still owns the tree, for an effect not
  yet settled definitely — and a `never` effect is claimed at most once per tree, ever. A refused
  claim writes nothing but the revocation of an attempt whose window has passed. A granted claim
  counts the execution here, before anything runs.

  Input:
    KEYS[1]  attempt record  <prefix>:{<root>}:attempt:<attemptId>
    KEYS[2]  tree head       <prefix>:{<root>}:head
    KEYS[3]  never claims    <prefix>:{<root>}:claims
    KEYS[4]  settled effects <prefix>:{<root>}:settled
    KEYS[5]  executions      <prefix>:{<root>}:executions
    ARGV[1]  attempt id
    ARGV[2]  claim token (unique per delivery)
    ARGV[3]  worker id
    ARGV[4]  lease ms (the claimant renews it while it runs)

  Output:
    { 1, canceled (0|1) } claimed; { -1 } no such attempt; { -2 } the owner changed; { -3 } not
    offered any more (claimed, settled or revoked); { -5 } claim window passed (now revoked);
    { -6 } the effect is settled; { -7 } a `never` effect was claimed before
]]
local state = redis.call('HGET', KEYS[1], 'state')
if not state then return { -1 } end
if state ~= 'offered' then return { -3 } end
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
if now >= tonumber(redis.call('HGET', KEYS[1], 'claimBy')) then
  redis.call('HSET', KEYS[1], 'state', 'revoked')
  return { -5 }
end
if redis.call('HGET', KEYS[2], 'incarnation') ~= redis.call('HGET', KEYS[1], 'incarnation') then return { -2 } end
local effect = redis.call('HGET', KEYS[1], 'effect')
if redis.call('HEXISTS', KEYS[4], effect) == 1 then return { -6 } end
if redis.call('HGET', KEYS[1], 'policy') == 'never' then
  if redis.call('HSETNX', KEYS[3], effect, ARGV[1]) == 0 then return { -7 } end
end
redis.call('HSET', KEYS[1], 'state', 'claimed', 'token', ARGV[2], 'worker', ARGV[3], 'leaseUntil', tostring(now + tonumber(ARGV[4])))
redis.call('HINCRBY', KEYS[5], effect, 1)
return { 1, tonumber(redis.call('HGET', KEYS[1], 'canceled')) }
