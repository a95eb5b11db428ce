--[[
  takeOverTree: activateTree with an ownership guard. The activation names the owner record it
  replaces; it installs only while the tree's owner record still holds exactly that value, so two
  nodes taking over the same tree at once (or one after the other from the same stale reading)
  can never both succeed (docs/host.md "Nodes and ownership"). The new owner record travels in the
  host write set and lands with the head or not at all.
    1. a stored fact acks only an identical retry while the head is still at sequence 0 with the
       proposed digest, else commit conflict (a retry of this very takeover finds its own owner);
    2. the owner record must equal the expected one ('' = no record), else incarnation conflict;
    3. the head must exist, be owned by the previous incarnation and have the previous digest, else
       incarnation conflict;
    4. store the fact, head := (snapshot under the new incarnation, sequence 0), host writes.

  Input:
    KEYS[1]     head hash             <prefix>:{<root>}:head
    KEYS[2]     facts hash            <prefix>:{<root>}:facts
    KEYS[3]     event-log stream      <prefix>:{<root>}:events
    KEYS[4]     owner record          <prefix>:{<root>}:record:owner
    KEYS[5]     snapshot              <prefix>:{<root>}:snapshot
    KEYS[6..]   host records          <prefix>:{<root>}:record:<suffix> (host write set; the new owner among them)

    ARGV[1]     commit identity
    ARGV[2]     content digest
    ARGV[3]     previous incarnation id
    ARGV[4]     previous head digest
    ARGV[5]     prospective snapshot digest
    ARGV[6]     prospective (new) incarnation id
    ARGV[7]     prospective snapshot bytes (canonical JSON, stored verbatim)
    ARGV[8]     the owner record this takeover replaces, verbatim ('' = none)
    ARGV[9..]   host write set, absent when empty (see includes/hostWrites.lua)

  Output (array):
    { 1, id... }  installed; ids of the appended event-log entries
    { 2 }         identical retry acknowledged; nothing written
    { -1 }        commit conflict
    { -2 }        tree incarnation conflict (another writer, or another owner)
    { -4, why }   malformed arguments; nothing written
]]
--- @include "uint64"
--- @include "hostWrites"
--- @include "head"

local headKey, factsKey, eventsKey, ownerKey, snapshotKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local identity, content, previousIncarnation, previous = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local digest, incarnation, snapshot, expectedOwner = ARGV[5], ARGV[6], ARGV[7], ARGV[8]

if expectedOwner == nil then return { invalidArguments, 'missing expected owner' } end
if previousIncarnation == incarnation then return { invalidArguments, 'an activation installs a new incarnation' } end
local plan, why = readHostWrites(9, eventsKey, 6)
if plan == nil then return { invalidArguments, why } end

local headDigest, headIncarnation, headSequence = readHead(headKey)
local fact = redis.call('HGET', factsKey, identity)
if fact then return answerFact(fact, content, headDigest, headSequence, digest, '0') end
if (redis.call('GET', ownerKey) or '') ~= expectedOwner then return { incarnationConflict } end
if not headDigest or headIncarnation ~= previousIncarnation or headDigest ~= previous then
  return { incarnationConflict }
end
return install(headKey, snapshotKey, factsKey, identity, content, { bytes = snapshot }, digest, incarnation, '0', plan)
