import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createKey } from '../../src/app/auth/key-store.js';
import { startRedisServer } from '../../test/helpers/redis-server.js';
import { cpuMsOf } from './proc-cpu.js';
import { spawnReady, startBenchServer, type BenchServer } from './scope-serve.js';

/**
 * `bench:compare`'s variants of Scope in Redis mode (AOF off), interleaved in rounds against the plain
 * configuration on the same load: the Effects on a `scope worker` through BullMQ (`SCOPE_TRANSPORT=bullmq`),
 * and bearer authentication on (`SCOPE_AUTH=keys`, every request carrying an API key). The load is
 * floor/load.mjs's: 1 client, each demo.echo started, then its result long-polled. CPU per process is read
 * from /proc for the server and, in the worker variant, for the worker too.
 */

export interface VariantRow {
  readonly label: string;
  readonly serverCpuMs: number;
  /** The worker's CPU per process (worker variant only). */
  readonly workerCpuMs: number | undefined;
  readonly p50: number;
  readonly p99: number;
  readonly perSecond: number;
  readonly failures: number;
}

type Variant = 'scope-redis' | 'scope-redis-worker' | 'scope-redis-auth';

const variants: readonly Variant[] = ['scope-redis', 'scope-redis-worker', 'scope-redis-auth'];

/** `total` demo.echo processes, one client: start, then long-poll the result. */
async function load(base: string, total: number, headers: Record<string, string>): Promise<{ latencies: number[]; failures: number }> {
  const latencies: number[] = [];
  let failures = 0;
  for (let index = 0; index < total; index += 1) {
    const began = performance.now();
    try {
      const started = await fetch(`${base}/v1/processes`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: JSON.stringify({ deployment: 'demo.echo', input: { value: 'bench' } }),
      });
      const view = (await started.json()) as { processId?: string };
      if (started.status !== 201 || view.processId === undefined) {
        failures += 1;
        continue;
      }
      const result = await fetch(`${base}/v1/processes/${encodeURIComponent(view.processId)}/result?waitMs=60000`, { headers });
      const body = (await result.json()) as { status?: string };
      if (result.status !== 200 || body.status !== 'completed') {
        failures += 1;
        continue;
      }
      latencies.push(performance.now() - began);
    } catch {
      failures += 1;
    }
  }
  return { latencies, failures };
}

async function runVariant(variant: Variant, total: number, keysDir: string): Promise<{ server: number; worker: number | undefined; latencies: number[]; failures: number }> {
  const redis = await startRedisServer({ appendOnly: false });
  let server: BenchServer | undefined;
  let worker: ChildProcess | undefined;
  try {
    const env: Record<string, string> = { SCOPE_REDIS_URL: redis.url, SCOPE_KEY_PREFIX: 'compare' };
    let headers: Record<string, string> = {};
    if (variant === 'scope-redis-worker') {
      env.SCOPE_TRANSPORT = 'bullmq';
      worker = await spawnReady(['bin/scope.js', 'worker'], { ...env, SCOPE_LOG_LEVEL: 'info' }, 'scope worker ready');
    } else if (variant === 'scope-redis-auth') {
      const { token, entry } = createKey({ id: 'bench', tenant: 'default', scopes: ['processes:read', 'processes:write'] });
      const file = join(keysDir, 'keys.json');
      writeFileSync(file, JSON.stringify({ keys: [entry] }));
      env.SCOPE_AUTH = 'keys';
      env.SCOPE_API_KEYS_FILE = file;
      // The limiter still runs on every request (its cost is auth's), but never refuses one: the default
      // 1200 a minute per key would answer 429 to a longer run's last requests, which then count as failures.
      env.SCOPE_RATE_LIMIT = '1000000/1m';
      headers = { authorization: `Bearer ${token}` };
    }
    server = await startBenchServer(env);
    await load(server.base, Math.max(10, Math.floor(total / 3)), headers); // warm-up
    const serverBefore = cpuMsOf(server.pid);
    const workerBefore = cpuMsOf(worker?.pid);
    const { latencies, failures } = await load(server.base, total, headers);
    const runs = Math.max(1, latencies.length);
    return {
      server: (cpuMsOf(server.pid) - serverBefore) / runs,
      worker: worker === undefined ? undefined : (cpuMsOf(worker.pid) - workerBefore) / runs,
      latencies,
      failures,
    };
  } finally {
    await server?.stop();
    if (worker !== undefined && worker.exitCode === null) {
      const exited = once(worker, 'exit');
      worker.kill('SIGTERM');
      await exited;
    }
    await redis.stop();
  }
}

/** The three configurations, `rounds` interleaved rounds of `total` processes each; rows averaged over rounds. */
export async function compareVariants(total: number, rounds: number): Promise<Map<Variant, VariantRow>> {
  const keysDir = await mkdtemp(join(tmpdir(), 'scope-bench-keys-'));
  const samples = new Map<Variant, { server: number[]; worker: number[]; latencies: number[]; failures: number }>(
    variants.map((variant) => [variant, { server: [], worker: [], latencies: [], failures: 0 }]),
  );
  try {
    for (let round = 0; round < rounds; round += 1) {
      for (const variant of variants) {
        console.error(`== variant ${variant}, round ${round + 1} of ${rounds}`);
        const run = await runVariant(variant, total, keysDir);
        const sample = samples.get(variant)!;
        sample.server.push(run.server);
        if (run.worker !== undefined) sample.worker.push(run.worker);
        sample.latencies.push(...run.latencies);
        sample.failures += run.failures;
      }
    }
  } finally {
    await rm(keysDir, { recursive: true, force: true });
  }
  const mean = (values: readonly number[]) => (values.length === 0 ? Number.NaN : values.reduce((sum, value) => sum + value, 0) / values.length);
  const quantile = (sorted: readonly number[], q: number) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))] ?? Number.NaN;
  const rows = new Map<Variant, VariantRow>();
  for (const [label, sample] of samples) {
    const sorted = [...sample.latencies].sort((a, b) => a - b);
    rows.set(label, {
      label,
      serverCpuMs: mean(sample.server),
      workerCpuMs: sample.worker.length === 0 ? undefined : mean(sample.worker),
      p50: quantile(sorted, 0.5),
      p99: quantile(sorted, 0.99),
      // One client, one process at a time: the rate is the mean latency's inverse.
      perSecond: sorted.length === 0 ? 0 : 1000 / mean(sorted),
      failures: sample.failures,
    });
  }
  return rows;
}
