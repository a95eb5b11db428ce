--[[
  The host write set: extra writes a commit applies only when its compare-and-swap installs a new
  head (status 1). Absent (ARGV ends at ARGV[at-1], no record keys) when there is nothing to write;
  otherwise, from ARGV[at]:
    ARGV[at]      event-log MAXLEN (decimal > 0), used as `MAXLEN ~ <n>`
    ARGV[at+1]    number of event-log entries E
    then E times: P (number of field/value pairs, > 0), field1, value1, ..., fieldP, valueP
    then, for each record key KEYS[firstRecordKey..#KEYS] in order: value, ttlMs ('0' = no TTL; '-' =
    delete the key: a consumed settlement inbox, or a record the host marks `remove`; '+z' = ZADD
    <key> 0 <value>, '+s' = SADD <key> <value>, '+k' = SET <key> <value>: a directory entry outside
    the tree's slot, standalone Redis only; '+h' = HSET <key> <field> <rest> for a value `<field> <rest>`:
    a deployment ref the entries name, stored in the head hash, see log-refs.ts)
  Nothing may follow. Every argument is validated, and the event-log key's type checked, before the
  caller writes anything, so a malformed set can never leave a half-applied commit. The absent set
  is the common case and takes a fast path: false, no tables.
]]

-- The directory entry ops (in the TTL position) and the key type each writes.
local directoryKinds = { ['+z'] = 'zset', ['+s'] = 'set', ['+k'] = 'string', ['+h'] = 'hash' }

-- Parses and validates the host write set; returns the plan (false when absent), or nil and a reason.
local function readHostWrites(at, eventsKey, firstRecordKey)
  if #ARGV == at - 1 and #KEYS < firstRecordKey then return false end
  local maxLen = ARGV[at]
  if not isUint64(maxLen) or maxLen == '0' then return nil, 'event-log MAXLEN must be a positive decimal' end
  local entryCount = ARGV[at + 1]
  if not isUint64(entryCount) or #entryCount > 6 then return nil, 'event-log entry count must be a small decimal' end
  entryCount = tonumber(entryCount)
  at = at + 2
  local entries = {}
  for entry = 1, entryCount do
    local pairCount = ARGV[at]
    if not isUint64(pairCount) or pairCount == '0' or #pairCount > 4 then
      return nil, 'event-log entry ' .. entry .. ' needs a positive field count'
    end
    pairCount = tonumber(pairCount)
    if at + pairCount * 2 > #ARGV then return nil, 'event-log entry ' .. entry .. ' is truncated' end
    local fields = {}
    for index = 1, pairCount * 2 do fields[index] = ARGV[at + index] end
    entries[entry] = fields
    at = at + 1 + pairCount * 2
  end
  local records = {}
  for index = firstRecordKey, #KEYS do
    local value, ttl = ARGV[at], ARGV[at + 1]
    local wanted = directoryKinds[ttl]
    if value == nil or (ttl ~= '-' and not wanted and not isUint64(ttl)) then
      return nil, 'idempotency record ' .. KEYS[index] .. ' needs a value and a TTL'
    end
    if ttl == '+h' and not string.find(value, ' ', 2, true) then
      return nil, 'hash entry for ' .. KEYS[index] .. ' needs a field and a value'
    end
    if wanted then
      -- Checked here, before anything is written: a member add must not fail after the head is installed.
      local kind = redis.call('TYPE', KEYS[index])['ok']
      if kind ~= wanted and kind ~= 'none' then
        local what = ttl == '+h' and 'head key ' or 'directory key '
        return nil, what .. KEYS[index] .. ' holds a ' .. kind
      end
    end
    records[#records + 1] = { KEYS[index], value, ttl }
    at = at + 2
  end
  if at ~= #ARGV + 1 then return nil, 'unexpected arguments after the host write set' end
  if entryCount > 0 then
    local kind = redis.call('TYPE', eventsKey)['ok']
    if kind ~= 'stream' and kind ~= 'none' then return nil, 'event-log key holds a ' .. kind end
  end
  return { maxLen = maxLen, entries = entries, records = records, eventsKey = eventsKey }
end

-- Applies a validated plan: XADD each entry in order (auto ids, approximate trimming), each with a
-- last field `scope.prev` naming the entry appended just before it ('0' for the first of the stream:
-- readers detect trimmed gaps with it), then SET each record (overwriting, PX ttl when given; DEL for '-';
-- ZADD 0 / SADD / SET for a directory entry, HSET for a ref).
-- Returns the new entries' ids in order.
local function applyHostWrites(plan)
  local ids = {}
  if not plan then return ids end
  local previous = nil
  for index, fields in ipairs(plan.entries) do
    if previous == nil then
      local last = redis.call('XREVRANGE', plan.eventsKey, '+', '-', 'COUNT', 1)[1]
      previous = last and last[1] or '0'
    end
    fields[#fields + 1] = 'scope.prev'
    fields[#fields + 1] = previous
    previous = redis.call('XADD', plan.eventsKey, 'MAXLEN', '~', plan.maxLen, '*', unpack(fields))
    ids[index] = previous
  end
  for _, record in ipairs(plan.records) do
    if record[3] == '-' then
      redis.call('DEL', record[1])
    elseif record[3] == '+z' then
      redis.call('ZADD', record[1], 0, record[2])
    elseif record[3] == '+s' then
      redis.call('SADD', record[1], record[2])
    elseif record[3] == '+h' then
      local space = string.find(record[2], ' ', 2, true)
      redis.call('HSET', record[1], string.sub(record[2], 1, space - 1), string.sub(record[2], space + 1))
    elseif record[3] == '+k' then
      redis.call('SET', record[1], record[2])
    elseif record[3] == '0' then
      redis.call('SET', record[1], record[2])
    else
      redis.call('SET', record[1], record[2], 'PX', record[3])
    end
  end
  return ids
end
