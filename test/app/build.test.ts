import assert from 'node:assert/strict';
import { spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { startRedisServer, type RedisServer } from '../helpers/redis-server.js';
import { spawnServe } from '../helpers/scope-serve.js';
import { spawnScopeWorker, type WorkerChild } from '../helpers/scope-worker.js';

/**
 * `npm run build` makes a server that runs on plain Node, with no TypeScript loader: what
 * `npm run start:dist` and `worker:dist` start. The build goes to its own folder inside the checkout
 * (its imports resolve from the checkout's node_modules), made the way `npm run build` makes dist/,
 * and is removed afterwards. Every asset the server reads at run time must be there: the Lua scripts
 * (Redis mode), the scripted model's conversation, the console bundle.
 */

const root = new URL('../..', import.meta.url).pathname;
const outDir = join(root, 'test-artifacts', `build-${process.pid}`);
const entry = join(outDir, 'src/app/cli.js');
const children: ChildProcess[] = [];
let redis: RedisServer | undefined;

before(() => {
  const compiled = spawnSync(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json', '--outDir', outDir], { cwd: root, encoding: 'utf8' });
  assert.equal(compiled.status, 0, `tsc failed:\n${compiled.stdout}${compiled.stderr}`);
  const copied = spawnSync(process.execPath, ['scripts/build-assets.mjs', outDir], { cwd: root, encoding: 'utf8' });
  assert.equal(copied.status, 0, `build-assets failed:\n${copied.stdout}${copied.stderr}`);
});

after(async () => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  await redis?.stop();
  rmSync(outDir, { recursive: true, force: true });
});

async function echo(url: string, value: unknown): Promise<unknown> {
  const started = await fetch(`${url}/v1/processes`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ deployment: 'demo.echo', input: { value } }) });
  assert.equal(started.status, 201, await started.clone().text());
  const { processId } = (await started.json()) as { processId: string };
  const result = await fetch(`${url}/v1/processes/${encodeURIComponent(processId)}/result?waitMs=10000`);
  const body = (await result.json()) as { status: string; output: unknown };
  assert.equal(body.status, 'completed', JSON.stringify(body));
  return body.output;
}

test('the build holds every run-time asset beside its JavaScript', () => {
  for (const asset of ['src/store/redis/lua/commitCheckpoint-5.lua', 'src/server/examples/research-script.json', 'plugins/console/dist/index.html']) {
    assert.ok(existsSync(join(outDir, asset)), `${asset} is missing from the build`);
  }
  assert.ok(existsSync(entry));
});

test('embedded: the compiled server runs demo.echo, the scripted agent and the console with no loader', async () => {
  const { child, url } = await spawnServe({}, (spawned) => children.push(spawned), entry);
  try {
    assert.deepEqual(await echo(url, 'compiled'), { value: 'compiled' });
    const page = await fetch(`${url}/`);
    assert.equal(page.status, 200);
    const html = await page.text();
    const script = /src="([^"]+\.js)"/.exec(html)?.[1];
    assert.ok(script !== undefined, 'the console page names its bundle');
    assert.equal((await fetch(new URL(script, `${url}/`))).status, 200, 'the console bundle is served');
    // The scripted research agent reads its conversation from the build's examples.
    const agent = await fetch(`${url}/v1/processes`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ deployment: 'example.agent.research', input: { task: 'What is durable execution?' } }) });
    assert.equal(agent.status, 201, await agent.clone().text());
  } finally {
    child.kill('SIGTERM');
  }
});

test('the compiled server refuses a TypeScript deployments module, saying why, and exits', () => {
  const run = spawnSync(process.execPath, [entry, 'serve'], {
    cwd: root,
    env: { PATH: process.env.PATH ?? '', PORT: '0', SCOPE_DEPLOYMENTS: 'test/fixtures/never-sleep-deployments.ts' },
    encoding: 'utf8',
    timeout: 30_000,
  });
  assert.notEqual(run.status, 0);
  assert.match(run.stdout + run.stderr, /the compiled server loads JavaScript only: compile the module, or run `npm start`/);
});

test('Redis mode: the compiled server loads its Lua scripts and a compiled worker runs the Effects', async () => {
  redis = await startRedisServer();
  const env = { SCOPE_REDIS_URL: redis.url, SCOPE_KEY_PREFIX: 'built', SCOPE_TRANSPORT: 'bullmq' };
  let worker: WorkerChild | undefined;
  const { child, url } = await spawnServe(env, (spawned) => children.push(spawned), entry);
  try {
    worker = await spawnScopeWorker(env, entry);
    children.push(worker.child);
    assert.deepEqual(await echo(url, 'over redis'), { value: 'over redis' });
    assert.match(worker.output(), /scope worker ready/);
  } finally {
    child.kill('SIGTERM');
    await worker?.stop();
  }
});
