import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { after, before, test } from 'node:test';
import { startRedisServer, type RedisServer } from '../helpers/redis-server.js';
import { spawnServe } from '../helpers/scope-serve.js';
import { openSse, streamPath } from '../plugins/sse-harness.js';

/**
 * A process tree survives a SIGKILLed writer in the middle of its fan-out: `scope serve` in Redis
 * mode starts demo.fanout with 20 echo children, is SIGKILLed once some (not all) children were
 * published, and a new server over the same Redis takes the tree over (once the dead server's lease
 * lapsed) and lets it finish. The
 * committed log then shows every child published exactly once (one `agent.process.started`, which
 * rides in the child's `child_start` checkpoint) and finished exactly once (one
 * `agent.process.finished`, in its terminal checkpoint): a child admission cut short by the crash
 * may run again after recovery, its publication may not.
 */

const fanout = 20;
let redis: RedisServer;
const servers: ChildProcess[] = [];

before(async () => {
  redis = await startRedisServer({ appendOnly: true, appendFsync: 'always' });
});

after(async () => {
  for (const server of servers) server.kill('SIGKILL');
  await redis?.stop();
});

async function serve(prefix: string): Promise<{ child: ChildProcess; url: string }> {
  const served = await spawnServe({
    SCOPE_REDIS_URL: redis.url,
    SCOPE_KEY_PREFIX: prefix,
    // All 20 children may be live at once (the default grant allows 16 active children).
    SCOPE_GRANTS: JSON.stringify({ treeLimits: { maxActiveChildren: 32 } }),
    // A short node lease: the crashed server's tree is ownerless, and taken over, soon after the crash.
    SCOPE_NODE_LEASE_MS: '1500',
    SCOPE_NODE_RENEW_MS: '250',
  }, (child) => servers.push(child));
  return served;
}

const post = (url: string, body: unknown) =>
  fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

interface LogEntry {
  readonly position: string;
  readonly type: string;
  readonly processId: string;
  readonly data: { readonly phase?: string };
}

/** Every entry of the tree's log, page by page. */
async function readLog(url: string, rootId: string): Promise<LogEntry[]> {
  const entries: LogEntry[] = [];
  let after = '0';
  for (;;) {
    const response = await fetch(`${url}/v1/processes/${encodeURIComponent(rootId)}/events?after=${after}&limit=1000`);
    assert.equal(response.status, 200);
    const page = (await response.json()) as { items: LogEntry[]; nextCursor: string | null };
    entries.push(...page.items);
    if (page.nextCursor === null || page.items.length === 0) return entries;
    after = page.nextCursor;
  }
}

/** How many committed entries of `type` each process has. */
function committedCounts(entries: readonly LogEntry[], type: string): Map<string, number> {
  const counts = new Map<string, number>();
  for (const entry of entries) {
    if (entry.type !== type || entry.data.phase !== 'committed') continue;
    counts.set(entry.processId, (counts.get(entry.processId) ?? 0) + 1);
  }
  return counts;
}

test(`a SIGKILL in the middle of a fan-out of ${fanout}: after restore every child is published once and finishes once`, async () => {
  const prefix = `fanoutcrash${process.pid}`;
  const first = await serve(prefix);
  const values = Array.from({ length: fanout }, (_, index) => `value-${index}`);
  const started = await post(`${first.url}/v1/processes`, { deployment: 'demo.fanout', input: { values } });
  assert.equal(started.status, 201, await started.clone().text());
  const rootId = ((await started.json()) as { processId: string }).processId;

  // The stream replays the log from its start, then follows it live: kill once two children are
  // published, while the root's frontier is still admitting the rest.
  const live = await openSse(`${first.url}${streamPath(rootId)}`);
  const published = new Set<string>();
  const seen: string[] = [];
  await live.waitFor((event) => {
    // The wire form of an event names its process `process_id` (the root's own start is not a child's).
    seen.push(`${event.id} ${event.event} ${event.data.phase} ${event.data.process_id}`);
    if (event.event === 'agent.process.started' && event.data.phase === 'committed' && event.data.process_id !== rootId) published.add(event.data.process_id as string);
    return published.size >= 2;
  }, 'two published children');
  first.child.kill('SIGKILL');
  await new Promise((resolve) => first.child.once('exit', resolve));
  live.close();

  const second = await serve(prefix);
  const crashed = await readLog(second.url, rootId);
  const publishedBefore = committedCounts(crashed, 'agent.process.started');
  publishedBefore.delete(rootId);
  assert.ok(
    publishedBefore.size >= 2,
    `the children seen on the stream are in the log: ${JSON.stringify(crashed.slice(0, 40).map((entry) => [entry.position, entry.type, entry.data.phase, entry.processId]))}; the stream showed ${JSON.stringify(seen)}`,
  );
  assert.ok(publishedBefore.size < fanout, `the crash cut the fan-out short (${publishedBefore.size} of ${fanout} children were published)`);
  assert.ok(!crashed.some((entry) => entry.type === 'agent.process.finished' && entry.processId === rootId), 'the root had not finished');

  // The crashed server's lease lapses and the live one takes the tree over; an operator's restore is
  // then the tree as it is (before that, it would be 503 owner_unreachable: the owner looked alive).
  const deadline = performance.now() + 10_000;
  while (((await (await fetch(`${second.url}/v1/trees/${encodeURIComponent(rootId)}`)).json()) as { active: boolean }).active !== true) {
    assert.ok(performance.now() < deadline, 'the tree was taken over');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const restored = await post(`${second.url}/v1/trees/${encodeURIComponent(rootId)}/restore`, {});
  assert.equal(restored.status, 200, await restored.clone().text());
  const result = (await (await fetch(`${second.url}/v1/processes/${encodeURIComponent(rootId)}/result?waitMs=30000`)).json()) as {
    status: string;
    output: { outputs: Array<{ processId: string; value: string }>; canceled: string[] };
  };
  assert.equal(result.status, 'completed', JSON.stringify(result));
  assert.deepEqual(result.output.outputs.map((entry) => entry.value), values, 'every child completed with its own value, in input order');
  const childIds = result.output.outputs.map((entry) => entry.processId);
  assert.equal(new Set(childIds).size, fanout);

  // The head: one root and its 20 children, all finished; no other process was ever created.
  const head = (await (await fetch(`${second.url}/v1/trees/${encodeURIComponent(rootId)}`)).json()) as {
    processes: Array<{ processId: string; parentId: string | null; status: string }>;
  };
  assert.equal(head.processes.length, fanout + 1);
  assert.deepEqual(head.processes.filter((entry) => entry.parentId === rootId).map((entry) => entry.processId).sort(), [...childIds].sort());
  assert.ok(head.processes.every((entry) => entry.status === 'completed'));

  const log = await readLog(second.url, rootId);
  const publications = committedCounts(log, 'agent.process.started');
  const terminals = committedCounts(log, 'agent.process.finished');
  for (const childId of childIds) {
    assert.equal(publications.get(childId), 1, `${childId} is published by exactly one child_start checkpoint`);
    assert.equal(terminals.get(childId), 1, `${childId} finishes in exactly one terminal checkpoint`);
  }
  assert.equal(publications.size, fanout + 1, 'no process other than the root and its children was published');
  assert.equal(terminals.get(rootId), 1, 'the root finishes once');
  assert.ok(log.some((entry) => entry.type === 'agent.process.restored' && entry.processId === rootId), 'the restore is in the log');

  second.child.kill('SIGTERM');
  await new Promise((resolve) => second.child.once('exit', resolve));
});
