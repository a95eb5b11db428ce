--[[
  waitIndexRemove: compare-and-delete of open-wait index entries in one shard. An entry goes only
  while it still holds the value its remover judged stale, so an entry rewritten meanwhile (a new
  writer reopening the same wait after a takeover) survives.

  Input:
    KEYS[1]     one wait index shard   <prefix>:waits:<shard>
    ARGV[1]     a field                <root> <process> <wait>
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
