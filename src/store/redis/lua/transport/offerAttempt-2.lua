--[[
  offerAttempt: the tree's owner offers one dispatch attempt to workers, before enqueuing its job.
  Fenced by the head: only the incarnation that owns the tree may offer (a zombie owner enqueuing
  after a takeover is refused here, and its job, if any, finds no attempt to claim).

  Input:
    KEYS[1]  attempt record  <prefix>:{<root>}:attempt:<attemptId>
    KEYS[2]  tree head       <prefix>:{<root>}:head
    ARGV[1]  incarnation id of the offering owner
    ARGV[2]  effect id
    ARGV[3]  replay policy (`never` | `same_identity`)
    ARGV[4]  claim window ms (unclaimed past it: revoked)
    ARGV[5]  dispatch deadline ms (claimed but unsettled past it: expired)
    ARGV[6]  retention ms of the record

  Output:
    1 offered; -2 the head's incarnation differs (fenced); -3 the attempt was offered before
]]
if redis.call('HGET', KEYS[2], 'incarnation') ~= ARGV[1] then return -2 end
if redis.call('EXISTS', KEYS[1]) == 1 then return -3 end
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
redis.call('HSET', KEYS[1], 'state', 'offered', 'incarnation', ARGV[1], 'effect', ARGV[2], 'policy', ARGV[3],
  'claimBy', tostring(now + tonumber(ARGV[4])), 'deadline', tostring(now + tonumber(ARGV[5])), 'canceled', '0')
redis.call('PEXPIRE', KEYS[1], ARGV[6])
return 1
