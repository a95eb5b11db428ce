import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import request from 'supertest';
import { buildApp } from '../../src/app/app.js';
import { createKey } from '../../src/app/auth/key-store.js';
import { scopeValues } from '../../src/app/auth/scopes.js';
import { loadConfig } from '../../src/server/config.js';
import { EngineHost } from '../../src/server/engine-host.js';
import { closeRedis, connectRedis } from '../../src/store/redis/connection.js';
import { recordKey } from '../../src/store/redis/keys.js';
import { startRedisServer, type RedisServer } from '../helpers/redis-server.js';

/**
 * Tenant isolation: a key sees and touches only its tenant's trees. Another tenant's process is a 404
 * word for word like an unknown one (ids cannot be probed), lists and the inbox leave it out, and an
 * Idempotency-Key is scoped per tenant. In Redis mode the tenant is written with the start commit, so a
 * new node enforces it too.
 */

const directory = mkdtempSync(join(tmpdir(), 'scope-tenancy-'));
const keysFile = join(directory, 'keys.json');
const alice = createKey({ id: 'alice', tenant: 'acme', scopes: [...scopeValues] });
const bob = createKey({ id: 'bob', tenant: 'globex', scopes: [...scopeValues] });
writeFileSync(keysFile, JSON.stringify({ keys: [alice.entry, bob.entry] }));
const as = (key: { token: string }) => ({ authorization: `Bearer ${key.token}` });
const unknownId = 'process:0123456789abcdef0123456789abcdef';

async function startNode(env: Record<string, string>): Promise<{ app: FastifyInstance; url: string; close(): Promise<void> }> {
  const config = loadConfig({ SCOPE_SHUTDOWN_MS: '300', SCOPE_AUTH: 'keys', SCOPE_API_KEYS_FILE: keysFile, SCOPE_RATE_LIMIT: 'off', ...env });
  const host = new EngineHost({ config, defaultMetrics: false });
  const app = await buildApp({ host, config });
  const url = await app.listen({ port: 0, host: '127.0.0.1' });
  return { app, url, close: () => app.close() };
}

type Operation = { method: 'get' | 'post' | 'delete'; path: string; operationId: string; body: unknown };

/** Every operation of the document that names a process or tree, with a body its schema accepts where it has one. */
async function namedOperations(url: string): Promise<Operation[]> {
  const spec = (await request(url).get('/openapi.json')).body as {
    paths: Record<string, Record<string, { operationId: string; requestBody?: { content: Record<string, { example?: unknown; schema?: { $ref?: string } }> } }>>;
    components: { schemas: Record<string, { example?: unknown }> };
  };
  return Object.entries(spec.paths)
    .filter(([path]) => path.includes('{id}') || path.includes('{rootId}'))
    .flatMap(([path, methods]) =>
      Object.entries(methods).map(([method, operation]) => {
        const content = operation.requestBody?.content['application/json'];
        const named = content?.schema?.$ref?.split('/').at(-1);
        const body = content?.example ?? (named === undefined ? undefined : spec.components.schemas[named]?.example) ?? (content === undefined ? undefined : {});
        return { method: method as Operation['method'], path, operationId: operation.operationId, body };
      }),
    );
}

function call(url: string, operation: Operation, id: string, token: { token: string }): request.Test {
  const path = operation.path.replace('{id}', encodeURIComponent(id)).replace('{rootId}', encodeURIComponent(id)).replace('{effectId}', encodeURIComponent('effect:0123456789abcdef'));
  let pending = request(url)[operation.method](path).set(as(token));
  if (operation.operationId === 'streamTree') pending = pending.set('accept', 'text/event-stream');
  if (operation.body !== undefined) pending = pending.send(operation.body as object);
  return pending;
}

