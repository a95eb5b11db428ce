--[[
  commitCheckpoint: installs a TreeCheckpoint with one compare-and-swap on the tree head
  (kernel-contract §3.6, MemoryTreeCommitter's check order exactly).
    start   (createHead):  1. a stored fact acks only an identical retry while the head is still at
                              sequence 1 with the proposed digest, else commit conflict;
                           2. an existing head, or a purge tombstone, is an incarnation conflict;
                           3. store the fact, head := (snapshot, sequence 1).
    advance (advanceHead): 1. the head must exist under the proposal's incarnation (checked before
                              the fact, so a fenced writer learns it was fenced);
                           2. a stored fact acks only an identical retry while current, else commit
                              conflict;
                           3. head at 2^64-1, a sequence other than head+1, or a previous digest other
                              than the head's is an incarnation conflict;
                           4. store the fact, head := (snapshot, proposal sequence).
  Host writes are applied only on a fresh install (status 1).

  Input:
    KEYS[1]     head hash             <prefix>:{<root>}:head
    KEYS[2]     facts hash            <prefix>:{<root>}:facts
    KEYS[3]     purge tombstone       <prefix>:{<root>}:purged
    KEYS[4]     event-log stream      <prefix>:{<root>}:events
    KEYS[5]     snapshot              <prefix>:{<root>}:snapshot
    KEYS[6..]   idempotency records   <prefix>:{<root>}:record:<suffix> (host write set; on standalone Redis
                also directory keys outside the slot: the root index, the node directory)

    ARGV[1]     op: 'start' | 'advance'
    ARGV[2]     commit identity
    ARGV[3]     content digest
    ARGV[4]     proposal sequence (decimal uint64; '1' for start)
    ARGV[5]     previous head digest ('' for start)
    ARGV[6]     prospective snapshot digest
    ARGV[7]     prospective incarnation id
    ARGV[8]     prospective snapshot bytes (canonical JSON, stored verbatim); an advance may send a
                splice of the stored snapshot instead (see snapshotWrite in includes/head.lua)
    ARGV[9..]   host write set, absent when empty (see includes/hostWrites.lua)

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

local headKey, factsKey, purgedKey, eventsKey, snapshotKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local op, identity, content, sequence = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local previous, digest, incarnation, snapshot = ARGV[5], ARGV[6], ARGV[7], ARGV[8]

if op ~= 'start' and op ~= 'advance' then return { invalidArguments, 'op must be start or advance' } end
if not isUint64(sequence) or sequence == '0' then return { invalidArguments, 'sequence must be a uint64 above 0' } end
if op == 'start' and (sequence ~= '1' or previous ~= '') then
  return { invalidArguments, 'start installs sequence 1 without a previous digest' }
end
if snapshot == nil then return { invalidArguments, 'missing snapshot' } end
if op == 'start' and string.byte(snapshot, 1) == 43 then return { invalidArguments, 'a start sends its snapshot whole' } end
local plan, why = readHostWrites(9, eventsKey, 6)
if plan == nil then return { invalidArguments, why } end

local headDigest, headIncarnation, headSequence = readHead(headKey)

if op == 'start' then
  local fact = redis.call('HGET', factsKey, identity)
  if fact then return answerFact(fact, content, headDigest, headSequence, digest, '1') end
  if headDigest or redis.call('EXISTS', purgedKey) == 1 then return { incarnationConflict } end
  return install(headKey, snapshotKey, factsKey, identity, content, { bytes = snapshot }, digest, incarnation, '1', plan)
end

if not headDigest or headIncarnation ~= incarnation then return { incarnationConflict } end
local fact = redis.call('HGET', factsKey, identity)
if fact then return answerFact(fact, content, headDigest, headSequence, digest, sequence) end
if headSequence == maxUint64 or sequence ~= nextUint64(headSequence) or headDigest ~= previous then
  return { incarnationConflict }
end
return installAdvance(headKey, snapshotKey, factsKey, identity, content, snapshot, digest, sequence, plan)
