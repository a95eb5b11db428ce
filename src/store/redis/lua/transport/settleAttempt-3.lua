--[[
  settleAttempt: the claimant delivers its settlement to the effect's inbox (first write wins) and
  wakes the owner; the owner's settled boundary consumes the inbox. Refused unless the claim is
  still held: once the owner declared the attempt Unknown (lapsed lease, passed deadline) nothing can settle into it any more.

  Input:
    KEYS[1]  attempt record  <prefix>:{<root>}:attempt:<attemptId>
    KEYS[2]  effect inbox    <prefix>:{<root>}:inbox:<effectId>
    KEYS[3]  settled effects <prefix>:{<root>}:settled
    ARGV[1]  attempt id
    ARGV[2]  claim token
    ARGV[3]  settlement JSON (`{"outcome":"settled","settlement":…}` or `{"outcome":"unknown",…}`)
    ARGV[4]  1 when the settlement is definite (the effect may not be claimed again)
    ARGV[5]  retention ms of the inbox
    ARGV[6]  notification channel
    ARGV[7]  notification message (`<root> <attempt>`)
    ARGV[8]  1 to append ` <settlement JSON>` to the message (a small settlement: the owner
             needs no round trip to read what it was told)

  Output:
    1 delivered; 0 refused (the claim is no longer held)
]]
local fields = redis.call('HMGET', KEYS[1], 'state', 'token', 'effect')
if fields[1] ~= 'claimed' or fields[2] ~= ARGV[2] then return 0 end
local written = redis.call('HSETNX', KEYS[2], ARGV[1], ARGV[3])
redis.call('PEXPIRE', KEYS[2], ARGV[5])
if ARGV[4] == '1' then redis.call('HSETNX', KEYS[3], fields[3], ARGV[1]) end
redis.call('HSET', KEYS[1], 'state', 'settled')
-- Only what the inbox now holds may travel in the message.
if ARGV[8] == '1' and written == 1 then
  redis.call('PUBLISH', ARGV[6], ARGV[7] .. ' ' .. ARGV[3])
else
  redis.call('PUBLISH', ARGV[6], ARGV[7])
end
return 1
