import { performance } from 'node:perf_hooks';
import { Agent, request } from 'node:http';
import { Redis } from 'ioredis';
import { startBenchServer } from './scope-serve.js';
import { startRedisServer } from '../../test/helpers/redis-server.js';

/**
 * `npm run bench:scale`, hibernation part (issue 12): many parked trees on one node.
 *
 * One real `scope serve` (Redis mode, joined, its own Node process and redis-server) with a short
 * idle time. This process starts N demo.counter trees over HTTP (each parks at once, waiting for a
 * signal), waits until the node holds none of them in memory (`scope_resident_processes` empty),
 * and reads the node's resident set size (`process_resident_memory_bytes`) and Redis's memory.
 * Then, side by side on M trees picked at random: the first signal to a hibernated tree (the node
 * restores it from its head, then admits the signal: an activation commit and a signal commit) and a
 * second signal to the same tree, now resident (the signal commit alone). Latency is the HTTP round
 * trip of `POST /signals` until its 200, which the node sends once the signal's commit is acknowledged.
 * Client, node and Redis share the machine's CPUs. Goals: N = 100 000 under 1 GiB RSS, wake p50 ≤ 5 ms.
 */

const trees = Number(process.env.BENCH_SCALE_TREES ?? 100_000);
const sampled = Number(process.env.BENCH_SCALE_WAKES ?? 500);
const idleMs = Number(process.env.BENCH_SCALE_HIBERNATE_MS ?? 1_000);
const concurrency = Number(process.env.BENCH_SCALE_CLIENTS ?? 32);
const goals = { rssBytes: 1024 ** 3, wakeP50Ms: 5 };

const agent = new Agent({ keepAlive: true, maxSockets: concurrency });

