--[[
  hostGateWrite: writes a reserved host-owned gate's record, unless it exists (a retry of the same
  create writes the identical record, so whichever lands first stands).

  Input:
    KEYS[1]     the gate        <prefix>:{hostgate:<hex>}:gate   (hash)
    ARGV[1]     spec (JSON: id, tenant, kind, prompt, answerSchema, url, actor, requestId, requestDigest)
    ARGV[2]     createdAt (ms)
    ARGV[3]     expiresAt (ms)
    ARGV[4]     end of retention (ms): the key's PEXPIREAT

  Output:
    1 written, 0 it existed
]]
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], 'spec', ARGV[1], 'createdAt', ARGV[2], 'expiresAt', ARGV[3], 'state', 'open')
redis.call('PEXPIREAT', KEYS[1], ARGV[4])
return 1
