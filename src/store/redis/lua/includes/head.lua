--[[
  The head hash and the facts hash of one tree, and the script outcomes.
  Head fields: snapshot (canonical JSON bytes, stored verbatim), digest, incarnation, sequence.
]]
local installed = 1          -- the compare-and-swap installed the proposal; host writes applied
local duplicate = 2          -- an identical retry while its sequence is current; nothing written
local commitConflict = -1    -- the identity is taken by other content, or the retry is historical
local incarnationConflict = -2 -- absent head, another writer, or not the head's successor
local invalidArguments = -4  -- the caller broke this script's ARGV contract; nothing written
local spliceStale = -5       -- a spliced snapshot does not fit the stored one; nothing written (send it whole)

-- The head's digest, incarnation and sequence (false for each when the head is absent).
local function readHead(headKey)
  local head = redis.call('HMGET', headKey, 'digest', 'incarnation', 'sequence')
  return head[1], head[2], head[3]
end

-- The stored fact answers a repeated identity: an identical retry while still current, or a conflict.
local function answerFact(fact, content, headDigest, headSequence, digest, sequence)
  if fact == content and headSequence == sequence and headDigest == digest then return { duplicate } end
  return { commitConflict }
end

-- The snapshot bytes an advance installs, from its snapshot argument: the bytes verbatim (canonical JSON
-- starts with '{'), or a splice `+<kept>,<total>,<tail>`: the stored snapshot's first <kept> bytes, then
-- <tail>, <total> bytes in all. Called once the head's digest matched the proposal's previous digest, so
-- the stored bytes are the ones the caller spliced against. Returns the bytes; false when the stored
-- snapshot is too short or the result is not <total> bytes long (the caller sends it whole again); nil
-- and a reason for a malformed splice.
local function snapshotBytes(headKey, argument)
  if string.byte(argument, 1) ~= 43 then return argument end
  local kept, total, at = string.match(argument, '^%+(%d+),(%d+),()')
  if not kept or #kept > 15 or #total > 15 then return nil, 'a spliced snapshot is +<kept>,<total>,<tail>' end
  kept, total = tonumber(kept), tonumber(total)
  local stored = redis.call('HGET', headKey, 'snapshot')
  if not stored or #stored < kept then return false end
  local bytes = string.sub(stored, 1, kept) .. string.sub(argument, at)
  if #bytes ~= total then return false end
  return bytes
end

-- Writes the fact, the head and the host writes; returns the installed reply. An advance keeps the
-- head's incarnation (it was just compared equal), so it passes none.
local function install(headKey, factsKey, identity, content, snapshot, digest, incarnation, sequence, plan)
  redis.call('HSET', factsKey, identity, content)
  if incarnation then
    redis.call('HSET', headKey, 'snapshot', snapshot, 'digest', digest, 'incarnation', incarnation, 'sequence', sequence)
  else
    redis.call('HSET', headKey, 'snapshot', snapshot, 'digest', digest, 'sequence', sequence)
  end
  local reply = { installed }
  for _, id in ipairs(applyHostWrites(plan)) do reply[#reply + 1] = id end
  return reply
end
