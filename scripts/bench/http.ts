import { cpus } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { startBenchServer } from './scope-serve.js';
import { createKey } from '../../src/app/auth/key-store.js';
import { startRedisServer, type RedisServer } from '../../test/helpers/redis-server.js';

/**
 * HTTP benchmark: demo.echo start → result over HTTP, as a client sees it. Each sample is one process:
 * `POST /v1/processes` then `GET /v1/processes/{id}/result?waitMs=60000` until the terminal result
 * arrives; latency is the whole round trip. The server is the real `scope serve` (bin/scope.js) in its
 * own Node process on loopback, once embedded (memory committer and log) and once in Redis mode (a
 * private redis-server on a free port); the load comes from this process with fetch (keep-alive).
 *
 * For 1 and 32 concurrent clients (each runs its processes back to back): p50/p99 latency and
 * processes/s over `BENCH_HTTP_SECONDS` (default 3), after a 1 s warm-up at the same concurrency
 * (the first second at 32 clients is dominated by JIT and lazy compilation). Client and server share
 * the machine's CPUs, so the figures are a floor for a server with cores of its own.
 *
 * Each mode also runs with authentication on (`+auth`): a bearer API key on every request, the tenant
 * guard, and the rate limiter counting (its limit set out of reach; in Redis mode it counts in Redis),
 * side by side with the same mode without, so the table shows what the guards cost on the hot path.
 */

const seconds = Number(process.env.BENCH_HTTP_SECONDS ?? 3);
const clientCounts = [1, 32] as const;
/** Each row first runs this long at its own concurrency, unrecorded (JIT, pools, lazy compilation). */
const warmupSeconds = 1;
const echoValue = 'bench';

interface Cell {
  readonly mode: string;
  readonly clients: number;
  readonly processes: number;
  readonly p50: number;
  readonly p99: number;
  readonly perSecond: number;
  readonly failures: number;
}

/** One process start → result; the latency in ms, or undefined when it did not complete. */
async function roundTrip(base: string, headers: Record<string, string>): Promise<number | undefined> {
  const start = performance.now();
  const started = await fetch(`${base}/v1/processes`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ deployment: 'demo.echo', input: { value: echoValue } }),
  });
  const view = (await started.json()) as { processId?: string };
  if (started.status !== 201 || typeof view.processId !== 'string') return undefined;
  const result = await fetch(`${base}/v1/processes/${encodeURIComponent(view.processId)}/result?waitMs=60000`, { headers });
  const body = (await result.json()) as { status?: string };
  if (result.status !== 200 || body.status !== 'completed') return undefined;
  return performance.now() - start;
}

function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] as number;
}

async function measure(base: string, headers: Record<string, string>, mode: Cell['mode'], clients: number, forSeconds: number): Promise<Cell> {
  const latencies: number[] = [];
  let failures = 0;
  const began = performance.now();
  const until = began + forSeconds * 1_000;
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (performance.now() < until) {
        const latency = await roundTrip(base, headers).catch(() => undefined);
        if (latency === undefined) failures += 1;
        else latencies.push(latency);
      }
    }),
  );
  const elapsed = (performance.now() - began) / 1_000;
  latencies.sort((a, b) => a - b);
  return {
    mode,
    clients,
    processes: latencies.length,
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
    perSecond: latencies.length / elapsed,
    failures,
  };
}

async function benchMode(mode: Cell['mode'], env: Record<string, string>, headers: Record<string, string> = {}): Promise<Cell[]> {
  const server = await startBenchServer(env);
  try {
    const cells: Cell[] = [];
    for (const clients of clientCounts) {
      await measure(server.base, headers, mode, clients, warmupSeconds);
      cells.push(await measure(server.base, headers, mode, clients, seconds));
    }
    return cells;
  } finally {
    await server.stop();
  }
}

function printTable(cells: readonly Cell[]): void {
  const ms = (value: number): string => (Number.isNaN(value) ? '-' : value.toFixed(2));
  console.log(`## http: demo.echo start → result (POST /v1/processes, GET …/result?waitMs=60000), ${seconds} s per row`);
  console.log(`node ${process.version}, ${cpus().length} CPUs (${cpus()[0]?.model ?? 'unknown'}); server: bin/scope.js serve in its own process`);
  console.log(
    ['mode'.padEnd(14), 'clients'.padStart(7), 'processes'.padStart(10), 'p50 ms'.padStart(8), 'p99 ms'.padStart(8), 'processes/s'.padStart(12), 'failed'.padStart(7)].join(' '),
  );
  for (const cell of cells) {
    console.log(
      [
        cell.mode.padEnd(14),
        String(cell.clients).padStart(7),
        String(cell.processes).padStart(10),
        ms(cell.p50).padStart(8),
        ms(cell.p99).padStart(8),
        cell.perSecond.toFixed(1).padStart(12),
        String(cell.failures).padStart(7),
      ].join(' '),
    );
  }
}

export async function benchHttp(): Promise<void> {
  const directory = mkdtempSync(join(tmpdir(), 'scope-bench-http-'));
  const keysFile = join(directory, 'keys.json');
  const key = createKey({ id: 'bench', tenant: 'bench', scopes: ['processes:read', 'processes:write'] });
  writeFileSync(keysFile, JSON.stringify({ keys: [key.entry] }));
  const auth = { SCOPE_AUTH: 'keys', SCOPE_API_KEYS_FILE: keysFile, SCOPE_RATE_LIMIT: '1000000000/1m' };
  const bearer = { authorization: `Bearer ${key.token}` };
  const cells: Cell[] = [];
  let redis: RedisServer | undefined;
  try {
    cells.push(...(await benchMode('embedded', {})));
    cells.push(...(await benchMode('embedded+auth', auth, bearer)));
    redis = await startRedisServer();
    const redisEnv = { SCOPE_REDIS_URL: redis.url, SCOPE_KEY_PREFIX: `bench-http-${process.pid}` };
    cells.push(...(await benchMode('redis', redisEnv)));
    cells.push(...(await benchMode('redis+auth', { ...redisEnv, ...auth }, bearer)));
  } finally {
    await redis?.stop();
    rmSync(directory, { recursive: true, force: true });
  }
  printTable(cells);
}
