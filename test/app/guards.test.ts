import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import request from 'supertest';
import { buildApp, type AppConfig } from '../../src/app/app.js';
import { createKey } from '../../src/app/auth/key-store.js';
import { scopeValues } from '../../src/app/auth/scopes.js';
import { loadConfig } from '../../src/server/config.js';
import { EngineHost } from '../../src/server/engine-host.js';
import { closeRedis, connectRedis, type RedisClient } from '../../src/store/redis/connection.js';
import { startRedisServer, type RedisServer } from '../helpers/redis-server.js';
import { eventually, openSse, streamPath, type SseSession } from '../plugins/sse-harness.js';

/**
 * The guards in front of the routes: the rate limit per API key (per address with auth off), the cap on
 * open streams per API key — both counted across nodes when they share Redis — and load shedding.
 */

const directory = mkdtempSync(join(tmpdir(), 'scope-guards-'));
const keysFile = join(directory, 'keys.json');
const alice = createKey({ id: 'alice', tenant: 'a', scopes: [...scopeValues] });
// One tenant: these tests are about keys (tenant isolation is tenancy.test.ts's).
const bob = createKey({ id: 'bob', tenant: 'a', scopes: [...scopeValues] });
writeFileSync(keysFile, JSON.stringify({ keys: [alice.entry, bob.entry] }));

interface Node {
  readonly app: FastifyInstance;
  readonly url: string;
  readonly port: number;
  close(): Promise<void>;
}

async function startNode(env: Record<string, string>, app: Partial<AppConfig> = {}, redis?: RedisClient): Promise<Node> {
  const config = loadConfig({ SCOPE_SHUTDOWN_MS: '300', SCOPE_AUTH: 'keys', SCOPE_API_KEYS_FILE: keysFile, ...env });
  const host = new EngineHost({ config, defaultMetrics: false });
  const built = await buildApp({ host, config: { ...config, ...app }, ...(redis === undefined ? {} : { redis }) });
  const url = await built.listen({ port: 0, host: '127.0.0.1' });
  return { app: built, url, port: Number(new URL(url).port), close: () => built.close() };
}

const bearer = (token: string): Record<string, string> => ({ authorization: `Bearer ${token}` });

async function startWaiting(node: Node, token: string): Promise<string> {
  const started = await request(node.url).post('/v1/processes').set(bearer(token)).send({ deployment: 'demo.approval', input: { subject: 'guards' } });
  assert.equal(started.status, 201, JSON.stringify(started.body));
  return started.body.rootId as string;
}

after(() => rmSync(directory, { recursive: true, force: true }));

describe('rate limit', () => {
  test('per API key: past the limit 429 rate_limited with Retry-After; another key and the probes are not counted', async () => {
    const node = await startNode({ SCOPE_RATE_LIMIT: '3/1m' });
    try {
      for (let index = 0; index < 3; index += 1) {
        const ok = await request(node.url).get('/v1/deployments').set(bearer(alice.token));
        assert.equal(ok.status, 200);
        assert.equal(ok.headers['x-ratelimit-remaining'], String(2 - index));
      }
      const refused = await request(node.url).get('/v1/deployments').set(bearer(alice.token));
      assert.equal(refused.status, 429);
      assert.match(refused.headers['content-type'] ?? '', /^application\/problem\+json/);
      assert.equal(refused.body.code, 'rate_limited');
      assert.ok(Number(refused.headers['retry-after']) > 0, `Retry-After ${refused.headers['retry-after']}`);
      assert.equal((await request(node.url).get('/v1/deployments').set(bearer(bob.token))).status, 200, 'bob has his own budget');
      for (let index = 0; index < 5; index += 1) assert.equal((await request(node.url).get('/healthz')).status, 200, 'probes are never limited');
    } finally {
      await node.close();
    }
  });

  test('with authentication off, per address; the default is off', async () => {
    const limited = await startNode({ SCOPE_AUTH: 'off', SCOPE_RATE_LIMIT: '2/1m' });
    const unlimited = await startNode({ SCOPE_AUTH: 'off' });
    try {
      assert.equal((await request(limited.url).get('/v1/deployments')).status, 200);
      assert.equal((await request(limited.url).get('/v1/deployments')).status, 200);
      assert.equal((await request(limited.url).get('/v1/deployments')).body.code, 'rate_limited');
      for (let index = 0; index < 20; index += 1) assert.equal((await request(unlimited.url).get('/v1/deployments')).status, 200);
    } finally {
      await limited.close();
      await unlimited.close();
    }
  });

  test('authentication on limits by default (1200 a minute)', () => {
    const config = loadConfig({ SCOPE_AUTH: 'keys', SCOPE_API_KEYS_FILE: keysFile });
    assert.deepEqual(config.rateLimit, { max: 1200, windowMs: 60_000 });
    assert.equal(loadConfig({ SCOPE_AUTH: 'keys', SCOPE_API_KEYS_FILE: keysFile, SCOPE_RATE_LIMIT: 'off' }).rateLimit, undefined);
    assert.deepEqual(loadConfig({ SCOPE_RATE_LIMIT: '50/2s' }).rateLimit, { max: 50, windowMs: 2_000 });
    assert.throws(() => loadConfig({ SCOPE_RATE_LIMIT: 'fast' }), /SCOPE_RATE_LIMIT/);
    assert.throws(() => loadConfig({ SCOPE_RATE_LIMIT: '0/1m' }), /SCOPE_RATE_LIMIT/);
  });
});

