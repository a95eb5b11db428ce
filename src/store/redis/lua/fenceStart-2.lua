--[[
  fenceStart: settles whether a root's start commit ever lands, for an idempotent start whose
  server is presumed gone. The purge tombstone makes the commit scripts refuse any later start
  checkpoint of the root, so after a 0 the start can never commit.

  Input:
    KEYS[1]     head hash             <prefix>:{<root>}:head
    KEYS[2]     purge tombstone       <prefix>:{<root>}:purged
    ARGV[1]     the tombstone value
    ARGV[2]     its TTL in ms

  Output:
    1  the start has committed (a head, or a tombstone left by a purge after a commit)
    0  it had not: the tombstone is written and it never will
]]
if redis.call('EXISTS', KEYS[1]) == 1 or redis.call('EXISTS', KEYS[2]) == 1 then return 1 end
redis.call('SET', KEYS[2], ARGV[1], 'PX', ARGV[2])
return 0
