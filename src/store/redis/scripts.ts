import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import type { RedisClient } from './connection.js';

/**
 * The store's Lua scripts: every `lua/<name>-<numKeys>.lua` is one atomic command. Files are read
 * once per process; `--- @include "<name>"` lines are replaced by `lua/includes/<name>.lua` (shared
 * helpers, inlined so each command stays a single self-contained script). `<numKeys>` is the number
 * of fixed keys; a header line `KEYS[n..]` marks a script that takes further keys after them (the
 * host write set's idempotency records).
 *
 * Each script is registered on a client with ioredis `defineCommand` (once per client). ioredis
 * sends EVALSHA and falls back to EVAL when the server answers NOSCRIPT, per connection, so commits
 * continue after `SCRIPT FLUSH` or a server restart without the script cache.
 */

export interface LuaScript {
  readonly name: string;
  /** Fixed KEYS count, parsed from the file name. */
  readonly numKeys: number;
  /** True when the script accepts keys after the fixed ones. */
  readonly variadicKeys: boolean;
  /** The source with includes inlined. */
  readonly lua: string;
  /** SHA-1 of `lua`, as EVALSHA names it. */
  readonly sha: string;
  /** The name it is registered under on a client. */
  readonly commandName: string;
}

const luaDirectory = new URL('./lua/', import.meta.url);
const includePattern = /^--- @include "([A-Za-z0-9_-]+)"[ \t]*$/gm;
const fileNamePattern = /^([A-Za-z][A-Za-z0-9]*)-(\d+)\.lua$/;

function readInclude(name: string, seen: ReadonlySet<string>): string {
  if (seen.has(name)) throw new Error(`lua include cycle through ${name}`);
  const text = readFileSync(new URL(`includes/${name}.lua`, luaDirectory), 'utf8');
  return expandIncludes(text, new Set([...seen, name]));
}

function expandIncludes(text: string, seen: ReadonlySet<string> = new Set()): string {
  return text.replace(includePattern, (_line, name: string) => readInclude(name, seen));
}

function loadScripts(directory: URL): ReadonlyMap<string, LuaScript> {
  const scripts = new Map<string, LuaScript>();
  for (const file of readdirSync(directory).sort()) {
    if (!file.endsWith('.lua')) continue;
    const match = fileNamePattern.exec(file);
    if (match === null) throw new Error(`lua script ${file} must be named <commandName>-<numKeys>.lua`);
    const [, name, keys] = match as unknown as [string, string, string];
    const lua = expandIncludes(readFileSync(new URL(file, directory), 'utf8'));
    const numKeys = Number(keys);
    const sha = createHash('sha1').update(lua).digest('hex');
    const variadicKeys = new RegExp(`KEYS\\[${numKeys + 1}\\.\\.\\]`).test(lua);
    scripts.set(name, Object.freeze({ name, numKeys, variadicKeys, lua, sha, commandName: `scope_${name}_${sha.slice(0, 8)}` }));
  }
  return scripts;
}

let cache: ReadonlyMap<string, LuaScript> | undefined;
let transportCache: ReadonlyMap<string, LuaScript> | undefined;
let limitsCache: ReadonlyMap<string, LuaScript> | undefined;
let gatesCache: ReadonlyMap<string, LuaScript> | undefined;
let workersCache: ReadonlyMap<string, LuaScript> | undefined;

/** Every script of the tree store, by name (read on first use). */
export function luaScripts(): ReadonlyMap<string, LuaScript> {
  cache ??= loadScripts(luaDirectory);
  return cache;
}

/**
 * The effect transport's scripts (`lua/transport/`: claims, leases, settlements, inspection). Kept apart
 * from the store's because they are transport evidence, never the record: no commit runs them.
 */
export function transportLuaScripts(): ReadonlyMap<string, LuaScript> {
  transportCache ??= loadScripts(new URL('transport/', luaDirectory));
  return transportCache;
}

/**
 * The HTTP edge's shared counters (`lua/limits/`: stream slots per API key). Apart from the store's
 * because they hold no tree state and touch no tree's keys.
 */
export function limitsLuaScripts(): ReadonlyMap<string, LuaScript> {
  limitsCache ??= loadScripts(new URL('limits/', luaDirectory));
  return limitsCache;
}

/**
 * Host-owned gates' scripts (`lua/gates/`: the cap reservation, the first answer, the close). Apart
 * from the store's because they touch no tree's keys: a gate's own slot, or the caps' `{gates}` slot.
 */
export function gateLuaScripts(): ReadonlyMap<string, LuaScript> {
  gatesCache ??= loadScripts(new URL('gates/', luaDirectory));
  return gatesCache;
}

