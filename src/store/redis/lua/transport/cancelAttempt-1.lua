--[[
  cancelAttempt: the durable cancel flag of an attempt, then a notification to the workers (the
  claimant also reads the flag on its next heartbeat, so a lost notification only delays it).

  Input:
    KEYS[1]  attempt record  <prefix>:{<root>}:attempt:<attemptId>
    ARGV[1]  notification channel
    ARGV[2]  notification message

  Output:
    1 flagged; 0 no such attempt
]]
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], 'canceled', '1')
redis.call('PUBLISH', ARGV[1], ARGV[2])
return 1
