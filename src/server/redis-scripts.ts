import type { Redis } from 'ioredis';
import { eventEntryFields, previousEntryField } from '../store/redis/event-log.js';

/**
 * The Host's own Lua scripts in Redis mode, beside the store's commit scripts (src/store/redis/lua):
 * the best-effort log append and the idempotency pointer's compare-and-set steps. Each script touches
 * the keys it declares, all in one cluster slot.
 *
 * They run through ioredis `defineCommand`: the first call on a connection sends EVAL, later ones
 * EVALSHA, so a script call keeps its place among the other commands of the connection (the best-effort
 * appends stay ordered with the commits on the same client).
 */

const luaTime = `
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
`;

const sources = {
  /*
   * appendLog: best-effort entries (attempt events, deltas), each linked to the entry before it.
   *   KEYS[1]  the tree's event stream
   *   ARGV[1]  approximate MAXLEN; then, per entry: event name, data field, data
   *   Returns the id of the last entry appended.
   */
  appendLog: `
local key = KEYS[1]
local last = redis.call('XREVRANGE', key, '+', '-', 'COUNT', 1)[1]
local previous = last and last[1] or '0'
for index = 2, #ARGV - 2, 3 do
  previous = redis.call('XADD', key, 'MAXLEN', '~', ARGV[1], '*', '${eventEntryFields.name}', ARGV[index],
    ARGV[index + 1], ARGV[index + 2], '${previousEntryField}', previous)
end
return previous
`,
  /*
   * idempotencyClaim: reserve a free key, or report who holds it.
   *   KEYS[1]  the idempotency pointer
   *   ARGV[1]  the reservation value; ARGV[2] its TTL in ms
   *   Returns {1, value, nowMs} when reserved, {0, current value, nowMs} otherwise (server clock).
   */
  idempotencyClaim: `
local taken = redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2])
${luaTime}
if taken then return { 1, ARGV[1], now } end
return { 0, redis.call('GET', KEYS[1]) or '', now }
`,
  /*
   * idempotencyReplace: compare-and-set.
   *   KEYS[1]  the idempotency pointer
   *   ARGV[1]  the expected value; ARGV[2] the new value; ARGV[3] its TTL in ms
   *   Returns 1 when replaced, 0 when the value was not the expected one.
   */
  idempotencyReplace: `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
return 1
`,
  /*
   * idempotencyCommitting: a reservation names the root its start commit is about to create.
   *   KEYS[1]  the idempotency pointer
   *   ARGV[1]  the reservation token; ARGV[2] the root id; ARGV[3] TTL in ms
   *   Holds when the pointer is this token's reservation (or its own earlier committing value, a
   *   retried commit), or is free; sets 'committing:<token>:<server ms>:<root>'. Returns 1, or 0
   *   when someone else holds the key.
   */
  idempotencyCommitting: `
local current = redis.call('GET', KEYS[1])
local committing = 'committing:' .. ARGV[1] .. ':'
if current and current ~= 'reserved:' .. ARGV[1] and string.sub(current, 1, #committing) ~= committing then return 0 end
${luaTime}
redis.call('SET', KEYS[1], committing .. string.format('%d', now) .. ':' .. ARGV[2], 'PX', ARGV[3])
return 1
`,
  /*
   * idempotencyPromote: after the start commit landed, the pointer names the root alone.
   *   KEYS[1]  the idempotency pointer
   *   ARGV[1]  the reservation token; ARGV[2] the root id; ARGV[3] TTL in ms
   *   Returns 1 when promoted, 0 when the pointer is no longer this token's committing value.
   */
  idempotencyPromote: `
local current = redis.call('GET', KEYS[1])
local committing = 'committing:' .. ARGV[1] .. ':'
if not current or string.sub(current, 1, #committing) ~= committing then return 0 end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
return 1
`,
  /*
   * idempotencyRelease: compare-and-delete.
   *   KEYS[1]  the idempotency pointer
   *   ARGV[1]  the expected value
   *   Returns 1 when deleted, 0 when the value was another one.
   */
  idempotencyRelease: `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
return 1
`,
  /*
   * fenceStart: settles whether a root's start commit ever lands.
   *   KEYS[1]  the root's head hash; KEYS[2] its purge tombstone
   *   ARGV[1]  the tombstone value; ARGV[2] its TTL in ms
   *   Returns 1 when the start has committed (a head, or a purge tombstone after a commit), else writes
   *   the tombstone (the store refuses any later start commit of the root) and returns 0.
   */
  fenceStart: `
if redis.call('EXISTS', KEYS[1]) == 1 or redis.call('EXISTS', KEYS[2]) == 1 then return 1 end
redis.call('SET', KEYS[2], ARGV[1], 'PX', ARGV[2])
return 0
`,
} as const;

export type HostScriptName = keyof typeof sources;

const keyCounts: Readonly<Record<HostScriptName, number>> = {
  appendLog: 1,
  idempotencyClaim: 1,
  idempotencyReplace: 1,
  idempotencyCommitting: 1,
  idempotencyPromote: 1,
  idempotencyRelease: 1,
  fenceStart: 2,
};

const registered = new WeakSet<Redis>();

function commandName(name: HostScriptName): string {
  return `scope_host_${name}`;
}

type ScriptCall = (...args: (string | number)[]) => Promise<unknown>;

/** Runs one host script on `redis` (registered on first use per client). */
export function runHostScript(redis: Redis, name: HostScriptName, keys: readonly string[], args: readonly (string | number)[]): Promise<unknown> {
  if (keys.length !== keyCounts[name]) throw new Error(`host script ${name} takes ${keyCounts[name]} keys, got ${keys.length}`);
  if (!registered.has(redis)) {
    for (const script of Object.keys(sources) as HostScriptName[]) {
      redis.defineCommand(commandName(script), { numberOfKeys: keyCounts[script], lua: sources[script] });
    }
    registered.add(redis);
  }
  const call = (redis as unknown as Record<string, ScriptCall>)[commandName(name)] as ScriptCall;
  return call.call(redis, ...keys, ...args);
}
