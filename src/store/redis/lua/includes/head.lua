--[[
  The head hash and the facts hash of one tree, and the script outcomes.
  Head fields: snapshot (canonical JSON bytes, stored verbatim), digest, incarnation, sequence.
]]
local installed = 1          -- the compare-and-swap installed the proposal; host writes applied
local duplicate = 2          -- an identical retry while its sequence is current; nothing written
local commitConflict = -1    -- the identity is taken by other content, or the retry is historical
local incarnationConflict = -2 -- absent head, another writer, or not the head's successor
local invalidArguments = -4  -- the caller broke this script's ARGV contract; nothing written

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
