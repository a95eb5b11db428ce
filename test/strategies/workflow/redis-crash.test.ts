import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { after, before, test } from 'node:test';
import { startRedisServer, type RedisServer } from '../../helpers/redis-server.js';
import { spawnServe } from '../../helpers/scope-serve.js';
import { openSse, streamPath } from '../../plugins/sse-harness.js';

/**
 * A workflow survives a SIGKILLed writer in the middle of its fan-out: `scope serve` in Redis mode
 * runs example.workflow.batch over 40 values (ten windows of four demo.echo children) and is
 * SIGKILLed once a few children were published; a second server over the same Redis takes the tree
 * over when the dead server's lease lapses and lets it finish. The output equals an uninterrupted
 * run's, every child is published and finishes exactly once, and no window ever started before the
 * previous one drained — across the crash too.
 */

const values = Array.from({ length: 40 }, (_, index) => `item-${index}`);
const windowSize = 4;
let redis: RedisServer;
const servers: ChildProcess[] = [];

before(async () => {
  redis = await startRedisServer({ appendOnly: true, appendFsync: 'always' });
});

after(async () => {
  for (const server of servers) server.kill('SIGKILL');
  await redis?.stop();
});

const serve = (prefix: string) =>
  spawnServe({ SCOPE_REDIS_URL: redis.url, SCOPE_KEY_PREFIX: prefix, SCOPE_NODE_LEASE_MS: '1500', SCOPE_NODE_RENEW_MS: '250' }, (child) => servers.push(child));

const post = (url: string, body: unknown) => fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

interface LogEntry {
  readonly position: string;
  readonly type: string;
  readonly processId: string;
  readonly data: { readonly phase?: string };
}

async function readLog(url: string, rootId: string): Promise<LogEntry[]> {
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

const committed = (entries: readonly LogEntry[], type: string) => entries.filter((entry) => entry.type === type && entry.data.phase === 'committed');

async function startBatch(url: string): Promise<string> {
  const response = await post(`${url}/v1/processes`, { deployment: 'example.workflow.batch', input: { values } });
  assert.equal(response.status, 201, await response.clone().text());
  return ((await response.json()) as { processId: string }).processId;
}

async function resultOf(url: string, rootId: string): Promise<{ status: string; output: unknown }> {
  return (await (await fetch(`${url}/v1/processes/${encodeURIComponent(rootId)}/result?waitMs=30000`)).json()) as { status: string; output: unknown };
}

test('example.workflow.batch SIGKILLed mid fan-out in Redis mode: taken over, it completes with the uninterrupted output', async () => {
  const prefix = `workflowcrash${process.pid}`;
  const first = await serve(prefix);
  const rootId = await startBatch(first.url);

  const live = await openSse(`${first.url}${streamPath(rootId)}`);
  const published = new Set<string>();
  await live.waitFor((event) => {
    if (event.event === 'agent.process.started' && event.data.phase === 'committed' && event.data.process_id !== rootId) published.add(event.data.process_id as string);
    return published.size >= 6;
  }, 'six published children (the second window under way)');
  first.child.kill('SIGKILL');
  await new Promise((resolve) => first.child.once('exit', resolve));
  live.close();

  const second = await serve(prefix);
  const crashed = await readLog(second.url, rootId);
  assert.ok(!committed(crashed, 'agent.process.finished').some((entry) => entry.processId === rootId), 'the crash came before the workflow finished');
  const before = new Set(committed(crashed, 'agent.process.started').map((entry) => entry.processId));
  assert.ok(before.size - 1 < values.length, `the crash cut the fan-out short (${before.size - 1} of ${values.length} children published)`);

  const deadline = performance.now() + 15_000;
  while (((await (await fetch(`${second.url}/v1/trees/${encodeURIComponent(rootId)}`)).json()) as { active: boolean }).active !== true) {
    assert.ok(performance.now() < deadline, 'the tree was taken over');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const recovered = await resultOf(second.url, rootId);
  assert.equal(recovered.status, 'completed', JSON.stringify(recovered));

  // The same input, uninterrupted, on the live server: the same output.
  const reference = await resultOf(second.url, await startBatch(second.url));
  assert.equal(reference.status, 'completed');
  assert.deepEqual(recovered.output, reference.output);
  assert.deepEqual(recovered.output, { echoes: values, count: values.length });

  // Every child published once and finished once; window k+1 started only after window k drained.
  const log = await readLog(second.url, rootId);
  const starts = committed(log, 'agent.process.started').filter((entry) => entry.processId !== rootId);
  const finishes = committed(log, 'agent.process.finished').filter((entry) => entry.processId !== rootId);
  assert.equal(starts.length, values.length, 'each child is published exactly once');
  assert.equal(new Set(starts.map((entry) => entry.processId)).size, values.length);
  assert.equal(finishes.length, values.length, 'each child finishes exactly once');
  // Log order is commit order (a Redis stream id is not a number, so the index in the log is used).
  const position = (entry: LogEntry) => log.indexOf(entry);
  const finishedAt = new Map(finishes.map((entry) => [entry.processId, position(entry)]));
  for (let window = 1; window < values.length / windowSize; window += 1) {
    const previous = starts.slice((window - 1) * windowSize, window * windowSize).map((entry) => finishedAt.get(entry.processId) as number);
    const firstStart = position(starts[window * windowSize] as LogEntry);
    assert.ok(previous.every((finished) => finished < firstStart), `window ${window} started after window ${window - 1} drained`);
  }
  assert.equal(committed(log, 'agent.process.finished').filter((entry) => entry.processId === rootId).length, 1, 'the workflow finishes once');

  second.child.kill('SIGTERM');
  await new Promise((resolve) => second.child.once('exit', resolve));
});
