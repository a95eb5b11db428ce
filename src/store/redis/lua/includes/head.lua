--[[
  The head hash, the snapshot key and the facts hash of one tree, and the script outcomes.
  Head fields: digest, incarnation, sequence. The snapshot key (a string) holds the canonical JSON bytes
  verbatim. (A head written before the snapshot had a key of its own kept the bytes in a `snapshot`
  field; readers fall back to it, and the tree's next write of its bytes whole makes the key.)
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

-- What an install writes to the snapshot key, from the commit's snapshot argument: the bytes (canonical
-- JSON starts with '{'), or a splice `+<kept>,<total>,<tail>`: the stored snapshot's first <kept> bytes
-- stay, <tail> is written after them in place (SETRANGE), <total> bytes in all, so that only the tail
-- travels and is copied. Checked before anything is written, once the head's digest matched the
-- proposal's previous digest (the stored bytes are the ones the caller spliced against). Returns the
-- write; false when the stored snapshot cannot take the splice (shorter than <kept>, longer than
-- <total>: a splice never truncates, or a tail of other than <total> - <kept> bytes), for the caller to
-- send the bytes whole; nil and a reason for a malformed splice.
local function snapshotWrite(snapshotKey, argument)
  if string.byte(argument, 1) ~= 43 then return { bytes = argument } end
  local kept, total, at = string.match(argument, '^%+(%d+),(%d+),()')
  if not kept or #kept > 15 or #total > 15 then return nil, 'a spliced snapshot is +<kept>,<total>,<tail>' end
  kept, total = tonumber(kept), tonumber(total)
  local tail = string.sub(argument, at)
  local stored = redis.call('STRLEN', snapshotKey)
  if stored < kept or stored > total or kept + #tail ~= total then return false end
  return { kept = kept, tail = tail }
end

-- Writes the fact, the snapshot (a write of snapshotWrite's), the head and the host writes; returns
-- the installed reply. An advance keeps the head's incarnation (it was just compared equal), so it
-- passes none.
local function install(headKey, snapshotKey, factsKey, identity, content, write, digest, incarnation, sequence, plan)
  redis.call('HSET', factsKey, identity, content)
  if write.bytes then
    redis.call('SET', snapshotKey, write.bytes)
  else
    redis.call('SETRANGE', snapshotKey, write.kept, write.tail)
  end
  if incarnation then
    redis.call('HSET', headKey, 'digest', digest, 'incarnation', incarnation, 'sequence', sequence)
  else
    redis.call('HSET', headKey, 'digest', digest, 'sequence', sequence)
  end
  local reply = { installed }
  for _, id in ipairs(applyHostWrites(plan)) do reply[#reply + 1] = id end
  return reply
end

-- An advance's install (the head's incarnation kept): its snapshot write checked first, so that a
-- malformed splice, or one the stored snapshot cannot take, writes nothing.
local function installAdvance(headKey, snapshotKey, factsKey, identity, content, argument, digest, sequence, plan)
  local write, malformed = snapshotWrite(snapshotKey, argument)
  if write == nil then return { invalidArguments, malformed } end
  if not write then return { spliceStale } end
  return install(headKey, snapshotKey, factsKey, identity, content, write, digest, nil, sequence, plan)
end
