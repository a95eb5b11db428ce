--[[
  supersedeTree: records that a drifted tree moves on to a successor (src/server/succession.ts), once,
  and only over the head the decision was made from. The owner record is replaced by a marker that
  no node's stamp matches, so a takeover that read the previous owner record fails its compare (the
  takeover's guard) and reads the route again, which then finds the tree superseded.
    1. no head: nothing written;
    2. a succession record already there: answered as it is, nothing written (a retry resumes it);
    3. the head digest must be the one decided on, else nothing written;
    4. write the succession record and the owner marker.

  Input:
    KEYS[1]     head hash             <prefix>:{<root>}:head
    KEYS[2]     succession record     <prefix>:{<root>}:record:succession
    KEYS[3]     owner record          <prefix>:{<root>}:record:owner

    ARGV[1]     the head digest the decision was made from
    ARGV[2]     the succession record (JSON)
    ARGV[3]     the owner marker

  Output (array):
    { 1 }         written
    { 0 }         no head; nothing written
    { 2, record } a succession record exists (returned verbatim); nothing written
    { -2 }        the head changed since the decision; nothing written
    { -4, why }   malformed arguments; nothing written
]]
if ARGV[2] == nil or ARGV[2] == '' or ARGV[3] == nil or ARGV[3] == '' then return { -4, 'missing record or marker' } end
local digest = redis.call('HGET', KEYS[1], 'digest')
if not digest then return { 0 } end
local existing = redis.call('GET', KEYS[2])
if existing then return { 2, existing } end
if digest ~= ARGV[1] then return { -2 } end
redis.call('SET', KEYS[2], ARGV[2])
redis.call('SET', KEYS[3], ARGV[3])
return { 1 }
