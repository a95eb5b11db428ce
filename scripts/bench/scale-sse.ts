import { Agent, get, type IncomingMessage } from 'node:http';
import { performance } from 'node:perf_hooks';
import { Redis } from 'ioredis';
import { deltaType } from '../../src/store/event-log.js';
import { RedisEventLog } from '../../src/store/redis/event-log.js';
import { eventsKey } from '../../src/store/redis/keys.js';
import { startBenchServer, type BenchServer } from './scope-serve.js';
import { startRedisServer, type RedisServer } from '../../test/helpers/redis-server.js';

/**
 * `npm run bench:scale`, SSE part (issue 12): delta fan-out through one node's shared Redis tail.
 *
 * The node is the real `scope serve` (Redis mode, its own Node process, a private redis-server). One
 * demo.approval tree waits for good; this process opens N SSE streams on it (raw HTTP, one socket
 * each) and appends deltas to the tree's log at a fixed rate, exactly as BullMQ workers append
 * theirs (`RedisEventLog.append`, the appendLog script). Each delta carries its send time; the
 * fan-out latency of a delta to a subscriber is the time from the append call to the moment that
 * subscriber's socket delivered it, so it includes Redis, the node's shared XREAD, the SSE writer,
 * loopback and the client's parse. Subscribers and appender share this process's clock.
 *
 * Rows, side by side at the same rate: the raw baseline (one ioredis client in a `XREAD BLOCK` loop
 * on the stream, no node in between), 1 SSE subscriber, N SSE subscribers. Also: how many Redis
 * connections the node holds while it serves N streams, and whether every subscriber got every delta.
 * Client, node and Redis share the machine's CPUs: the figures are a ceiling on the latency a node
 * with cores of its own would show. Goal: p99 ≤ 50 ms with 1 000 subscribers at 100 deltas/s.
 */

const seconds = Number(process.env.BENCH_SCALE_SSE_SECONDS ?? 10);
const subscribers = Number(process.env.BENCH_SCALE_SSE_SUBSCRIBERS ?? 1_000);
const rate = Number(process.env.BENCH_SCALE_SSE_RATE ?? 100);
const goalP99Ms = 50;
const prefix = 'bench-scale';

interface Row {
  readonly reader: string;
  readonly subscribers: number;
  readonly deltas: number;
  readonly samples: number;
  readonly missing: number;
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
}

/** Latency samples (ms), preallocated: N subscribers × deltas can run into millions. */
class Samples {
  #values = new Float64Array(1 << 16);
  #length = 0;

  add(value: number): void {
    if (this.#length === this.#values.length) {
      const grown = new Float64Array(this.#values.length * 2);
      grown.set(this.#values);
      this.#values = grown;
    }
    this.#values[this.#length] = value;
    this.#length += 1;
  }

  get length(): number {
    return this.#length;
  }

  sorted(): Float64Array {
    return this.#values.slice(0, this.#length).sort();
  }
}

function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] as number;
}

function startNode(redis: RedisServer): Promise<BenchServer> {
  const profile = process.env.BENCH_NODE_PROF;
  return startBenchServer(
    { SCOPE_REDIS_URL: redis.url, SCOPE_KEY_PREFIX: prefix, SCOPE_SSE_MAX_STREAMS: String(subscribers + 10) },
    profile === undefined ? [] : ['--cpu-prof', '--cpu-prof-dir', profile],
  );
}

/** A demo.approval tree that waits (its stream stays open): its root id. */
async function waitingTree(base: string): Promise<string> {
  const started = await fetch(`${base}/v1/processes`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ deployment: 'demo.approval', input: { subject: 'bench' } }),
  });
  const rootId = ((await started.json()) as { processId: string }).processId;
  for (;;) {
    const view = (await (await fetch(`${base}/v1/processes/${encodeURIComponent(rootId)}`)).json()) as { status: string };
    if (view.status === 'waiting') return rootId;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const sentAtPattern = /"sentAt":([0-9.]+)/g;

/**
 * One SSE subscriber over a raw socket: every delta's latency into `samples` as its message arrives;
 * `ready` resolves at the first byte (the stream is open and past its history).
 */
function subscribe(base: string, rootId: string, after: string, agent: Agent, samples: Samples): { ready: Promise<void>; received: () => number; close(): void } {
  let received = 0;
  let carry = '';
  let request: ReturnType<typeof get> | undefined;
  const ready = new Promise<void>((resolve, reject) => {
    request = get(`${base}/v1/trees/${encodeURIComponent(rootId)}/stream?types=${deltaType}&after=${after}`, { agent, headers: { accept: 'text/event-stream' } }, (response: IncomingMessage) => {
      if (response.statusCode !== 200) {
        reject(new Error(`stream answered ${response.statusCode}`));
        return;
      }
      response.setEncoding('utf8');
      response.once('data', () => resolve());
      response.on('data', (chunk: string) => {
        const now = performance.now();
        const text = carry + chunk;
        const end = text.lastIndexOf('\n\n');
        if (end < 0) {
          carry = text;
          return;
        }
        carry = text.slice(end + 2);
        for (const match of text.slice(0, end).matchAll(sentAtPattern)) {
          samples.add(now - Number(match[1]));
          received += 1;
        }
      });
    });
    request.on('error', reject);
  });
  return { ready, received: () => received, close: () => request?.destroy() };
}

/** Appends `rate` deltas a second for `seconds` to the tree's log, each stamped with its send time. */
async function appendDeltas(log: RedisEventLog, rootId: string): Promise<number> {
  const total = Math.round(rate * seconds);
  const began = performance.now();
  for (let index = 0; index < total; index += 1) {
    const due = began + (index * 1_000) / rate;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    log.append(rootId, [{ type: deltaType, processId: rootId, data: JSON.stringify({ process_id: rootId, index, sentAt: performance.now() }) }]);
  }
  return total;
}

function rowOf(reader: string, count: number, deltas: number, samples: Samples, received: number): Row {
  const sorted = samples.sorted();
  return {
    reader,
    subscribers: count,
    deltas,
    samples: sorted.length,
    missing: count * deltas - received,
    p50: percentile(sorted, 50),
    p99: percentile(sorted, 99),
    max: sorted.at(-1) ?? Number.NaN,
  };
}

/** The raw baseline: one client, `XREAD BLOCK` in a loop on the tree's stream. */
async function rawBaseline(redis: RedisServer, log: RedisEventLog, rootId: string): Promise<Row> {
  const reader = new Redis(redis.url, { connectionName: 'bench:raw' });
  const samples = new Samples();
  const key = eventsKey(prefix, rootId);
  let lastId = (await reader.xrevrange(key, '+', '-', 'COUNT', 1))[0]?.[0] ?? '0';
  let received = 0;
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      const reply = await reader.xread('COUNT', 1000, 'BLOCK', 200, 'STREAMS', key, lastId);
      const now = performance.now();
      for (const [, entries] of reply ?? []) {
        for (const [id, fields] of entries) {
          lastId = id;
          const data = fields[fields.indexOf('delta') + 1] ?? '';
          const sentAt = Number(/"sentAt":([0-9.]+)/.exec(data)?.[1]);
          if (Number.isFinite(sentAt)) {
            samples.add(now - sentAt);
            received += 1;
          }
        }
      }
    }
  })();
  const deltas = await appendDeltas(log, rootId);
  await waitUntil(() => received >= deltas, 5_000);
  stopped = true;
  await loop;
  reader.disconnect();
  return rowOf('raw XREAD BLOCK (1 client)', 1, deltas, samples, received);
}