function isolationSuite(name: string, env: () => Record<string, string>): void {
  describe(name, () => {
    let node: Awaited<ReturnType<typeof startNode>>;
    let rootId: string;
    before(async () => {
      node = await startNode(env());
      const started = await request(node.url).post('/v1/processes').set(as(alice)).send({ deployment: 'demo.approval', input: { subject: 'acme only' } });
      assert.equal(started.status, 201, JSON.stringify(started.body));
      rootId = started.body.rootId;
    });
    after(async () => node?.close());

    test('route by route: another tenant gets the 404 an unknown id gets, word for word; the owner is served', async () => {
      const operations = await namedOperations(node.url);
      assert.ok(operations.length >= 15, `${operations.length} operations name a process or tree`);
      for (const operation of operations) {
        const foreign = await call(node.url, operation, rootId, bob);
        const unknown = await call(node.url, operation, unknownId, bob);
        assert.equal(foreign.status, 404, `${operation.operationId} as another tenant: ${foreign.status} ${foreign.text.slice(0, 200)}`);
        assert.equal(foreign.body.code, unknown.body.code, operation.operationId);
        assert.equal(foreign.body.detail, (unknown.body.detail as string).replace(unknownId, rootId), `${operation.operationId}: the same words`);
      }
      const owned = await request(node.url).get(`/v1/processes/${encodeURIComponent(rootId)}`).set(as(alice));
      assert.equal(owned.status, 200);
      const tree = await request(node.url).get(`/v1/trees/${encodeURIComponent(rootId)}`).set(as(alice));
      assert.equal(tree.status, 200);
    });

    test('lists and the inbox show each tenant its own trees only', async () => {
      const mine = await request(node.url).get('/v1/processes').set(as(alice));
      assert.ok(mine.body.items.some((item: { processId: string }) => item.processId === rootId));
      const theirs = await request(node.url).get('/v1/processes').set(as(bob));
      assert.equal(theirs.status, 200);
      assert.ok(!theirs.body.items.some((item: { processId: string }) => item.processId === rootId), 'bob does not list it');
      const myWaits = await request(node.url).get('/v1/waits').set(as(alice));
      assert.ok(myWaits.body.items.some((item: { rootId: string }) => item.rootId === rootId));
      const theirWaits = await request(node.url).get('/v1/waits').set(as(bob));
      assert.deepEqual(theirWaits.body.items, []);
      const filtered = await request(node.url).get(`/v1/waits?rootId=${encodeURIComponent(rootId)}`).set(as(bob));
      assert.deepEqual(filtered.body.items, [], 'naming the root does not help');
    });

    test('gates: another tenant’s gate is the 404 an unknown gate gets, unlisted and unanswerable; the actor is the principal', async () => {
      let gateId: string | undefined;
      for (let attempt = 0; gateId === undefined && attempt < 500; attempt += 1) {
        const listed = await request(node.url).get(`/v1/gates?rootId=${encodeURIComponent(rootId)}`).set(as(alice));
        gateId = listed.body.items?.[0]?.gateId;
        if (gateId === undefined) await new Promise((resolve) => setTimeout(resolve, 10));
      }
      assert.ok(gateId !== undefined, 'alice lists her gate');
      const unknownGate = `gate:${Buffer.from(`${unknownId} wait:0123abcd`).toString('base64url')}`;
      const path = (id: string, rest = '') => `/v1/gates/${encodeURIComponent(id)}${rest}`;
      const foreign = await request(node.url).get(path(gateId)).set(as(bob));
      const unknown = await request(node.url).get(path(unknownGate)).set(as(bob));
      assert.equal(foreign.status, 404);
      assert.equal(foreign.body.code, 'gate_not_found');
      assert.equal(foreign.body.detail, (unknown.body.detail as string).replace(unknownGate, gateId), 'the same words');
      const answer = { answer: { approved: true }, requestId: 'r-1', actor: 'mallory' };
      const refused = await request(node.url).post(path(gateId, '/answer')).set(as(bob)).send(answer);
      assert.equal(refused.status, 404);
      assert.equal(refused.body.code, 'gate_not_found');
      const theirs = await request(node.url).get(`/v1/gates?rootId=${encodeURIComponent(rootId)}`).set(as(bob));
      assert.deepEqual(theirs.body.items, []);
      const answered = await request(node.url).post(path(gateId, '/answer')).set(as(alice)).send(answer);
      assert.equal(answered.status, 200, answered.text);
      assert.equal(answered.body.gate.answer.actor, 'alice', 'the principal, not what the body says');
    });

    test('an Idempotency-Key is scoped per tenant', async () => {
      const body = { deployment: 'demo.echo', input: { value: 'once' } };
      const first = await request(node.url).post('/v1/processes').set(as(alice)).set('idempotency-key', 'shared-key').send(body);
      assert.equal(first.status, 201);
      const again = await request(node.url).post('/v1/processes').set(as(alice)).set('idempotency-key', 'shared-key').send(body);
      assert.equal(again.status, 200);
      assert.equal(again.body.processId, first.body.processId);
      const other = await request(node.url).post('/v1/processes').set(as(bob)).set('idempotency-key', 'shared-key').send(body);
      assert.equal(other.status, 201, 'bob gets his own process');
      assert.notEqual(other.body.processId, first.body.processId);
      const foreign = await request(node.url).get(`/v1/processes/${encodeURIComponent(first.body.processId)}`).set(as(bob));
      assert.equal(foreign.status, 404);
    });
  });
}

