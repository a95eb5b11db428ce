--[[
  appendLog: best-effort entries of a tree's event log (attempt events and deltas: they carry no
  committed fact, so they ride in no commit). Each entry is linked to the entry appended just before
  it, exactly as the commit scripts link theirs (includes/hostWrites.lua), so readers tell trimmed
  history from a continuous read.

  Input:
    KEYS[1]     event-log stream      <prefix>:{<root>}:events
    ARGV[1]     approximate MAXLEN (decimal > 0)
    then per entry, 3 arguments: event name, data field name (`event` or `delta`), data (canonical JSON)

  Output:
    the id of the last entry appended (a stream id), or { -4, why } for malformed arguments
]]
local key = KEYS[1]
local maxLen = ARGV[1]
if maxLen == nil or not string.match(maxLen, '^[1-9][0-9]*$') then return { -4, 'MAXLEN must be a positive decimal' } end
if (#ARGV - 1) % 3 ~= 0 or #ARGV < 4 then return { -4, 'entries come as name, field, data triples' } end
local kind = redis.call('TYPE', key)['ok']
if kind ~= 'stream' and kind ~= 'none' then return { -4, 'event-log key holds a ' .. kind } end
local last = redis.call('XREVRANGE', key, '+', '-', 'COUNT', 1)[1]
local previous = last and last[1] or '0'
for index = 2, #ARGV, 3 do
  previous = redis.call('XADD', key, 'MAXLEN', '~', maxLen, '*', 'name', ARGV[index],
    ARGV[index + 1], ARGV[index + 2], 'scope.prev', previous)
end
return previous