async function waitUntil(condition: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!condition() && performance.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
}

/** `count` SSE subscribers on the node while deltas are appended; and the node's Redis connections meanwhile. */
async function sseFanOut(base: string, admin: Redis, log: RedisEventLog, rootId: string, count: number): Promise<{ row: Row; connections: string }> {
  const agent = new Agent({ keepAlive: false, maxSockets: Number.POSITIVE_INFINITY });
  const samples = new Samples();
  const clients: ReturnType<typeof subscribe>[] = [];
  // Only the deltas of this row: the streams start after what the log holds now.
  const after = await log.lastPosition(rootId);
  // Open in batches, so the node's accept queue and the stream cap's "opening" count stay modest.
  for (let at = 0; at < count; at += 100) {
    const batch = Array.from({ length: Math.min(100, count - at) }, () => subscribe(base, rootId, after, agent, samples));
    await Promise.all(batch.map((client) => client.ready));
    clients.push(...batch);
  }
  const connections = await nodeConnections(admin);
  const deltas = await appendDeltas(log, rootId);
  const received = (): number => clients.reduce((total, client) => total + client.received(), 0);
  await waitUntil(() => received() >= count * deltas, 10_000);
  for (const client of clients) client.close();
  agent.destroy();
  return { row: rowOf(`SSE via shared tail`, count, deltas, samples, received()), connections };
}

/** The node's Redis connections by name (`scope-…`), e.g. `scope-api×1 scope-api-tail×1`. */
async function nodeConnections(admin: Redis): Promise<string> {
  const counts = new Map<string, number>();
  for (const line of ((await admin.client('LIST')) as string).split('\n')) {
    const name = / name=(\S+)/.exec(line)?.[1];
    if (name?.startsWith('scope-') === true) counts.set(name, (counts.get(name) ?? 0) + 1);
  }
  return [...counts].map(([name, n]) => `${name}×${n}`).join(' ');
}

function printTable(rows: readonly Row[]): void {
  console.log(`\n## SSE delta fan-out, ${rate} deltas/s on one tree for ${seconds} s (latency: append → client socket)\n`);
  console.log('| reader | subscribers | deltas | samples | missing | p50 ms | p99 ms | max ms |');
  console.log('|---|---:|---:|---:|---:|---:|---:|---:|');
  for (const row of rows) {
    console.log(`| ${row.reader} | ${row.subscribers} | ${row.deltas} | ${row.samples} | ${row.missing} | ${row.p50.toFixed(2)} | ${row.p99.toFixed(2)} | ${row.max.toFixed(1)} |`);
  }
}

export async function benchScaleSse(): Promise<void> {
  const redis = await startRedisServer();
  const admin = new Redis(redis.url, { connectionName: 'bench:admin' });
  const appender = new Redis(redis.url, { connectionName: 'bench:appender' });
  const log = new RedisEventLog({ redis: appender, keyPrefix: prefix });
  const node = await startNode(redis);
  try {
    const rootId = await waitingTree(node.base);
    const rows: Row[] = [await rawBaseline(redis, log, rootId)];
    rows.push((await sseFanOut(node.base, admin, log, rootId, 1)).row);
    const many = await sseFanOut(node.base, admin, log, rootId, subscribers);
    rows.push(many.row);
    printTable(rows);
    console.log(`\nnode's Redis connections while serving ${subscribers} streams: ${many.connections}`);
    const p99 = many.row.p99;
    console.log(`goal: p99 ≤ ${goalP99Ms} ms with ${subscribers} subscribers: ${p99 <= goalP99Ms ? 'met' : 'NOT met'} (${p99.toFixed(2)} ms)`);
    if (log.failedAppends > 0) console.log(`appends lost: ${log.failedAppends}`);
  } finally {
    await node.stop();
    await log.close();
    appender.disconnect();
    admin.disconnect();
    await redis.stop();
  }
}
