--[[
  renewNodeLease: extends a node's lease by its TTL only while the lease is still this epoch's.
  A lease that expired, was evicted (deleted) or was taken by a later registration of the same id
  is never revived: the node has lost it, and others may already be taking its trees over.

  Input:
    KEYS[1]     lease hash      <prefix>:{node:<id>}:lease

    ARGV[1]     the epoch the node registered under (decimal)
    ARGV[2]     lease TTL in ms (decimal > 0)

  Output:
    1  renewed
    0  lost (absent, or another epoch's)
]]
local leaseKey = KEYS[1]
local epoch, ttl = ARGV[1], ARGV[2]

if redis.call('HGET', leaseKey, 'epoch') ~= epoch then return 0 end
redis.call('PEXPIRE', leaseKey, ttl)
return 1