/**
 * The worker registry's scripts (`lua/workers/`: heartbeat, live read, leave). Apart from the
 * transport's because they touch no tree's keys: the registry's own `{workers}` slot.
 */
export function workerLuaScripts(): ReadonlyMap<string, LuaScript> {
  workersCache ??= loadScripts(new URL('workers/', luaDirectory));
  return workersCache;
}

function everyScript(): LuaScript[] {
  return [...luaScripts().values(), ...transportLuaScripts().values(), ...limitsLuaScripts().values(), ...gateLuaScripts().values(), ...workerLuaScripts().values()];
}

/** One script by name, store, transport, limits, gates or worker registry; throws for an unknown name. */
export function luaScript(name: string): LuaScript {
  const script =
    luaScripts().get(name) ?? transportLuaScripts().get(name) ?? limitsLuaScripts().get(name) ?? gateLuaScripts().get(name) ?? workerLuaScripts().get(name);
  if (script === undefined) throw new Error(`no lua script ${name}; known: ${everyScript().map((known) => known.name).join(', ')}`);
  return script;
}

const registered = new WeakSet<RedisClient>();

/** Registers every script on `redis` (idempotent per client). */
export function defineScripts(redis: RedisClient): void {
  if (registered.has(redis)) return;
  for (const script of everyScript()) {
    // No fixed numberOfKeys: the caller passes the key count, so variadic scripts work too.
    redis.defineCommand(script.commandName, { lua: script.lua });
  }
  registered.add(redis);
}

type ScriptCall = (numKeys: number, ...args: (string | Buffer)[]) => Promise<unknown>;

/** Runs script `name` with `keys` and `args` (EVALSHA, EVAL on NOSCRIPT). */
export function runScript(redis: RedisClient, name: string, keys: readonly string[], args: readonly (string | Buffer)[]): Promise<unknown> {
  const script = luaScript(name);
  if (keys.length < script.numKeys || (!script.variadicKeys && keys.length !== script.numKeys)) {
    throw new Error(`lua script ${name} takes ${script.numKeys}${script.variadicKeys ? ' or more' : ''} keys, got ${keys.length}`);
  }
  defineScripts(redis);
  const call = (redis as unknown as Record<string, ScriptCall>)[script.commandName] as ScriptCall;
  return call.call(redis, keys.length, ...keys, ...args);
}

/** What {@link runScriptThenWait} answers: the script's reply and how many replicas acknowledged. */
export interface WaitedReply {
  readonly reply: unknown;
  readonly acknowledged: number;
}

function isNoScript(error: unknown): boolean {
  return error instanceof Error && error.message.startsWith('NOSCRIPT');
}

/**
 * Runs script `name`, then `WAIT <replicas> <timeoutMs>`, as one pipeline: both on the same
 * connection, in that order (on a cluster, on the master of the keys' slot), so WAIT counts the
 * replicas that hold the script's writes. The pipeline uses EVALSHA and, when the server does not
 * know the script, sends the pair again with EVAL: a NOSCRIPT answered to the first must not leave
 * a WAIT that ran before the write. A WAIT that fails is an error (the script's outcome is unknown
 * to the caller's guarantee).
 */
export async function runScriptThenWait(
  redis: RedisClient,
  name: string,
  keys: readonly string[],
  args: readonly (string | Buffer)[],
  wait: { readonly replicas: number; readonly timeoutMs: number },
): Promise<WaitedReply> {
  const script = luaScript(name);
  if (keys.length < script.numKeys || (!script.variadicKeys && keys.length !== script.numKeys)) {
    throw new Error(`lua script ${name} takes ${script.numKeys}${script.variadicKeys ? ' or more' : ''} keys, got ${keys.length}`);
  }
  const send = async (command: 'evalsha' | 'eval'): Promise<[Error | null, unknown][]> => {
    const pipeline = redis.pipeline();
    if (command === 'evalsha') pipeline.evalsha(script.sha, keys.length, ...keys, ...args);
    else pipeline.eval(script.lua, keys.length, ...keys, ...args);
    pipeline.wait(wait.replicas, wait.timeoutMs);
    return ((await pipeline.exec()) ?? []) as [Error | null, unknown][];
  };
  let results = await send('evalsha');
  if (isNoScript(results[0]?.[0])) results = await send('eval');
  const [scriptResult, waitResult] = results;
  if (scriptResult === undefined || waitResult === undefined) throw new Error(`lua script ${name}: the pipeline answered ${results.length} replies, want 2`);
  if (scriptResult[0] !== null) throw scriptResult[0];
  if (waitResult[0] !== null) throw waitResult[0];
  const acknowledged = waitResult[1];
  if (typeof acknowledged !== 'number') throw new Error(`WAIT answered ${String(acknowledged)}`);
  return { reply: scriptResult[1], acknowledged };
}