let redis: RedisServer | undefined;
before(async () => {
  redis = await startRedisServer();
});
after(async () => {
  await redis?.stop();
  rmSync(directory, { recursive: true, force: true });
});

isolationSuite('embedded', () => ({}));
isolationSuite('redis', () => ({ SCOPE_REDIS_URL: (redis as RedisServer).url, SCOPE_KEY_PREFIX: `tenancy${process.pid}` }));

test('redis: the tenant lands with the start commit, so a new node enforces it', async () => {
  const env = { SCOPE_REDIS_URL: (redis as RedisServer).url, SCOPE_KEY_PREFIX: `tenancy2${process.pid}` };
  const first = await startNode(env);
  let rootId: string;
  try {
    const started = await request(first.url).post('/v1/processes').set(as(alice)).send({ deployment: 'demo.approval', input: { subject: 'durable owner' } });
    assert.equal(started.status, 201);
    rootId = started.body.rootId;
  } finally {
    await first.close();
  }
  const second = await startNode(env);
  try {
    const foreign = await request(second.url).get(`/v1/processes/${encodeURIComponent(rootId)}`).set(as(bob));
    assert.equal(foreign.status, 404, foreign.text);
    const owned = await request(second.url).get(`/v1/processes/${encodeURIComponent(rootId)}`).set(as(alice));
    assert.equal(owned.status, 200);
  } finally {
    await second.close();
  }
});

test('redis: a purged tree takes its tenant record along', async () => {
  const prefix = `tenancy3${process.pid}`;
  const node = await startNode({ SCOPE_REDIS_URL: (redis as RedisServer).url, SCOPE_KEY_PREFIX: prefix });
  const client = connectRedis((redis as RedisServer).url);
  try {
    const started = await request(node.url).post('/v1/processes').set(as(alice)).send({ deployment: 'demo.echo', input: { value: 'brief' } });
    assert.equal(started.status, 201);
    const rootId = started.body.rootId as string;
    assert.equal((await request(node.url).get(`/v1/processes/${encodeURIComponent(rootId)}/result?waitMs=10000`).set(as(alice))).status, 200);
    assert.equal(await client.get(recordKey(prefix, rootId, 'tenant')), 'acme', 'written with the start commit');
    const purged = await request(node.url).delete(`/v1/trees/${encodeURIComponent(rootId)}?purge=true`).set(as(alice));
    assert.equal(purged.status, 204, purged.text);
    assert.equal(await client.exists(recordKey(prefix, rootId, 'tenant')), 0);
  } finally {
    await node.close();
    await closeRedis(client, 500);
  }
});

test('a tenant grant narrows what that tenant\'s starts get and may ask for; other tenants keep the server grant', async () => {
  const node = await startNode({ SCOPE_TENANT_GRANTS: JSON.stringify({ acme: { budget: { steps: { maximum: 50 } } } }) });
  try {
    const narrowed = await request(node.url).post('/v1/processes').set(as(alice)).send({ deployment: 'demo.echo', input: { value: 'g' } });
    assert.equal(narrowed.status, 201, narrowed.text);
    assert.deepEqual(narrowed.body.budget.steps, { maximum: 50 });
    const asked = await request(node.url).post('/v1/processes').set(as(alice)).send({ deployment: 'demo.echo', input: { value: 'g' }, budget: { steps: { maximum: 51 }, effects: { maximum: 5 }, signals: { maximum: 5 } } });
    assert.equal(asked.status, 403);
    assert.equal(asked.body.code, 'authority_exceeded');
    assert.match(asked.body.detail, /its tenant's grant/);
    const other = await request(node.url).post('/v1/processes').set(as(bob)).send({ deployment: 'demo.echo', input: { value: 'g' }, budget: { steps: { maximum: 51 }, effects: { maximum: 5 }, signals: { maximum: 5 } } });
    assert.equal(other.status, 201, 'globex keeps the server grant');
  } finally {
    await node.close();
  }
  assert.throws(
    () => loadConfig({ SCOPE_GRANTS: JSON.stringify({ budget: { steps: { maximum: 10 } } }), SCOPE_TENANT_GRANTS: JSON.stringify({ acme: { budget: { steps: { maximum: 11 } } } }) }),
    /SCOPE_TENANT_GRANTS: \/acme asks for more than SCOPE_GRANTS/,
  );
  assert.throws(() => loadConfig({ SCOPE_TENANT_GRANTS: JSON.stringify({ 'a b': {} }) }), /is not a tenant/);
});
