import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import request from 'supertest';
import { serve, type RunningServer } from '../../src/app/cli.js';
import { createLogger } from '../../src/app/logger.js';
import { ProcessDispatchers } from '../../src/app/process-dispatchers.js';
import { loadConfig } from '../../src/server/config.js';
import { echoDefinition } from '../../strategies/demo/echo.js';

const module = 'test/fixtures/process-deployments.ts';
const base = { command: process.execPath, args: ['shout.mjs'], env: { A: '1' }, replayPolicy: 'same_identity', requestTimeoutMs: 1_000 } as const;

/** Serves the fixture module; `moduleEnv` is what the module itself reads from the environment while it loads. */
async function serveWith(moduleEnv: Record<string, string>): Promise<RunningServer> {
  const saved = Object.fromEntries(Object.keys(moduleEnv).map((name) => [name, process.env[name]]));
  Object.assign(process.env, moduleEnv);
  try {
    return await serve({ config: loadConfig({ PORT: '0', HOST: '127.0.0.1', SCOPE_DEMOS: 'off', SCOPE_DEPLOYMENTS: module, SCOPE_SHUTDOWN_MS: '2000' }), logger: createLogger('silent') });
  } finally {
    for (const [name, value] of Object.entries(saved)) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  }
}

async function run(url: string, text: string): Promise<{ status: string; output?: Record<string, unknown>; failure?: { code: string; message: string } }> {
  const started = await request(url).post('/v1/processes').send({ deployment: 'example.shout', input: { text } });
  assert.equal(started.status, 201, started.text);
  const result = await request(url).get(`/v1/processes/${encodeURIComponent(started.body.processId)}/result?waitMs=20000`);
  assert.equal(result.status, 200, result.text);
  return result.body;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function metric(text: string, name: string): number {
  const line = text.split('\n').find((entry) => entry.startsWith(name));
  return line === undefined ? 0 : Number(line.slice(line.lastIndexOf(' ') + 1));
}

describe('process deployments: the command configuration is the DeploymentRef', () => {
  const definition = echoDefinition;
  const implementationDigest = ProcessDispatchers.configurationDigest(base);
  const refOf = (options: Partial<Parameters<ProcessDispatchers['deployment']>[0]>): string =>
    new ProcessDispatchers().deployment({ definition, implementationDigest, process: base, ...options }).ref.toString();

  test('args, env and secret names change the ref; secret values do not', () => {
    const plain = refOf({});
    assert.notEqual(refOf({ process: { ...base, args: ['other.mjs'] } }), plain, 'args');
    assert.notEqual(refOf({ process: { ...base, env: { A: '2' } } }), plain, 'env values');
    assert.notEqual(refOf({ process: { ...base, replayPolicy: 'never' } }), plain, 'replay policy');
    const secret = refOf({ secrets: { TOKEN: 'one' } });
    assert.notEqual(secret, plain, 'a secret variable is part of the configuration by name');
    assert.equal(refOf({ secrets: { TOKEN: 'two' } }), secret, 'rotating its value keeps every tree\'s ref');
  });

  test('a secret named like a configured variable, or an invalid one, is refused', () => {
    assert.throws(() => refOf({ secrets: { A: 'x' } }), /both in env and in secrets/);
    assert.throws(() => refOf({ secrets: { 'BAD=NAME': 'x' } }));
    assert.throws(() => refOf({ process: { ...base, requestTimeoutMs: 0 } }), /requestTimeoutMs/);
  });
});

describe('process deployments: scope serve runs a supervised command', () => {
  test('effects run in one long-lived command that gets the secret; /readyz and /metrics show the key; stop ends the command', async () => {
    const running = await serveWith({ SHOUT_TOKEN: 'sekret' });
    let pid: number | undefined;
    try {
      const first = await run(running.url, 'hello');
      assert.equal(first.status, 'completed', JSON.stringify(first));
      assert.equal(first.output?.text, 'HELLO!');
      assert.equal(first.output?.secretLength, 'sekret'.length, 'the secret reached the command');
      assert.equal(first.output?.ppid, process.pid, 'this server supervises the command');
      pid = first.output?.pid as number;
      const second = await run(running.url, 'again');
      assert.equal(second.output?.pid, pid, 'the second Effect reuses the live command');

      const readiness = await request(running.url).get('/readyz');
      assert.equal(readiness.status, 200, readiness.text);
      const keys = Object.keys(readiness.body.checks).filter((name) => name.startsWith('process:'));
      assert.equal(keys.length, 1, JSON.stringify(readiness.body));
      assert.equal(readiness.body.checks[keys[0] as string], 'ok');

      const metrics = (await request(running.url).get('/metrics')).text;
      assert.equal(metric(metrics, 'scope_process_spawns_total{'), 1);
      assert.equal(metric(metrics, 'scope_process_dispatches_total{key='), 2);
      assert.match(metrics, /scope_process_generations\{key="[^"]+",state="live"\} 1/);
      assert.ok(isAlive(pid));
    } finally {
      await running.stop();
    }
    assert.equal(isAlive(pid as number), false, 'the server stops its commands');
  });

  test('a failed answer is a definite failure of the process', async () => {
    const running = await serveWith({});
    try {
      const result = await run(running.url, 'fail');
      assert.equal(result.status, 'failed');
      assert.equal(result.failure?.code, 'example.shout.failed');
      assert.match(result.failure?.message ?? '', /shout\.refused/);
    } finally {
      await running.stop();
    }
  });

  test('a command that does not exist: not ready, and the Effect fails definitely with start_failed (nothing was sent)', async () => {
    const running = await serveWith({ SHOUT_COMMAND: '/nonexistent/shout' });
    try {
      const before = await request(running.url).get('/readyz');
      assert.equal(before.status, 503);
      const name = Object.keys(before.body.checks).find((check) => check.startsWith('process:')) as string;
      assert.match(before.body.checks[name], /not an executable file/);
      const result = await run(running.url, 'hello');
      assert.equal(result.status, 'failed', JSON.stringify(result));
      assert.match(result.failure?.message ?? '', /start_failed/);
      const metrics = (await request(running.url).get('/metrics')).text;
      assert.equal(metric(metrics, 'scope_process_start_failures_total{'), 1);
      assert.match((await request(running.url).get('/readyz')).body.checks[name], /not an executable file/);
    } finally {
      await running.stop();
    }
  });
});
