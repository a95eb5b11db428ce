--[[
  activateTree: installs a TreeActivation, replacing writer and head and resetting the sequence to 0
  in one compare-and-swap, so the previous writer is fenced before restored work runs
  (kernel-contract §3.6 ActivateTree):
    1. a stored fact acks only an identical retry while the head is still at sequence 0 with the
       proposed digest, else commit conflict;
    2. the head must exist, be owned by the previous incarnation and have the previous digest, else
       incarnation conflict;
    3. store the fact, head := (snapshot under the new incarnation, sequence 0).
  Host writes are applied only on a fresh install (status 1).

  Input:
    KEYS[1]     head hash             <prefix>:{<root>}:head
    KEYS[2]     facts hash            <prefix>:{<root>}:facts
    KEYS[3]     event-log stream      <prefix>:{<root>}:events
    KEYS[4]     snapshot              <prefix>:{<root>}:snapshot
    KEYS[5..]   idempotency records   <prefix>:{<root>}:record:<suffix> (host write set)

    ARGV[1]     commit identity
    ARGV[2]     content digest
    ARGV[3]     previous incarnation id
    ARGV[4]     previous head digest
    ARGV[5]     prospective snapshot digest
    ARGV[6]     prospective (new) incarnation id
    ARGV[7]     prospective snapshot bytes (canonical JSON, stored verbatim)
    ARGV[8..]   host write set, absent when empty (see includes/hostWrites.lua)

  Output (array):
    { 1, id... }  installed; ids of the appended event-log entries
    { 2 }         identical retry acknowledged; nothing written
    { -1 }        commit conflict
    { -2 }        tree incarnation conflict
    { -4, why }   malformed arguments; nothing written
]]
--- @include "uint64"
--- @include "hostWrites"
--- @include "head"

local headKey, factsKey, eventsKey, snapshotKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local identity, content, previousIncarnation, previous = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local digest, incarnation, snapshot = ARGV[5], ARGV[6], ARGV[7]

if snapshot == nil then return { invalidArguments, 'missing snapshot' } end
if previousIncarnation == incarnation then return { invalidArguments, 'an activation installs a new incarnation' } end
local plan, why = readHostWrites(8, eventsKey, 5)
if plan == nil then return { invalidArguments, why } end

local headDigest, headIncarnation, headSequence = readHead(headKey)
local fact = redis.call('HGET', factsKey, identity)
if fact then return answerFact(fact, content, headDigest, headSequence, digest, '0') end
if not headDigest or headIncarnation ~= previousIncarnation or headDigest ~= previous then
  return { incarnationConflict }
end
return install(headKey, snapshotKey, factsKey, identity, content, { bytes = snapshot }, digest, incarnation, '0', plan)
