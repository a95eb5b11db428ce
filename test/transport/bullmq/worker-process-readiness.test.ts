/**
 * A process deployment whose Effects run on `scope worker` processes (SCOPE_TRANSPORT=bullmq): the
 * API's `/readyz` sees each live worker's process dispatcher keys through the worker registry, and
 * is ready only while some live worker can run the ref (the rule: src/transport/bullmq/worker-readiness.ts).
 * Real Redis, a real `scope serve` (in this process, over HTTP) and real `scope worker` children;
 * barriers are the workers' "ready" lines and polls of `/readyz`, never sleeps.
 */
import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import request from 'supertest';
import { serve, type RunningServer } from '../../../src/app/cli.js';
import { createLogger } from '../../../src/app/logger.js';
import { loadConfig } from '../../../src/server/config.js';
import { startRedisServer, type RedisServer } from '../../helpers/redis-server.js';
import { spawnScopeWorker, type WorkerChild } from '../../helpers/scope-worker.js';
import { eventually } from '../../plugins/sse-harness.js';
import { freshPrefix } from '../../server/harness.js';

const module = 'test/fixtures/process-deployments.ts';
const check = 'worker:example.shout';
let server: RedisServer;
const workers = new Set<WorkerChild>();

before(async () => {
  server = await startRedisServer();
});

after(async () => {
  await Promise.all([...workers].map((worker) => worker.kill()));
  await server?.stop();
});

/** A worker holding the fixture module; `env` also carries what the module reads (SHOUT_COMMAND). */
async function worker(prefix: string, env: Record<string, string> = {}): Promise<WorkerChild> {
  const child = await spawnScopeWorker({
    SCOPE_REDIS_URL: server.url,
    SCOPE_KEY_PREFIX: prefix,
    SCOPE_DEMOS: 'off',
    SCOPE_DEPLOYMENTS: module,
    // A dead worker leaves /readyz 300 ms after its last heartbeat.
    SCOPE_WORKER_HEARTBEAT_MS: '100',
    ...env,
  });
  workers.add(child);
  return child;
}

/** `scope serve` with the BullMQ transport and the same module, loaded with `moduleEnv` as the workers load it. */
async function api(prefix: string, moduleEnv: Record<string, string> = {}): Promise<RunningServer> {
  const saved = Object.fromEntries(Object.keys(moduleEnv).map((name) => [name, process.env[name]]));
  Object.assign(process.env, moduleEnv);
  try {
    return await serve({
      config: loadConfig({
        PORT: '0',
        HOST: '127.0.0.1',
        SCOPE_REDIS_URL: server.url,
        SCOPE_KEY_PREFIX: prefix,
        SCOPE_TRANSPORT: 'bullmq',
        SCOPE_DEMOS: 'off',
        SCOPE_DEPLOYMENTS: module,
        SCOPE_SHUTDOWN_MS: '2000',
      }),
      logger: createLogger('silent'),
    });
  } finally {
    for (const [name, value] of Object.entries(saved)) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  }
}

interface ReadyzBody {
  ready: boolean;
  checks: Record<string, string>;
  workers?: { deployment: string; ref: string; workers: { workerId: string; ready: boolean; processes: { key: string; resolvable: boolean; lastStart?: string; generations: { serial: number; state: string; leases: number; current: boolean }[]; check: string }[] }[] }[];
}

async function readyz(running: RunningServer): Promise<{ status: number; body: ReadyzBody }> {
  const response = await request(running.url).get('/readyz');
  return { status: response.status, body: response.body as ReadyzBody };
}

async function shout(running: RunningServer, text: string): Promise<{ status: string; output?: Record<string, unknown>; failure?: { message: string } }> {
  const started = await request(running.url).post('/v1/processes').send({ deployment: 'example.shout', input: { text } });
  assert.equal(started.status, 201, started.text);
  const result = await request(running.url).get(`/v1/processes/${encodeURIComponent(started.body.processId)}/result?waitMs=20000`);
  assert.equal(result.status, 200, result.text);
  return result.body;
}

