import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { after, before } from 'node:test';
import { openSse, streamPath } from '../plugins/sse-harness.js';
import { startRedisServer, type RedisServer } from './redis-server.js';
import { spawnServe } from './scope-serve.js';

/**
 * The parts of a "SIGKILL `scope serve` mid-run, let another server take the tree over" test: one
 * Redis (AOF, fsync always) for the file, real servers with a short node lease, and HTTP reads of a
 * tree's log, view and result.
 */

export interface Served {
  readonly child: ChildProcess;
  readonly url: string;
}

/** Registers before/after hooks: a Redis for the file; every server spawned is killed at the end. */
export function crashFixture(): { serve(prefix: string, env?: Readonly<Record<string, string>>): Promise<Served> } {
  let redis: RedisServer;
  const servers: ChildProcess[] = [];
  before(async () => {
    redis = await startRedisServer({ appendOnly: true, appendFsync: 'always' });
  });
  after(async () => {
    for (const server of servers) server.kill('SIGKILL');
    await redis?.stop();
  });
  return {
    // A short node lease: a crashed server's trees are ownerless, and taken over, soon after the crash.
    serve: (prefix, env = {}) =>
      spawnServe({ SCOPE_REDIS_URL: redis.url, SCOPE_KEY_PREFIX: prefix, SCOPE_NODE_LEASE_MS: '1500', SCOPE_NODE_RENEW_MS: '250', ...env }, (child) => servers.push(child)),
  };
}

/** Sends `signal` to the server and waits until it has exited. */
export async function stop(served: Served, signal: NodeJS.Signals): Promise<void> {
  const exited = new Promise((resolve) => served.child.once('exit', resolve));
  served.child.kill(signal);
  await exited;
}

export const post = (url: string, body: unknown): Promise<Response> =>
  fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

/** Starts a process; resolves with its id. */
export async function startProcess(url: string, deployment: string, input: unknown): Promise<string> {
  const response = await post(`${url}/v1/processes`, { deployment, input });
  assert.equal(response.status, 201, await response.clone().text());
  return ((await response.json()) as { processId: string }).processId;
}

/** The process's terminal result (a long poll of up to 30 s). */
export async function resultOf<O = unknown>(url: string, processId: string): Promise<{ status: string; output: O }> {
  return (await (await fetch(`${url}/v1/processes/${encodeURIComponent(processId)}/result?waitMs=30000`)).json()) as { status: string; output: O };
}

export interface TreeEntry {
  readonly processId: string;
  readonly parentId: string | null;
  readonly status: string;
  readonly deployment: string;
}

export async function treeOf(url: string, rootId: string): Promise<{ active: boolean; processes: TreeEntry[] }> {
  return (await (await fetch(`${url}/v1/trees/${encodeURIComponent(rootId)}`)).json()) as { active: boolean; processes: TreeEntry[] };
}

/** Resolves once the server holds the tree (the dead owner's lease lapsed and it took the tree over). */
export async function untilTakenOver(url: string, rootId: string, timeoutMs = 15_000): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while ((await treeOf(url, rootId)).active !== true) {
    assert.ok(performance.now() < deadline, 'the tree was taken over');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/**
 * Follows the tree's stream from its start and resolves once `count` children were published
 * (committed starts of processes other than the root): the moment to kill the server. The stream
 * stays open (close it after the kill, so the kill follows the moment as closely as it can).
 */
export async function untilChildrenPublished(url: string, rootId: string, count: number, seen?: string[]): Promise<{ close(): void }> {
  const live = await openSse(`${url}${streamPath(rootId)}`);
  const published = new Set<string>();
  try {
    await live.waitFor((event) => {
      seen?.push(`${event.id} ${event.event} ${event.data.phase} ${event.data.process_id}`);
      // The wire form of an event names its process `process_id` (the root's own start is not a child's).
      if (event.event === 'agent.process.started' && event.data.phase === 'committed' && event.data.process_id !== rootId) published.add(event.data.process_id as string);
      return published.size >= count;
    }, `${count} published children`);
  } catch (error) {
    live.close();
    throw error;
  }
  return live;
}

export interface LogEntry {
  readonly position: string;
  readonly type: string;
  readonly processId: string;
  readonly data: { readonly phase?: string };
}

/** Every entry of the tree's log, page by page. */
export async function readLog(url: string, rootId: string): Promise<LogEntry[]> {
  const entries: LogEntry[] = [];
  let cursor = '0';
  for (;;) {
    const response = await fetch(`${url}/v1/processes/${encodeURIComponent(rootId)}/events?after=${cursor}&limit=1000`);
    assert.equal(response.status, 200);
    const page = (await response.json()) as { items: LogEntry[]; nextCursor: string | null };
    entries.push(...page.items);
    if (page.nextCursor === null || page.items.length === 0) return entries;
    cursor = page.nextCursor;
  }
}

/** The committed entries of `type`. */
export function committed(entries: readonly LogEntry[], type: string): LogEntry[] {
  return entries.filter((entry) => entry.type === type && entry.data.phase === 'committed');
}

/** How many committed entries of `type` each process has. */
export function committedCounts(entries: readonly LogEntry[], type: string): Map<string, number> {
  const counts = new Map<string, number>();
  for (const entry of committed(entries, type)) counts.set(entry.processId, (counts.get(entry.processId) ?? 0) + 1);
  return counts;
}
