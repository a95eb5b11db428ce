/**
 * Fixtures of the server-core tests: Hosts over a real Engine and a real committer (memory, or a
 * real Redis started by test/helpers/redis-server.ts), a stepping clock, and event barriers built
 * on the Host's own stream — tests wait for the fact they need, never for time to pass.
 */
import assert from 'node:assert/strict';
import { Redis } from 'ioredis';
import type { Clock } from '../../src/kernel/clock.js';
import { KernelError } from '../../src/kernel/errors.js';
import { loadConfig, type ServerConfig } from '../../src/server/config.js';
import { EngineHost, type EngineHostOptions } from '../../src/server/engine-host.js';
import type { EffectView, Json, LogEntry, ProcessView, StartRequest, StreamOptions } from '../../src/server/host.js';

/** A clock that advances one millisecond per reading from a fixed instant: starts are strictly ordered. */
export function steppingClock(start = Date.UTC(2030, 0, 1)): Clock {
  let now = start;
  return {
    now() {
      now += 1;
      return new Date(now);
    },
  };
}

export function testConfig(env: Record<string, string> = {}, overrides: Partial<ServerConfig> = {}): ServerConfig {
  return { ...loadConfig(env), ...overrides };
}

export function embeddedHost(options: Partial<EngineHostOptions> & { env?: Record<string, string> } = {}): EngineHost {
  const { env, ...rest } = options;
  return new EngineHost({ config: testConfig(env), defaultMetrics: false, clock: steppingClock(), ...rest });
}

let prefixes = 0;

/** A fresh key prefix per Host family, so tests sharing one redis-server never see each other. */
export function freshPrefix(): string {
  prefixes += 1;
  return `t${process.pid}-${prefixes}`;
}

export interface RedisHostOptions extends Partial<EngineHostOptions> {
  readonly url: string;
  readonly prefix: string;
  readonly env?: Record<string, string>;
}

/** A Redis-mode Host on its own client (returned, so a test can cut it to simulate a crash). */
export function redisHost(options: RedisHostOptions): { host: EngineHost; redis: Redis } {
  const { url, prefix, env, ...rest } = options;
  const redis = new Redis(url, { maxRetriesPerRequest: 1 });
  redis.on('error', () => undefined);
  const config = testConfig({ SCOPE_REDIS_URL: url, SCOPE_KEY_PREFIX: prefix, ...env });
  const host = new EngineHost({ config, redis, defaultMetrics: false, clock: steppingClock(), ...rest });
  return { host, redis };
}

/** Starts a process and returns its view (created). */
export async function start(host: EngineHost, deployment: string, input: Json, extra: Partial<StartRequest> = {}): Promise<ProcessView> {
  const outcome = await host.startProcess({ deployment, input, ...extra });
  assert.equal(outcome.created, true);
  return outcome.process;
}

/** A tree's log entries through the Host's one stream (history, then live), as plain entries. */
export async function* streamOf(host: EngineHost, rootId: string, options: StreamOptions): AsyncGenerator<LogEntry, void, undefined> {
  const stream = await host.openStream(rootId, options);
  for await (const item of stream) yield item.entry;
}

/** An entry's wire data (the log passes it through as JSON text). */
export function dataOf(entry: LogEntry): Record<string, Json> {
  return JSON.parse(entry.data) as Record<string, Json>;
}

/** Every effect of a process (one page holds them all in these tests). */
export async function effectsOf(host: EngineHost, processId: string): Promise<readonly EffectView[]> {
  const page = await host.effects(processId, { limit: 1000 });
  assert.equal(page.nextCursor, null, 'every effect fits one page');
  return page.items;
}

/**
 * Resolves with the first entry of the tree's log (from the beginning) that satisfies `predicate`:
 * a barrier on a fact, through the Host's own stream. Rejects if the stream ends first.
 */
export async function untilEntry(host: EngineHost, rootId: string, predicate: (entry: LogEntry) => boolean): Promise<LogEntry> {
  const abort = new AbortController();
  try {
    for await (const entry of streamOf(host, rootId, { signal: abort.signal })) {
      if (predicate(entry)) return entry;
    }
  } finally {
    abort.abort();
  }
  throw new Error(`the stream of ${rootId} ended without the awaited entry`);
}

/**
 * {@link untilEntry}, then a quiesce (`captureTree`): the log can run ahead of the runtime's view
 * (a committed event is in the log once the store installs its commit; the runtime installs the
 * head when the acknowledgement returns), so inspect only after this barrier.
 */
export async function untilSettled(host: EngineHost, rootId: string, predicate: (entry: LogEntry) => boolean): Promise<LogEntry> {
  const entry = await untilEntry(host, rootId, predicate);
  await host.captureTree(rootId);
  return entry;
}

/** The `count`-th committed step whose resulting status is `status`. */
export function stepCommittedWith(status: string, processId?: string, count = 1): (entry: LogEntry) => boolean {
  let seen = 0;
  return (entry) => {
    if (entry.type !== 'agent.step.committed' || (processId !== undefined && entry.processId !== processId)) return false;
    if (payloadOf(entry).status !== status) return false;
    seen += 1;
    return seen === count;
  };
}

export function ofType(type: string, processId?: string): (entry: LogEntry) => boolean {
  return (entry) => entry.type === type && (processId === undefined || entry.processId === processId);
}

/** The `payload` member of an entry's wire data. */
export function payloadOf(entry: LogEntry): Record<string, Json> {
  const data = dataOf(entry);
  return (data.payload ?? {}) as Record<string, Json>;
}

/** Every entry of a tree's stream from the beginning until it ends (the root finished and drained). */
export async function drainStream(host: EngineHost, rootId: string, after?: string): Promise<LogEntry[]> {
  const abort = new AbortController();
  const entries: LogEntry[] = [];
  for await (const entry of streamOf(host, rootId, { signal: abort.signal, ...(after === undefined ? {} : { after }) })) entries.push(entry);
  return entries;
}

/** Awaits the terminal result (long poll until it is there). */
export async function result(host: EngineHost, processId: string) {
  for (;;) {
    const poll = await host.awaitResult(processId, 60_000);
    if (poll.done) return poll.result;
  }
}

/** Asserts that `action` rejects with a KernelError of `code`; returns it. */
export async function rejectsWith(action: Promise<unknown> | (() => unknown), code: string): Promise<KernelError> {
  let caught: unknown;
  try {
    await (typeof action === 'function' ? action() : action);
  } catch (error) {
    caught = error;
  }
  assert.ok(caught instanceof KernelError, `expected a KernelError ${code}, got ${caught === undefined ? 'no error' : String(caught)}`);
  assert.equal(caught.code, code, `expected ${code}, got ${caught.code}: ${caught.message}`);
  return caught;
}
