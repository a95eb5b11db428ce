--[[
  purgeTree: deletes a finished tree's head, snapshot, facts and event log, leaving a tombstone so a replayed
  start checkpoint cannot recreate the tree. The caller has checked, on the head it read, that every
  Process is terminal; the head digest it read is compared here, so a commit that lands in between
  (e.g. an activation) makes the purge refuse instead of deleting a live head. Idempotency records
  are not touched: they expire by their own TTL.

  Input:
    KEYS[1]     head hash             <prefix>:{<root>}:head
    KEYS[2]     facts hash            <prefix>:{<root>}:facts
    KEYS[3]     event-log stream      <prefix>:{<root>}:events
    KEYS[4]     purge tombstone       <prefix>:{<root>}:purged
    KEYS[5]     snapshot              <prefix>:{<root>}:snapshot

    ARGV[1]     the head digest the caller checked
    ARGV[2]     tombstone TTL in ms (decimal; '0' = keep forever)

  Output (array):
    { 1 }       purged
    { 0 }       no head (never started, or already purged); nothing written
    { -2 }      the head changed since the caller read it; nothing written
    { -4, why } malformed arguments; nothing written
]]
if not string.match(ARGV[2] or '', '^%d+$') or #ARGV[2] > 15 then return { -4, 'tombstone TTL must be a decimal' } end
local digest = redis.call('HGET', KEYS[1], 'digest')
if not digest then return { 0 } end
if digest ~= ARGV[1] then return { -2 } end
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3], KEYS[5])
if ARGV[2] == '0' then
  redis.call('SET', KEYS[4], digest)
else
  redis.call('SET', KEYS[4], digest, 'PX', ARGV[2])
end
return { 1 }
