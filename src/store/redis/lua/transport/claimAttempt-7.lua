--[[
  claimAttempt: a worker asks to execute an attempt. It may only when the tree's head names the
  attempt's incarnation (the fence), the effect holds a dispatch permit (written with the head by
  the pending boundary that granted it, and not withdrawn by a definite settlement; the permit
  need not name the current incarnation, so an activation moves no permits), the attempt is unclaimed (no record yet: a revoked, claimed or settled
  attempt has one), the effect is not settled definitely, no earlier attempt of it is still running
  under a live lease — and a `never` effect is claimed at most once per tree, ever. A refused claim
  writes nothing. A granted claim creates the attempt record and counts the execution, before
  anything runs.

  Input:
    KEYS[1]  attempt record  <prefix>:{<root>}:attempt:<attemptId>
    KEYS[2]  tree head       <prefix>:{<root>}:head
    KEYS[3]  dispatch permit <prefix>:{<root>}:record:dispatch:<effectId>
    KEYS[4]  never claims    <prefix>:{<root>}:claims
    KEYS[5]  settled effects <prefix>:{<root>}:settled
    KEYS[6]  executions      <prefix>:{<root>}:executions
    KEYS[7]  current claims  <prefix>:{<root>}:current
    ARGV[1]  attempt id
    ARGV[2]  claim token (unique per delivery)
    ARGV[3]  worker id
    ARGV[4]  lease ms (the claimant renews it while it runs)
    ARGV[5]  the attempt's incarnation id (from the job)
    ARGV[6]  effect id
    ARGV[7]  replay policy (`never` | `same_identity`, the worker's dispatcher's answer)
    ARGV[8]  attempt record prefix (`<prefix>:{<root>}:`, to look at the effect's current claim)
    ARGV[9]  retention ms of the record

  Output:
    { 1 } claimed; { -2 } the head names another incarnation; { -3 } already claimed or settled;
    { -4 } the effect has no permit (no pending boundary granted it); { -5 } revoked (never ran, never will);
    { -6 } the effect is settled; { -7 } a `never` effect was claimed before; { -8 } an earlier
    attempt of the effect is still running
]]
local state = redis.call('HGET', KEYS[1], 'state')
if state == 'revoked' then return { -5 } end
if state then return { -3 } end
local incarnation, effect = ARGV[5], ARGV[6]
if redis.call('HGET', KEYS[2], 'incarnation') ~= incarnation then return { -2 } end
local permit = redis.call('GET', KEYS[3])
if permit == 'settled' or redis.call('HEXISTS', KEYS[5], effect) == 1 then return { -6 } end
if not permit then return { -4 } end
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local current = redis.call('HGET', KEYS[7], effect)
if current then
  -- Same tree, same hash tag: the earlier attempt's record is in this slot.
  local earlier = redis.call('HMGET', ARGV[8] .. current, 'state', 'leaseUntil')
  if earlier[1] == 'claimed' and now < tonumber(earlier[2]) then return { -8 } end
end
if ARGV[7] == 'never' then
  if redis.call('HSETNX', KEYS[4], effect, ARGV[1]) == 0 then return { -7 } end
end
redis.call('HSET', KEYS[1], 'state', 'claimed', 'token', ARGV[2], 'worker', ARGV[3], 'incarnation', incarnation,
  'effect', effect, 'policy', ARGV[7], 'canceled', '0', 'leaseUntil', tostring(now + tonumber(ARGV[4])))
redis.call('PEXPIRE', KEYS[1], ARGV[9])
redis.call('HSET', KEYS[7], effect, ARGV[1])
redis.call('HINCRBY', KEYS[6], effect, 1)
return { 1 }
