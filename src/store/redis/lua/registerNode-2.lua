--[[
  registerNode: a node joins under a new epoch: the epoch counter of its id advances, and its lease
  hash is replaced and given the lease TTL (it then expires on the server unless renewed). A later
  registration of the same id (a restart) is a new epoch, so owner records naming the old one read
  as ownerless.

  Input:
    KEYS[1]     epoch counter   <prefix>:{node:<id>}:epoch
    KEYS[2]     lease hash      <prefix>:{node:<id>}:lease

    ARGV[1]     advertised URL
    ARGV[2]     deployment refs the node holds, space-separated
    ARGV[3]     lease TTL in ms (decimal > 0)

  Output:
    the new epoch (integer)
]]
local epochKey, leaseKey = KEYS[1], KEYS[2]
local url, refs, ttl = ARGV[1], ARGV[2], ARGV[3]

local epoch = redis.call('INCR', epochKey)
redis.call('DEL', leaseKey)
redis.call('HSET', leaseKey, 'epoch', tostring(epoch), 'url', url, 'refs', refs)
redis.call('PEXPIRE', leaseKey, ttl)
return epoch