const escape = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const refPattern = 'example\\.shout\\+sha256:[0-9a-f]{64}';

test('worker readiness: a worker whose command does not exist: /readyz is 503 naming the ref, the worker and the key; its failed start shows too', async () => {
  const prefix = freshPrefix();
  const missing = { SHOUT_COMMAND: '/nonexistent/shout' };
  const child = await worker(prefix, missing);
  const running = await api(prefix, missing);
  try {
    const { status, body } = await readyz(running);
    assert.equal(status, 503, JSON.stringify(body));
    assert.match(
      body.checks[check] ?? '',
      new RegExp(`^no live worker can run ${refPattern}: worker ${escape(child.workerId)}: process example\\.shout: command "/nonexistent/shout" is not an executable file$`),
    );
    assert.equal(body.workers?.length, 1);
    assert.match(body.workers?.[0]?.ref ?? '', new RegExp(`^${refPattern}$`));
    assert.deepEqual(body.workers?.[0]?.workers, [
      {
        workerId: child.workerId,
        ready: false,
        processes: [{ key: 'example.shout', resolvable: false, generations: [], check: 'command "/nonexistent/shout" is not an executable file' }],
      },
    ]);
    const metrics = (await request(running.url).get('/metrics')).text;
    assert.match(metrics, /^scope_transport_worker_process_keys\{ref="[0-9a-f]{64}",key="example\.shout",state="unresolvable"\} 1$/m);

    // The worker takes the job anyway; nothing was sent, so the Effect fails definitely, and the
    // worker's next heartbeat reports the failed start.
    const result = await shout(running, 'hello');
    assert.equal(result.status, 'failed', JSON.stringify(result));
    assert.match(result.failure?.message ?? '', /start_failed/);
    await eventually(async () => (await readyz(running)).body.workers?.[0]?.workers[0]?.processes[0]?.lastStart === 'start_failed', 'the failed start on /readyz');
  } finally {
    await running.stop();
    await child.stop();
  }
});

test('worker readiness: a good command: 200 with the key, its generation after the first Effect; the worker SIGKILLed drops out after its heartbeat TTL', async () => {
  const prefix = freshPrefix();
  const child = await worker(prefix);
  const running = await api(prefix);
  try {
    const before = await readyz(running);
    assert.equal(before.status, 200, JSON.stringify(before.body));
    assert.equal(before.body.checks[check], 'ok');
    assert.deepEqual(before.body.workers?.[0]?.workers, [
      { workerId: child.workerId, ready: true, processes: [{ key: 'example.shout', resolvable: true, generations: [], check: 'ok' }] },
    ]);

    const result = await shout(running, 'far away');
    assert.equal(result.status, 'completed', JSON.stringify(result));
    assert.equal(result.output?.ppid, child.pid, 'the worker supervises the command');
    // A heartbeat taken while the Effect ran may still be the latest: wait for the idle generation.
    const served = await eventually2(async () => {
      const key = (await readyz(running)).body.workers?.[0]?.workers[0]?.processes[0];
      return key?.generations.length === 1 && key.generations[0]?.state === 'live' && key.generations[0].leases === 0 ? key : undefined;
    }, 'the command\'s idle generation on /readyz');
    assert.equal(served.lastStart, 'started');
    assert.equal(served.check, 'ok');
    assert.deepEqual(served.generations.map(({ state, leases, current }) => ({ state, leases, current })), [{ state: 'live', leases: 0, current: true }]);
    assert.ok(Number.isInteger(served.generations[0]?.serial));
    const metrics = (await request(running.url).get('/metrics')).text;
    assert.match(metrics, /^scope_transport_worker_process_keys\{ref="[0-9a-f]{64}",key="example\.shout",state="ok"\} 1$/m);

    // No graceful leave: only the registry's expiry can take the dead worker out.
    await child.kill();
    await eventually(async () => (await readyz(running)).status === 503, '/readyz to lose the dead worker');
    const after = await readyz(running);
    assert.match(after.body.checks[check] ?? '', new RegExp(`^no live worker holds ${refPattern}$`));
    assert.deepEqual(after.body.workers?.[0]?.workers, []);
  } finally {
    await running.stop();
    await child.stop();
  }
});