/** One JSON request over a kept-alive socket (node:http: fetch's per-request cost would dominate). */
function call(base: string, method: string, path: string, body?: unknown): Promise<{ status: number; json: any }> {
  const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
  return new Promise((resolve, reject) => {
    const req = request(`${base}${path}`, { method, agent, headers: payload === undefined ? {} : { 'content-type': 'application/json', 'content-length': payload.length } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        resolve({ status: res.statusCode ?? 0, json: text === '' ? undefined : JSON.parse(text) });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(payload);
  });
}

async function metricsOf(base: string): Promise<Map<string, number>> {
  const response = await fetch(`${base}/metrics`);
  const values = new Map<string, number>();
  for (const line of (await response.text()).split('\n')) {
    if (line.startsWith('#') || line.trim() === '') continue;
    const space = line.lastIndexOf(' ');
    const name = line.slice(0, space);
    values.set(name, (values.get(name) ?? 0) + Number(line.slice(space + 1)));
  }
  return values;
}

function resident(metrics: Map<string, number>): number {
  let total = 0;
  for (const [name, value] of metrics) if (name.startsWith('scope_resident_processes')) total += value;
  return total;
}

function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
}

const mib = (bytes: number) => `${(bytes / 1024 ** 2).toFixed(0)} MiB`;

export async function benchScaleHibernation(): Promise<void> {
  const redisServer = await startRedisServer();
  const redis = new Redis(redisServer.url);
  // BENCH_SCALE_PROFILE=<dir>: the node writes a CPU profile there when it stops.
  const profile = process.env.BENCH_SCALE_PROFILE;
  const flags = profile === undefined ? [] : ['--cpu-prof', '--cpu-prof-dir', profile];
  const server = await startBenchServer({ SCOPE_REDIS_URL: redisServer.url, SCOPE_KEY_PREFIX: 'bench-hib', SCOPE_HIBERNATE_AFTER_MS: String(idleMs) }, flags);
  try {
    const base = server.base;
    const ids: string[] = new Array(trees);
    let next = 0;
    const began = performance.now();
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        for (;;) {
          const index = next++;
          if (index >= trees) return;
          const started = await call(base, 'POST', '/v1/processes', { deployment: 'demo.counter', input: { target: 1_000_000 } });
          if (started.status !== 201) throw new Error(`start ${index}: ${started.status} ${JSON.stringify(started.json)}`);
          ids[index] = started.json.processId as string;
        }
      }),
    );
    const startSeconds = (performance.now() - began) / 1000;
    console.log(`started ${trees} demo.counter trees in ${startSeconds.toFixed(1)} s (${(trees / startSeconds).toFixed(0)}/s, ${concurrency} clients)`);

    // Every tree parks after its first step; hibernation releases each once idle for `idleMs`.
    let metrics = await metricsOf(base);
    const peakRss = metrics.get('process_resident_memory_bytes') ?? Number.NaN;
    const deadline = performance.now() + 10 * idleMs + 120_000;
    while (resident(metrics) > 0) {
      if (performance.now() > deadline) throw new Error(`${resident(metrics)} processes still resident`);
      await new Promise((resolve) => setTimeout(resolve, 250));
      metrics = await metricsOf(base);
    }
    // Let the collector return what the released runtimes held before reading the resident set.
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    metrics = await metricsOf(base);
    const rss = metrics.get('process_resident_memory_bytes') ?? Number.NaN;
    const heap = metrics.get('nodejs_heap_size_used_bytes') ?? Number.NaN;
    const redisMemory = Number(/used_memory:(\d+)/.exec(await redis.info('memory'))?.[1] ?? Number.NaN);
    console.log(`hibernated: ${metrics.get('scope_trees_hibernated_total')} releases; node RSS ${mib(rss)} (heap used ${mib(heap)}; RSS while starting ${mib(peakRss)}); Redis used_memory ${mib(redisMemory)}`);

    const wakes: number[] = [];
    const residentSignals: number[] = [];
    const picked = new Set<number>();
    while (picked.size < Math.min(sampled, trees)) picked.add(Math.floor(Math.random() * trees));
    for (const index of picked) {
      const id = ids[index] as string;
      const view = await call(base, 'GET', `/v1/processes/${id}`);
      const waitId = view.json.waitId as string;
      let t0 = performance.now();
      const first = await call(base, 'POST', `/v1/processes/${id}/signals`, { signals: [{ id: 'add-1', waitId, payload: { add: 1 } }] });
      wakes.push(performance.now() - t0);
      if (first.status !== 200) throw new Error(`wake ${id}: ${first.status} ${JSON.stringify(first.json)}`);
      // The signal's step runs after the 200; the counter waits again (a new wait id) once it commits.
      let again = await call(base, 'GET', `/v1/processes/${id}`);
      while (typeof again.json.waitId !== 'string') again = await call(base, 'GET', `/v1/processes/${id}`);
      t0 = performance.now();
      const second = await call(base, 'POST', `/v1/processes/${id}/signals`, { signals: [{ id: 'add-2', waitId: again.json.waitId as string, payload: { add: 1 } }] });
      residentSignals.push(performance.now() - t0);
      if (second.status !== 200) throw new Error(`resident signal ${id}: ${second.status} ${JSON.stringify(second.json)}`);
    }
    wakes.sort((x, y) => x - y);
    residentSignals.sort((x, y) => x - y);
    const woken = (await metricsOf(base)).get('scope_trees_woken_total') ?? 0;
    console.log('');
    console.log('| signal to | samples | p50 ms | p99 ms | max ms |');
    console.log('|---|---|---|---|---|');
    console.log(`| a hibernated tree (restore + signal) | ${wakes.length} | ${percentile(wakes, 50).toFixed(2)} | ${percentile(wakes, 99).toFixed(2)} | ${(wakes.at(-1) ?? 0).toFixed(2)} |`);
    console.log(`| the same tree, resident (signal only) | ${residentSignals.length} | ${percentile(residentSignals, 50).toFixed(2)} | ${percentile(residentSignals, 99).toFixed(2)} | ${(residentSignals.at(-1) ?? 0).toFixed(2)} |`);
    console.log('');
    console.log(`wake/resident p50 ratio ${(percentile(wakes, 50) / percentile(residentSignals, 50)).toFixed(2)}×; ${woken} trees woken`);
    console.log(
      `goals: ${trees} parked trees RSS ${mib(rss)} ${rss <= goals.rssBytes ? '≤' : '>'} 1 GiB (${rss <= goals.rssBytes ? 'met' : 'NOT met'}); wake p50 ${percentile(wakes, 50).toFixed(2)} ms ${percentile(wakes, 50) <= goals.wakeP50Ms ? '≤' : '>'} 5 ms (${percentile(wakes, 50) <= goals.wakeP50Ms ? 'met' : 'NOT met'})`,
    );
  } finally {
    agent.destroy();
    await server.stop();
    redis.disconnect();
    await redisServer.stop();
  }
}
