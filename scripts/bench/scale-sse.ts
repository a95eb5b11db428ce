import { fork, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { deltaType } from '../../src/store/event-log.js';
import { RedisEventLog } from '../../src/store/redis/event-log.js';
import { eventsKey } from '../../src/store/redis/keys.js';
import { cpuMsOf } from './proc-cpu.js';
import { startBenchServer, type BenchServer } from './scope-serve.js';
import { monotonicMs, Samples, type ChildMessage, type ParentMessage } from './sse-subscribers.js';
import { startRedisServer, type RedisServer } from '../../test/helpers/redis-server.js';

/**
 * `npm run bench:scale`, SSE part (issue 12): delta fan-out through one node's shared Redis tail.
 *
 * The node is the real `scope serve` (Redis mode, its own Node process, a private redis-server). One
 * demo.approval tree waits for good; N SSE streams are opened on it (plain TCP, one socket each) by
 * `BENCH_SCALE_SSE_CLIENT_PROCS` child processes (sse-subscribers.ts, default 4), while this process
 * appends deltas to the tree's log at a fixed rate, exactly as BullMQ workers append theirs
 * (`RedisEventLog.append`, the appendLog script). Each delta carries its send time on the machine's
 * monotonic clock; the fan-out latency of a delta to a subscriber is the time from the append call to
 * the moment that subscriber's socket delivered it, so it includes Redis, the node's shared XREAD, the
 * SSE writer, loopback and the client's parse.
 *
 * Rows, side by side at each rate (`BENCH_SCALE_SSE_RATES`, default 25 and 100 deltas/s; each row
 * `BENCH_SCALE_SSE_SECONDS`, default 60, after 3 s of unmeasured deltas): the raw baseline
 * (one ioredis client in a `XREAD BLOCK` loop on the stream, no node in between), 1 SSE subscriber, N
 * SSE subscribers. `BENCH_SCALE_SSE_COMPARE=<checkout>` adds the same SSE rows against a node running
 * another checkout's server code (e.g. /work/main), in the same run. Also: how many Redis connections
 * the node holds while it serves N streams, and whether every subscriber got every delta.
 * Clients, node and Redis share the machine's CPUs (2 cores here): the figures are a ceiling on the
 * latency a node with cores of its own would show; the node's CPU time per 1 000 deliveries (from /proc)
 * is the figure that noise disturbs least. Goal: p99 ≤ 50 ms with 1 000 subscribers. Every delta
 * reaches every subscriber, so one stall of the node is a whole percent of a short run's samples: a
 * 10-second row's p99 is close to its worst delta, hence a minute per row.
 */

const seconds = Number(process.env.BENCH_SCALE_SSE_SECONDS ?? 60);
/** Deltas appended at the row's rate before the measured ones (`BENCH_SCALE_SSE_WARMUP_SECONDS`). */
const warmUpSeconds = Number(process.env.BENCH_SCALE_SSE_WARMUP_SECONDS ?? 3);
const subscribers = Number(process.env.BENCH_SCALE_SSE_SUBSCRIBERS ?? 1_000);
const rates = (process.env.BENCH_SCALE_SSE_RATES ?? process.env.BENCH_SCALE_SSE_RATE ?? '25,100').split(',').map(Number);
const clientProcesses = Math.max(1, Number(process.env.BENCH_SCALE_SSE_CLIENT_PROCS ?? 4));
const compareCheckout = process.env.BENCH_SCALE_SSE_COMPARE;
const goalP99Ms = 50;
const prefix = 'bench-scale';
const subscriberScript = join(dirname(fileURLToPath(import.meta.url)), 'sse-subscribers.ts');

interface Row {
  readonly node: string;
  readonly reader: string;
  readonly rate: number;
  readonly subscribers: number;
  readonly deltas: number;
  readonly samples: number;
  readonly missing: number;
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
  /** The node's CPU time (user + system) while the deltas were appended and delivered, per 1 000 deliveries. */
  readonly cpuMsPerThousand: number;
}

function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] as number;
}

