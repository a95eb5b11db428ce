--[[
  unknownIndexRemove: compare-and-delete of Unknown-outcome index entries in one shard. An entry goes
  only while it still holds the value its remover read (or wrote), so an entry rewritten meanwhile (the
  effect replayed and Unknown again, a new writer after a takeover) survives.

  Input:
    KEYS[1]     one unknown index shard   <prefix>:unknowns:<shard>
    ARGV[1]     a field                   <root> <process> <effect>
    ARGV[2]     the value it must still hold
    ARGV[3..]   further field/value pairs

  Output:
    the number of entries deleted
]]
local removed = 0
for i = 1, #ARGV, 2 do
  if redis.call('HGET', KEYS[1], ARGV[i]) == ARGV[i + 1] then
    redis.call('HDEL', KEYS[1], ARGV[i])
    removed = removed + 1
  end
end
return removed
