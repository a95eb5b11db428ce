--[[
  commitEffect: installs an EffectBoundary (pending, settled or resolved) with one compare-and-swap
  on the tree head, so the Effect fact and the head are atomic (kernel-contract §3.6 advanceHead):
    1. the head must exist under the proposal's incarnation (before the fact lookup);
    2. a stored fact acks only an identical retry while current, else commit conflict (an Effect's
       identity ignores incarnation and sequence: one boundary of each kind for the tree's life);
    3. head at 2^64-1, a sequence other than head+1, or a previous digest other than the head's is an
       incarnation conflict;
    4. store the fact, head := (snapshot, proposal sequence).
  Host writes are applied only on a fresh install (status 1).

  Input:
    KEYS[1]     head hash             <prefix>:{<root>}:head
    KEYS[2]     facts hash            <prefix>:{<root>}:facts
    KEYS[3]     event-log stream      <prefix>:{<root>}:events
    KEYS[4]     snapshot              <prefix>:{<root>}:snapshot
    KEYS[5..]   idempotency records   <prefix>:{<root>}:record:<suffix> (host write set)

    ARGV[1]     commit identity
    ARGV[2]     content digest
    ARGV[3]     proposal sequence (decimal uint64 above 0)
    ARGV[4]     previous head digest
    ARGV[5]     prospective snapshot digest
    ARGV[6]     prospective incarnation id
    ARGV[7]     prospective snapshot bytes (canonical JSON, stored verbatim), or a splice of the stored
                snapshot (see snapshotWrite in includes/head.lua)
    ARGV[8..]   host write set, absent when empty (see includes/hostWrites.lua)

  Output (array):
    { 1, id... }  installed; ids of the appended event-log entries
    { 2 }         identical retry acknowledged; nothing written
    { -1 }        commit conflict
    { -2 }        tree incarnation conflict
    { -4, why }   malformed arguments; nothing written
    { -5 }        the splice does not fit the stored snapshot; nothing written (send the bytes whole)
]]
--- @include "uint64"
--- @include "hostWrites"
--- @include "head"

local headKey, factsKey, eventsKey, snapshotKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local identity, content, sequence, previous = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local digest, incarnation, snapshot = ARGV[5], ARGV[6], ARGV[7]

if not isUint64(sequence) or sequence == '0' then return { invalidArguments, 'sequence must be a uint64 above 0' } end
if snapshot == nil then return { invalidArguments, 'missing snapshot' } end
local plan, why = readHostWrites(8, eventsKey, 5)
if plan == nil then return { invalidArguments, why } end

local headDigest, headIncarnation, headSequence = readHead(headKey)
if not headDigest or headIncarnation ~= incarnation then return { incarnationConflict } end
local fact = redis.call('HGET', factsKey, identity)
if fact then return answerFact(fact, content, headDigest, headSequence, digest, sequence) end
if headSequence == maxUint64 or sequence ~= nextUint64(headSequence) or headDigest ~= previous then
  return { incarnationConflict }
end
return installAdvance(headKey, snapshotKey, factsKey, identity, content, snapshot, digest, sequence, plan)