test('worker readiness: one usable live worker per ref is enough; when it dies, the unusable one is named', async () => {
  // One command name resolved through each worker's PATH: the same DeploymentRef on both workers,
  // found on one machine and not on the other.
  const dir = mkdtempSync(join(tmpdir(), 'scope-readyz-'));
  const command = 'scope-test-node';
  writeFileSync(join(dir, command), `#!/bin/sh\nexec "${process.execPath}" "$@"\n`);
  chmodSync(join(dir, command), 0o755);
  const prefix = freshPrefix();
  const good = await worker(prefix, { SHOUT_COMMAND: command, PATH: `${dir}:${process.env.PATH ?? ''}` });
  const bad = await worker(prefix, { SHOUT_COMMAND: command });
  const running = await api(prefix, { SHOUT_COMMAND: command });
  try {
    const both = await readyz(running);
    assert.equal(both.status, 200, JSON.stringify(both.body));
    assert.equal(both.body.checks[check], 'ok');
    const entries = both.body.workers?.[0]?.workers ?? [];
    assert.deepEqual(
      entries.map((entry) => [entry.workerId, entry.ready]).sort(),
      [
        [good.workerId, true],
        [bad.workerId, false],
      ].sort(),
      'both workers hold the ref; only one can run it',
    );

    await good.kill();
    await eventually(async () => (await readyz(running)).status === 503, '/readyz to lose the usable worker');
    const after = await readyz(running);
    assert.match(
      after.body.checks[check] ?? '',
      new RegExp(`^no live worker can run ${refPattern}: worker ${escape(bad.workerId)}: process example\\.shout: command "${command}" is not an executable file$`),
    );
  } finally {
    await running.stop();
    await Promise.all([good.stop(), bad.stop()]);
    rmSync(dir, { recursive: true, force: true });
  }
});

test('worker readiness: a command that exists but does not start: ready until its first start fails, then 503 naming the failed start', async () => {
  const prefix = freshPrefix();
  // An executable that exits at once, before the JSON-lines handshake: `start_failed`, nothing sent.
  const failing = { SHOUT_COMMAND: '/bin/false' };
  const child = await worker(prefix, failing);
  const running = await api(prefix, failing);
  try {
    const before = await readyz(running);
    assert.equal(before.status, 200, 'resolvable, never tried: nothing says it cannot run');
    const result = await shout(running, 'hello');
    assert.equal(result.status, 'failed', JSON.stringify(result));
    await eventually(async () => (await readyz(running)).status === 503, 'the failed start to make /readyz not ready');
    const after = await readyz(running);
    assert.match(
      after.body.checks[check] ?? '',
      new RegExp(`^no live worker can run ${refPattern}: worker ${escape(child.workerId)}: process example\\.shout: last start failed: (start_failed|invalid_handshake)$`),
    );
    const metrics = (await request(running.url).get('/metrics')).text;
    assert.match(metrics, /^scope_transport_worker_process_keys\{ref="[0-9a-f]{64}",key="example\.shout",state="start_failed"\} 1$/m);
  } finally {
    await running.stop();
    await child.stop();
  }
});

/** Polls `probe` until it returns a value (every 10 ms, up to 10 s). */
async function eventually2<T>(probe: () => Promise<T | undefined>, what: string): Promise<T> {
  let value: T | undefined;
  await eventually(async () => (value = await probe()) !== undefined, what);
  return value as T;
}
