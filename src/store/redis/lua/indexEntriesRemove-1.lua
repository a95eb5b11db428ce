--[[
  indexEntriesRemove: compare-and-delete of entries in one shard of a cross-tree index (the open-wait
  index, the Unknown-outcome index). An entry goes only while it still holds the value its remover
  judged stale or settled, so an entry rewritten meanwhile (a new writer reopening the same wait after
  a takeover, an effect replayed and Unknown again) survives.

  Input:
    KEYS[1]     one index shard        <prefix>:waits:<shard> | <prefix>:unknowns:<shard>
    ARGV[1]     a field                <root> <process> <wait or effect>
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
