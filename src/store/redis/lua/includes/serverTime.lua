-- The Redis server's clock in milliseconds: one clock for every server sharing the Redis, so ages
-- compared across servers (a `committing` pointer's) never depend on a server's own clock.
local function serverTimeMs()
  local clock = redis.call('TIME')
  return tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
end
