--[[
  reconcileCommit: decides, after a lost reply, whether a commit is installed and still current
  (kernel-contract §3.7). Finding the fact alone never acknowledges: later progress or a new writer
  makes the commit historical. Read-only.

  Input:
    KEYS[1]     head hash             <prefix>:{<root>}:head
    KEYS[2]     facts hash            <prefix>:{<root>}:facts

    ARGV[1]     commit identity
    ARGV[2]     content digest
    ARGV[3]     the commit's sequence (decimal; '0' for an activation, '1' for a start)
    ARGV[4]     prospective snapshot digest

  Output:
    1           the fact holds this content AND the head has this sequence AND this digest
    0           otherwise (not installed, or no longer current)
]]
local head = redis.call('HMGET', KEYS[1], 'digest', 'sequence')
local fact = redis.call('HGET', KEYS[2], ARGV[1])
if fact == ARGV[2] and head[2] == ARGV[3] and head[1] == ARGV[4] then return 1 end
return 0
