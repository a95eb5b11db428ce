--[[
  appendLog: best-effort entries of a tree's event log (attempt events and deltas: they carry no
  committed fact, so they ride in no commit). Each entry is linked to the entry appended just before
  it, exactly as the commit scripts link theirs (includes/hostWrites.lua), so readers tell trimmed
  history from a continuous read.

  Input:
    KEYS[1]     event-log stream      <prefix>:{<root>}:events
    ARGV[1]     approximate MAXLEN (decimal > 0)
    then per entry: P (its number of field/value pairs, 2 or 3), the event name (the `name` field's
    value), then the P - 1 other pairs in order: `event <JSON>`, `delta <JSON>`, or `ref <id> event <JSON>`
    for an Event stored without its deployment ref (log-refs.ts)

  Output:
    the id of the last entry appended (a stream id), or { -4, why } for malformed arguments
]]
local key = KEYS[1]
local maxLen = ARGV[1]
if maxLen == nil or not string.match(maxLen, '^[1-9][0-9]*$') then return { -4, 'MAXLEN must be a positive decimal' } end
-- Checked whole before anything is written.
local entries = {}
local at = 2
while at <= #ARGV do
  local pairCount = ARGV[at]
  if pairCount ~= '2' and pairCount ~= '3' then return { -4, 'an entry has 2 or 3 field/value pairs' } end
  local last = at + tonumber(pairCount) * 2 - 1
  if last > #ARGV then return { -4, 'an entry is truncated' } end
  local fields = { 'name', ARGV[at + 1] }
  for index = at + 2, last do fields[#fields + 1] = ARGV[index] end
  entries[#entries + 1] = fields
  at = last + 1
end
if #entries == 0 then return { -4, 'no entries' } end
local kind = redis.call('TYPE', key)['ok']
if kind ~= 'stream' and kind ~= 'none' then return { -4, 'event-log key holds a ' .. kind } end
local last = redis.call('XREVRANGE', key, '+', '-', 'COUNT', 1)[1]
local previous = last and last[1] or '0'
for _, fields in ipairs(entries) do
  fields[#fields + 1] = 'scope.prev'
  fields[#fields + 1] = previous
  previous = redis.call('XADD', key, 'MAXLEN', '~', maxLen, '*', unpack(fields))
end
return previous
