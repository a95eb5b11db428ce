import { performance } from 'node:perf_hooks';
import type { ChildProcess } from 'node:child_process';
import { Redis } from 'ioredis';
import { loadConfig } from '../../src/server/config.js';
import { EngineHost } from '../../src/server/engine-host.js';
import { startRedisServer } from '../../test/helpers/redis-server.js';
import { spawnServe } from '../../test/helpers/scope-serve.js';

/**
 * The Redis inbox at scale (issue 12): `GET /v1/waits` with BENCH_INBOX_WAITS (default 10,000) open
 * waits, one demo.approval tree each. An in-process Host starts the trees and closes; then a real
 * `scope serve` that never held any of them answers `/v1/waits` over HTTP. The first request is cold
 * (every head parsed); later ones read each head's digest (one HMGET per tree) and reuse what they
 * parsed. Printed: trees, listed waits, cold ms, warm p50/p99 ms; and the same for the Host call
 * alone (no HTTP, no JSON), on the Host that started the trees.
 */

const waits = Number(process.env.BENCH_INBOX_WAITS ?? 10_000);
const warmRuns = Number(process.env.BENCH_INBOX_RUNS ?? 20);
const startConcurrency = 32;

function percentile(samples: readonly number[], p: number): number {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] as number;
}

async function timed<T>(run: () => Promise<T>): Promise<{ ms: number; value: T }> {
  const started = performance.now();
  const value = await run();
  return { ms: performance.now() - started, value };
}

export async function benchInbox(): Promise<void> {
  const server = await startRedisServer();
  const prefix = 'bench-inbox';
  const redis = new Redis(server.url);
  const host = new EngineHost({ config: { ...loadConfig({ SCOPE_REDIS_URL: server.url, SCOPE_KEY_PREFIX: prefix }) }, redis, defaultMetrics: false });
  let child: ChildProcess | undefined;
  try {
    const filling = performance.now();
    let next = 0;
    await Promise.all(
      Array.from({ length: startConcurrency }, async () => {
        while (next < waits) {
          next += 1;
          await host.startProcess({ deployment: 'demo.approval', input: { subject: `bench ${next}` } });
        }
      }),
    );
    // Every tree has committed its wait once the Host lists them all.
    for (;;) {
      if ((await host.waits()).length >= waits) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    console.log(`filled ${waits} waiting trees in ${((performance.now() - filling) / 1000).toFixed(1)} s`);

    const hostCold = await timed(() => host.waits());
    const hostWarm: number[] = [];
    for (let run = 0; run < warmRuns; run += 1) hostWarm.push((await timed(() => host.waits())).ms);

    const served = await spawnServe({ SCOPE_REDIS_URL: server.url, SCOPE_KEY_PREFIX: prefix }, (spawned) => {
      child = spawned;
    });
    const fetchWaits = async (): Promise<number> => ((await (await fetch(`${served.url}/v1/waits`)).json()) as { items: unknown[] }).items.length;
    const httpCold = await timed(fetchWaits);
    const httpWarm: number[] = [];
    for (let run = 0; run < warmRuns; run += 1) httpWarm.push((await timed(fetchWaits)).ms);

    console.log('| path | trees | listed | cold ms | warm p50 ms | warm p99 ms |');
    console.log('|------|------:|-------:|--------:|------------:|------------:|');
    console.log(`| Host.waits() (in process) | ${waits} | ${hostCold.value.length} | ${hostCold.ms.toFixed(0)} | ${percentile(hostWarm, 50).toFixed(0)} | ${percentile(hostWarm, 99).toFixed(0)} |`);
    console.log(`| GET /v1/waits (another node, HTTP) | ${waits} | ${httpCold.value} | ${httpCold.ms.toFixed(0)} | ${percentile(httpWarm, 50).toFixed(0)} | ${percentile(httpWarm, 99).toFixed(0)} |`);
  } finally {
    child?.kill('SIGKILL');
    await host.close(1_000).catch(() => undefined);
    redis.disconnect();
    await server.stop();
  }
}