describe('stream cap per API key', () => {
  test('one node: past the cap 503 stream_capacity with Retry-After; another key streams; a closed stream frees its slot', async () => {
    const node = await startNode({ SCOPE_SSE_MAX_STREAMS_PER_KEY: '1' });
    const sessions: SseSession[] = [];
    try {
      const rootId = await startWaiting(node, alice.token);
      const first = await openSse(`${node.url}${streamPath(rootId)}`, bearer(alice.token));
      sessions.push(first);
      assert.equal(first.status, 200);
      const second = await request(node.url).get(streamPath(rootId)).set(bearer(alice.token)).set('accept', 'text/event-stream');
      assert.equal(second.status, 503);
      assert.equal(second.body.code, 'stream_capacity');
      assert.ok(Number(second.headers['retry-after']) >= 1);
      const other = await openSse(`${node.url}${streamPath(rootId)}`, bearer(bob.token));
      sessions.push(other);
      assert.equal(other.status, 200, 'the cap is per key');
      first.close();
      // The server learns of the closed socket asynchronously and announces it nowhere: poll for the slot.
      await eventually(async () => {
        const again = await openSse(`${node.url}${streamPath(rootId)}`, bearer(alice.token));
        sessions.push(again);
        return again.status === 200;
      }, 'the closed stream to give its slot back');
    } finally {
      for (const session of sessions) session.close();
      await node.close();
    }
  });
});

describe('across two nodes on one Redis', () => {
  let redis: RedisServer;
  before(async () => {
    redis = await startRedisServer();
  });
  after(async () => {
    await redis?.stop();
  });

  test('the rate limit and the stream cap are shared: what one node counted, the other refuses', async () => {
    const env = { SCOPE_REDIS_URL: redis.url, SCOPE_KEY_PREFIX: `guards${process.pid}`, SCOPE_RATE_LIMIT: '4/1m', SCOPE_SSE_MAX_STREAMS_PER_KEY: '1' };
    const clients = [connectRedis(redis.url), connectRedis(redis.url)] as const;
    const a = await startNode(env, {}, clients[0]);
    const b = await startNode(env, {}, clients[1]);
    const sessions: SseSession[] = [];
    try {
      const rootId = await startWaiting(a, alice.token); // alice: 1 of 4
      const stream = await openSse(`${a.url}${streamPath(rootId)}`, bearer(alice.token)); // 2 of 4
      sessions.push(stream);
      assert.equal(stream.status, 200);
      const capped = await request(b.url).get(streamPath(rootId)).set(bearer(alice.token)).set('accept', 'text/event-stream'); // 3 of 4
      assert.equal(capped.status, 503, JSON.stringify(capped.body));
      assert.equal(capped.body.code, 'stream_capacity');
      const onB = await openSse(`${b.url}${streamPath(rootId)}`, bearer(bob.token));
      sessions.push(onB);
      assert.equal(onB.status, 200, 'node B serves the tree to another key');
      assert.equal((await request(b.url).get('/v1/deployments').set(bearer(alice.token))).status, 200); // 4 of 4
      const limited = await request(a.url).get('/v1/deployments').set(bearer(alice.token));
      assert.equal(limited.status, 429, 'node A counts what node B served');
      assert.equal(limited.body.code, 'rate_limited');
    } finally {
      for (const session of sessions) session.close();
      await a.close();
      await b.close();
      await Promise.all(clients.map((client) => closeRedis(client, 500)));
    }
  });
});

describe('load shedding', () => {
  test('past a bound: 503 overloaded with Retry-After before any work; probes still answer', async () => {
    const node = await startNode({ SCOPE_AUTH: 'off' }, { pressure: { maxEventLoopDelayMs: 0, maxHeapBytes: 1, maxRssBytes: 0, sampleIntervalMs: 5 } });
    try {
      const app = node.app as FastifyInstance & { isUnderPressure(): boolean };
      await eventually(() => app.isUnderPressure(), 'the first heap sample');
      const shed = await request(node.url).post('/v1/processes').send({ deployment: 'demo.echo', input: { value: 'x' } });
      assert.equal(shed.status, 503);
      assert.equal(shed.body.code, 'overloaded');
      assert.match(shed.headers['content-type'] ?? '', /^application\/problem\+json/);
      assert.equal(shed.headers['retry-after'], '5');
      const listed = await request(node.url).get('/v1/processes');
      assert.equal(listed.body.items?.length ?? 0, 0, 'the shed start did nothing');
      assert.equal((await request(node.url).get('/healthz')).status, 200);
    } finally {
      await node.close();
    }
  });
});
