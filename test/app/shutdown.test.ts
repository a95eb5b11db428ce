import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { after, before, test } from 'node:test';
import { Redis } from 'ioredis';
import { serverPhaseShares } from '../../src/server/shutdown.js';
import { startRedisServer, type RedisServer } from '../helpers/redis-server.js';
import { spawnServe } from '../helpers/scope-serve.js';

/**
 * SIGTERM on a real `scope serve` runs the named shutdown phases in order, each within its share of
 * SCOPE_SHUTDOWN_MS. Here a commit is held by Redis (CLIENT PAUSE WRITE) when the signal arrives: the
 * phases waiting on it run out of time, are logged by name with what they left, and the process still
 * exits within the total. Meanwhile a mutation is refused 503 with Retry-After, reads are served, the
 * open SSE stream ends with the shutdown event, and repeated signals join the one teardown.
 */

const shutdownMs = 6_000;
let redis: RedisServer;
const children: ChildProcess[] = [];

before(async () => {
  redis = await startRedisServer();
});

after(async () => {
  for (const child of children) child.kill('SIGKILL');
  await redis?.stop();
});

interface LogLine {
  readonly level: number;
  readonly msg: string;
  readonly phase?: string;
  readonly left?: { committing?: string[] };
}

/** Every JSON log line the child writes from now on, and a way to wait for one. */
function follow(child: ChildProcess): { lines: LogLine[]; until(match: (line: LogLine) => boolean): Promise<LogLine> } {
  const lines: LogLine[] = [];
  const waiters: Array<{ match: (line: LogLine) => boolean; resolve: (line: LogLine) => void }> = [];
  let partial = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    partial += chunk.toString('utf8');
    const complete = partial.split('\n');
    partial = complete.pop() ?? '';
    for (const text of complete) {
      if (!text.startsWith('{')) continue;
      const line = JSON.parse(text) as LogLine;
      lines.push(line);
      for (const waiter of waiters.filter((candidate) => candidate.match(line))) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve(line);
      }
    }
  });
  return {
    lines,
    until: (match) => {
      const seen = lines.find(match);
      return seen !== undefined ? Promise.resolve(seen) : new Promise((resolve) => waiters.push({ match, resolve }));
    },
  };
}

async function post(url: string, body: unknown): Promise<Response> {
  return fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
}

/** Reads `url` again until `accept` holds (the server's own view is the barrier). */
async function until<T>(read: () => Promise<T>, accept: (value: T) => boolean, what: string): Promise<T> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const value = await read();
    if (accept(value)) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

test('SIGTERM runs the named phases in order; a phase held by a blocked commit is logged by name and the process still exits within SCOPE_SHUTDOWN_MS', { timeout: 180_000 }, async (t) => {
  const server = await spawnServe({ SCOPE_REDIS_URL: redis.url, SCOPE_KEY_PREFIX: `shutdown${process.pid}`, SCOPE_SHUTDOWN_MS: String(shutdownMs) }, (child) => children.push(child));
  const log = follow(server.child);
  const exited = new Promise<number | null>((resolve) => server.child.once('exit', (code) => resolve(code)));
  const admin = new Redis(redis.url);
  try {
    const started = await post(`${server.url}/v1/processes`, { deployment: 'demo.approval', input: { subject: 'shutdown' } });
    assert.equal(started.status, 201);
    const rootId = ((await started.json()) as { processId: string }).processId;
    const processUrl = `${server.url}/v1/processes/${encodeURIComponent(rootId)}`;
    const treeUrl = `${server.url}/v1/trees/${encodeURIComponent(rootId)}`;
    const waitId = (await until(async () => (await (await fetch(processUrl)).json()) as { waitId: string | null }, (view) => view.waitId !== null, 'the wait')).waitId as string;

    // A dispatch in flight holds settle_dispatches open for its whole bound, so the requests below
    // land while the server drains, however slowly this machine runs them.
    const sleeping = await post(`${server.url}/v1/processes`, { deployment: 'demo.sleep', input: { ms: 600_000 } });
    assert.equal(sleeping.status, 201);
    const sleepUrl = `${server.url}/v1/processes/${encodeURIComponent(((await sleeping.json()) as { processId: string }).processId)}`;
    await until(
      async () => (await (await fetch(`${sleepUrl}/effects`)).json()) as { items: Array<{ status: string }> },
      (page) => page.items.some((effect) => effect.status === 'pending'),
      'the sleep in flight',
    );

    // An open stream, read to its end in the background.
    const stream = await fetch(`${treeUrl}/stream`, { headers: { accept: 'text/event-stream' } });
    assert.equal(stream.status, 200);
    const streamText = stream.text();

    // Redis takes no writes: the answer's commit is in flight (the tree view is served from memory).
    await admin.call('CLIENT', 'PAUSE', '20000', 'WRITE');
    const answered = post(`${processUrl}/signals`, { signals: [{ id: 'answer', waitId, payload: { approved: true } }] }).catch(() => undefined);
    await until(async () => (await (await fetch(treeUrl)).json()) as { commitPending: boolean }, (tree) => tree.commitPending, 'the commit in flight');

    const signalled = performance.now();
    server.child.kill('SIGTERM');
    await log.until((line) => line.msg === 'shutdown phase settle_dispatches');
    // More signals join the teardown under way.
    server.child.kill('SIGTERM');
    server.child.kill('SIGINT');

    // Draining: a mutation is refused with a retry hint; reads are served.
    const refused = await post(`${server.url}/v1/processes`, { deployment: 'demo.echo', input: { value: 'late' } });
    assert.equal(refused.status, 503);
    assert.equal(((await refused.json()) as { code: string }).code, 'shutting_down');
    assert.equal(refused.headers.get('retry-after'), '2');
    assert.equal((await fetch(treeUrl)).status, 200);

    assert.equal(await exited, 0);
    const tookMs = performance.now() - signalled;
    t.diagnostic(`exited ${Math.round(tookMs)} ms after SIGTERM (SCOPE_SHUTDOWN_MS=${shutdownMs})`);
    // The phases' bounds add up to SCOPE_SHUTDOWN_MS; the slack is for a loaded machine's timers (the CLI's own hard stop comes 2 s later, exiting 1).
    assert.ok(tookMs < shutdownMs + 1_500, `exited ${Math.round(tookMs)} ms after SIGTERM (bound ${shutdownMs} ms)`);

    // Each phase once, in order.
    const phases = log.lines.filter((line) => line.msg.startsWith('shutdown phase ') && line.phase !== undefined && line.level === 30).map((line) => line.phase);
    assert.deepEqual(phases, Object.keys(serverPhaseShares));
    // The phase the held commit kept from finishing says so, by name, with what it left.
    const late = log.lines.find((line) => line.phase === 'finish_commits' && line.msg.includes('ran out of time'));
    assert.ok(late !== undefined, 'finish_commits reported running out of time');
    assert.deepEqual(late.left?.committing, [rootId]);
    assert.equal(log.lines.filter((line) => line.msg === 'shut down').length, 1);
    assert.equal(log.lines.filter((line) => line.msg.includes('joins it')).length, 2);

    // The open stream ended with the shutdown event, not the end of the tree.
    const text = await streamText;
    assert.match(text, /event: scope\.stream\.error\n(?:.*\n)*?data: .*"reason":"shutdown"/);
    assert.doesNotMatch(text, /event: scope\.stream\.end/);
    await answered;
  } finally {
    await admin.call('CLIENT', 'UNPAUSE').catch(() => undefined);
    admin.disconnect();
    server.child.kill('SIGKILL');
  }
});