function startNode(redis: RedisServer, keyPrefix: string, checkout?: string): Promise<BenchServer> {
  const profile = process.env.BENCH_NODE_PROF;
  return startBenchServer(
    { SCOPE_REDIS_URL: redis.url, SCOPE_KEY_PREFIX: keyPrefix, SCOPE_SSE_MAX_STREAMS: String(subscribers + 10) },
    profile === undefined ? [] : ['--cpu-prof', '--cpu-prof-dir', profile],
    checkout,
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

/** One child process of subscribers (sse-subscribers.ts), driven over IPC. */
class SubscriberProcess {
  readonly #child: ChildProcess;
  readonly #messages: ChildMessage[] = [];
  #waiter: (() => void) | undefined;

  constructor() {
    this.#child = fork(subscriberScript, [], { execArgv: ['--import', 'tsx'], serialization: 'advanced', stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    this.#child.on('message', (message: ChildMessage) => {
      this.#messages.push(message);
      this.#waiter?.();
    });
  }

  send(message: ParentMessage): void {
    this.#child.send(message);
  }

  /** The next message of the child, or undefined after `timeoutMs`. */
  async next(timeoutMs: number): Promise<ChildMessage | undefined> {
    if (this.#messages.length === 0) {
      let timer: NodeJS.Timeout | undefined;
      await new Promise<void>((resolve) => {
        this.#waiter = resolve;
        timer = setTimeout(resolve, timeoutMs);
      });
      clearTimeout(timer);
      this.#waiter = undefined;
    }
    return this.#messages.shift();
  }

  async stop(): Promise<void> {
    if (this.#child.exitCode === null) {
      const exited = once(this.#child, 'exit');
      this.#child.kill();
      await exited;
    }
  }
}

/**
 * Appends `rate` deltas a second for `duration` seconds to the tree's log, each stamped with its send
 * time — or, for a warm-up, unstamped: the subscribers count and time only stamped ones.
 */
async function appendDeltas(log: RedisEventLog, rootId: string, rate: number, duration = seconds, stamped = true): Promise<number> {
  const total = Math.round(rate * duration);
  const began = performance.now();
  for (let index = 0; index < total; index += 1) {
    const due = began + (index * 1_000) / rate;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    const data = stamped ? { process_id: rootId, index, sentAt: monotonicMs() } : { process_id: rootId, index, warmUp: true };
    log.append(rootId, [{ type: deltaType, processId: rootId, data: JSON.stringify(data) }]);
  }
  return total;
}

function rowOf(node: string, reader: string, rate: number, count: number, deltas: number, samples: Samples, received: number, cpuMs = Number.NaN): Row {
  const sorted = samples.sorted();
  return {
    cpuMsPerThousand: (cpuMs * 1000) / Math.max(1, received),
    node,
    reader,
    rate,
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
async function rawBaseline(redis: RedisServer, keyPrefix: string, log: RedisEventLog, rootId: string, rate: number): Promise<Row> {
  const reader = new Redis(redis.url, { connectionName: 'bench:raw' });
  const samples = new Samples();
  const key = eventsKey(keyPrefix, rootId);
  let lastId = (await reader.xrevrange(key, '+', '-', 'COUNT', 1))[0]?.[0] ?? '0';
  let received = 0;
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      const reply = await reader.xread('COUNT', 1000, 'BLOCK', 200, 'STREAMS', key, lastId);
      const now = monotonicMs();
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
  const deltas = await appendDeltas(log, rootId, rate);
  await waitUntil(() => received >= deltas, 5_000);
  stopped = true;
  await loop;
  reader.disconnect();
  return rowOf('-', 'raw XREAD BLOCK (1 client)', rate, 1, deltas, samples, received);
}

async function waitUntil(condition: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!condition() && performance.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
}

/**
 * `count` SSE subscribers on the node, spread over the subscriber processes, while deltas are appended at
 * `rate`; and the node's Redis connections meanwhile.
 */
async function sseFanOut(node: string, server: BenchServer, admin: Redis, log: RedisEventLog, rootId: string, count: number, rate: number): Promise<{ row: Row; connections: string }> {
  const { base } = server;
  const processes = Array.from({ length: Math.min(count, clientProcesses) }, () => new SubscriberProcess());
  try {
    // Only the deltas of this row: the streams start after what the log holds now.
    const after = await log.lastPosition(rootId);
    const url = `${base}/v1/trees/${encodeURIComponent(rootId)}/stream?types=${deltaType}&after=${after}`;
    processes.forEach((child, index) => child.send({ open: { url, count: Math.floor(count / processes.length) + (index < count % processes.length ? 1 : 0) } }));
    for (const child of processes) {
      const answer = await child.next(60_000);
      if (answer === undefined || !('ready' in answer)) throw new Error(`subscribers did not open: ${JSON.stringify(answer)}`);
    }
    const connections = await nodeConnections(admin);
    // Unmeasured first: every delta reaches every subscriber, so the first fan-outs through cold code
    // (the node's and the subscribers') would be a whole percent of a short run's samples each.
    await appendDeltas(log, rootId, rate, warmUpSeconds, false);
    const cpuBefore = cpuMsOf(server.pid);
    const deltas = await appendDeltas(log, rootId, rate);
    for (const child of processes) child.send({ expect: deltas });
    const deadline = performance.now() + 10_000;
    for (const child of processes) await child.next(Math.max(1, deadline - performance.now()));
    const cpuMs = cpuMsOf(server.pid) - cpuBefore;
    const samples = new Samples();
    let received = 0;
    for (const child of processes) {
      child.send({ collect: true });
      for (;;) {
        const answer = await child.next(30_000);
        if (answer === undefined) throw new Error('a subscriber process sent no samples');
        if ('samples' in answer) {
          samples.addAll(answer.samples);
          received += answer.received;
          break;
        }
      }
    }
    return { row: rowOf(node, 'SSE via shared tail', rate, count, deltas, samples, received, cpuMs), connections };
  } finally {
    await Promise.all(processes.map((child) => child.stop()));
  }
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
  console.log(`\n## SSE delta fan-out on one tree, ${seconds} s per row, subscribers in ${clientProcesses} client processes (latency: append → client socket)\n`);
  console.log('| node | reader | deltas/s | subscribers | deltas | samples | missing | p50 ms | p99 ms | max ms | node CPU ms / 1k deliveries |');
  console.log('|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
  for (const row of rows) {
    const cpu = Number.isFinite(row.cpuMsPerThousand) ? row.cpuMsPerThousand.toFixed(1) : '-';
    console.log(`| ${row.node} | ${row.reader} | ${row.rate} | ${row.subscribers} | ${row.deltas} | ${row.samples} | ${row.missing} | ${row.p50.toFixed(2)} | ${row.p99.toFixed(2)} | ${row.max.toFixed(1)} | ${cpu} |`);
  }
}

/** One node under test: this checkout's, or another checkout's (`BENCH_SCALE_SSE_COMPARE`). */
interface NodeUnderTest {
  readonly name: string;
  readonly keyPrefix: string;
  readonly log: RedisEventLog;
  readonly node: BenchServer;
  readonly rootId: string;
  readonly own: boolean;
}

async function nodeUnderTest(redis: RedisServer, appender: Redis, checkout: string | undefined): Promise<NodeUnderTest> {
  const keyPrefix = `${prefix}-${checkout === undefined ? 'own' : 'compare'}`;
  const log = new RedisEventLog({ redis: appender, keyPrefix });
  const node = await startNode(redis, keyPrefix, checkout);
  return { name: checkout ?? 'this checkout', keyPrefix, log, node, rootId: await waitingTree(node.base), own: checkout === undefined };
}

export async function benchScaleSse(): Promise<void> {
  const redis = await startRedisServer();
  const admin = new Redis(redis.url, { connectionName: 'bench:admin' });
  const appender = new Redis(redis.url, { connectionName: 'bench:appender' });
  const nodes: NodeUnderTest[] = [];
  try {
    // Both nodes run for the whole bench (an idle one costs nothing); their rows alternate at each
    // rate, so the machine's noise falls on both alike.
    if (compareCheckout !== undefined) nodes.push(await nodeUnderTest(redis, appender, compareCheckout));
    nodes.push(await nodeUnderTest(redis, appender, undefined));
    const rows: Row[] = [];
    let connections = '';
    for (const rate of rates) {
      for (const { name, keyPrefix, log, node, rootId, own } of nodes) {
        if (own) rows.push(await rawBaseline(redis, keyPrefix, log, rootId, rate));
        rows.push((await sseFanOut(name, node, admin, log, rootId, 1, rate)).row);
        const many = await sseFanOut(name, node, admin, log, rootId, subscribers, rate);
        rows.push(many.row);
        if (own) connections = many.connections;
      }
    }
    printTable(rows);
    console.log(`\nRedis connections of the node${nodes.length > 1 ? 's (both name theirs alike)' : ''} while serving ${subscribers} streams: ${connections}`);
    for (const row of rows.filter((candidate) => candidate.node === 'this checkout' && candidate.subscribers === subscribers)) {
      const met = row.p99 <= goalP99Ms && row.missing === 0;
      console.log(`goal: p99 ≤ ${goalP99Ms} ms with ${subscribers} subscribers at ${row.rate} deltas/s: ${met ? 'met' : 'NOT met'} (${row.p99.toFixed(2)} ms, ${row.missing} missing)`);
    }
    for (const { name, log } of nodes) if (log.failedAppends > 0) console.log(`appends lost (${name}): ${log.failedAppends}`);
  } finally {
    for (const { node, log } of nodes) {
      await node.stop();
      await log.close();
    }
    appender.disconnect();
    admin.disconnect();
    await redis.stop();
  }
}
