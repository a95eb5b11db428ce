--[[
  cancelAttempt: the durable cancel flag of an attempt, then a notification to the workers (the
  claimant also reads the flag on its next heartbeat, so a lost notification only delays it). An
  attempt nobody claimed yet is revoked instead: it never ran and now never will.

  Input:
    KEYS[1]  attempt record  <prefix>:{<root>}:attempt:<attemptId>
    ARGV[1]  notification channel
    ARGV[2]  notification message
    ARGV[3]  retention ms of a record created here

  Output:
    1 flagged; 0 revoked before any claim
]]
if redis.call('EXISTS', KEYS[1]) == 0 then
  redis.call('HSET', KEYS[1], 'state', 'revoked')
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
  return 0
end
redis.call('HSET', KEYS[1], 'canceled', '1')
redis.call('PUBLISH', ARGV[1], ARGV[2])
return 1
