import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import request from 'supertest';
import { buildApp } from '../../src/app/app.js';
import { loadConfig } from '../../src/server/config.js';
import { EngineHost } from '../../src/server/engine-host.js';
import { startRedisServer, type RedisServer } from '../helpers/redis-server.js';
import { until } from './server.js';

/**
 * Agency for controls (issue 16): every admitted control records whether a person or the machine sent
 * it, set by the server (HTTP callers are people, as for signals) and written with the control's own
 * commit, so it is as durable as the intent: shown on the tree view, also after the tree left memory
 * and after a restart on Redis.
 */

let redis: RedisServer;
let prefixes = 0;

before(async () => {
  redis = await startRedisServer();
});

after(async () => {
  await redis?.stop();
});

async function serve(env: Record<string, string>): Promise<{ host: EngineHost; url: string; close: () => Promise<void> }> {
  const config = loadConfig({ SCOPE_SHUTDOWN_MS: '300', ...env });
  const host = new EngineHost({ config, defaultMetrics: false });
  const app = await buildApp({ host, config, logger: false });
  const url = await app.listen({ port: 0, host: '127.0.0.1' });
  return { host, url, close: () => app.close() };
}

const expected = [
  { action: 'pause', scope: 'process', agency: 'user' },
  { action: 'resume', scope: 'process', agency: 'machine' },
  { action: 'pause', scope: 'tree', agency: 'user' },
  { action: 'resume', scope: 'tree', agency: 'user' },
  { action: 'cancel', scope: 'bulk', agency: 'user' },
];

/** Five controls of one waiting demo.approval tree, each admitted (the head holds its intent). */
async function controlled(url: string, host: EngineHost): Promise<string> {
  const started = await request(url).post('/v1/processes').send({ deployment: 'demo.approval', input: { subject: 'controls' } });
  assert.equal(started.status, 201, started.text);
  const root = started.body.processId as string;
  await until(async () => (await request(url).get(`/v1/processes/${encodeURIComponent(root)}`)).body.status, (status) => status === 'waiting');
  const path = (rest: string) => `/v1/processes/${encodeURIComponent(root)}${rest}`;
  // A header cannot make a person's request the machine's (only another node's forwarding can).
  assert.equal((await request(url).post(path('/pause')).set('scope-signal-agency', 'machine').send({})).status, 202);
  await host.control(root, 'resume');
  assert.equal((await request(url).post(`/v1/trees/${encodeURIComponent(root)}/pause`).send({})).status, 202);
  assert.equal((await request(url).post(`/v1/trees/${encodeURIComponent(root)}/resume`).send({})).status, 202);
  const bulk = await request(url).post('/v1/processes:bulk').send({ filter: { deployment: 'demo.approval' }, action: 'cancel' });
  assert.equal(bulk.status, 200, bulk.text);
  assert.equal(bulk.body.affected, 1, bulk.text);
  await until(async () => (await request(url).get(path(''))).body.status, (status) => status === 'canceled');
  return root;
}

async function controlsOf(url: string, root: string): Promise<any[]> {
  const view = await until(async () => (await request(url).get(`/v1/trees/${encodeURIComponent(root)}`)).body, (body) => Array.isArray(body.controls));
  for (const entry of view.controls) {
    assert.equal(entry.processId, root);
    assert.equal(typeof entry.at, 'string');
  }
  return view.controls.map(({ action, scope, agency }: { action: string; scope: string; agency: string }) => ({ action, scope, agency }));
}

test('embedded: each admitted control records its agency with its commit, on the tree view in memory and from the store', async () => {
  const server = await serve({});
  try {
    const root = await controlled(server.url, server.host);
    assert.deepEqual(await controlsOf(server.url, root), expected);
    // Out of memory: read back from what the commits wrote beside the head.
    assert.equal((await request(server.url).delete(`/v1/trees/${encodeURIComponent(root)}`)).status, 204);
    const stored = (await request(server.url).get(`/v1/trees/${encodeURIComponent(root)}`)).body;
    assert.equal(stored.active, false);
    assert.deepEqual(await controlsOf(server.url, root), expected);
  } finally {
    await server.close();
  }
});

test('redis: the agency of every control survives a restart of the server', async () => {
  prefixes += 1;
  const env = { SCOPE_REDIS_URL: redis.url, SCOPE_KEY_PREFIX: `ctl${process.pid}x${prefixes}` };
  const first = await serve(env);
  let root: string;
  try {
    root = await controlled(first.url, first.host);
    assert.deepEqual(await controlsOf(first.url, root), expected);
  } finally {
    await first.close();
  }
  const second = await serve(env);
  try {
    assert.deepEqual(await controlsOf(second.url, root), expected);
  } finally {
    await second.close();
  }
});
