import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import request from 'supertest';
import { ApiKeyStore, createKey, digestOf, parseKeys } from '../../src/app/auth/key-store.js';
import { operationScopes, scopeValues, type Scope } from '../../src/app/auth/scopes.js';
import { keysCommand } from '../../src/app/auth/keys-command.js';
import { ConfigError, loadConfig } from '../../src/server/config.js';
import { problemOf, startServer, type TestServer } from './server.js';

/**
 * Authentication with scoped API keys, route by route from the OpenAPI document the server serves:
 * every operation that needs a scope refuses a missing token (401), a token without its scope (403),
 * and passes one with it (whatever the route then answers is not 401/403). A route with no declared
 * scope cannot exist: buildApp refuses it.
 */

type Operation = { method: string; path: string; operationId: string; scope: Scope | undefined; body: unknown };

const directory = mkdtempSync(join(tmpdir(), 'scope-auth-'));
const keysFile = join(directory, 'keys.json');
const everything = createKey({ id: 'all', tenant: 'a', scopes: [...scopeValues] });
const nothing = createKey({ id: 'none', tenant: 'a', scopes: [] });
const scoped = new Map(scopeValues.map((scope) => [scope, createKey({ id: `only-${scope.replace(':', '-')}`, tenant: 'a', scopes: [scope] })]));

let server: TestServer;
let operations: Operation[] = [];
before(async () => {
  writeFileSync(keysFile, JSON.stringify({ keys: [everything.entry, nothing.entry, ...[...scoped.values()].map((key) => key.entry)] }));
  server = await startServer({ env: { SCOPE_AUTH: 'keys', SCOPE_API_KEYS_FILE: keysFile } });
  const spec = await request(server.url).get('/openapi.json');
  assert.equal(spec.status, 200, 'the API document is public');
  const document = spec.body as { paths: Record<string, Record<string, { operationId: string; security?: Array<Record<string, string[]>>; requestBody?: { content: Record<string, { schema?: { $ref?: string }; example?: unknown }> } }>> };
  const schemas = (spec.body.components?.schemas ?? {}) as Record<string, { example?: unknown }>;
  operations = Object.entries(document.paths).flatMap(([path, methods]) =>
    Object.entries(methods).map(([method, operation]) => {
      const content = operation.requestBody?.content['application/json'];
      const named = content?.schema?.$ref?.split('/').at(-1);
      return {
        method,
        path,
        operationId: operation.operationId,
        scope: operation.security?.[0]?.bearerAuth?.[0] as Scope | undefined,
        body: content?.example ?? (named === undefined ? undefined : schemas[named]?.example) ?? (content === undefined ? undefined : {}),
      };
    }),
  );
});
after(async () => {
  await server?.close();
  rmSync(directory, { recursive: true, force: true });
});

function call(operation: Operation, token?: string): request.Test {
  const path = operation.path
    .replace('{id}', encodeURIComponent('process:0123456789abcdef0123456789abcdef'))
    .replace('{rootId}', encodeURIComponent('process:0123456789abcdef0123456789abcdef'))
    .replace('{effectId}', encodeURIComponent('effect:0123456789abcdef'))
    .replace('{name}', 'demo.echo');
  const agent = request(server.url);
  const method = operation.method as 'get' | 'post' | 'delete';
  let pending = agent[method](path);
  if (token !== undefined) pending = pending.set('authorization', `Bearer ${token}`);
  if (operation.body !== undefined) pending = pending.send(operation.body as object);
  return pending;
}

describe('route by route, from openapi.json', () => {
  test('every operation the document lists has a scope in the one table, and the document says it', () => {
    assert.ok(operations.length >= 25, `${operations.length} operations`);
    for (const operation of operations) {
      const declared = operationScopes[operation.operationId];
      assert.notEqual(declared, undefined, `${operation.operationId} has no scope`);
      assert.equal(operation.scope, declared === 'public' ? undefined : declared, operation.operationId);
    }
  });

  test('without a token: 401 unauthorized (with WWW-Authenticate); public operations answer', async () => {
    for (const operation of operations) {
      const response = await call(operation);
      if (operation.scope === undefined) {
        // The gate callback is public but its token is its authority: without one it is a bad request, never a 401.
        const answers = operation.operationId === 'gateCallback' ? response.status === 400 : response.status < 400;
        assert.ok(answers, `${operation.operationId} is public: ${response.status}`);
        continue;
      }
      problemOf(response, 401, 'unauthorized');
      assert.match(response.headers['www-authenticate'] ?? '', /^Bearer /, operation.operationId);
    }
  });

  test('an unknown or malformed token is 401 as well', async () => {
    const secured = operations.find((operation) => operation.operationId === 'listProcesses') as Operation;
    problemOf(await call(secured, 'scope_not-a-real-key'), 401, 'unauthorized');
    problemOf(await request(server.url).get('/v1/processes').set('authorization', 'Basic Zm9vOmJhcg=='), 401, 'unauthorized');
    problemOf(await call(secured, everything.entry.sha256), 401, 'unauthorized');
  });

  test('a token without the scope: 403 insufficient_scope naming it', async () => {
    for (const operation of operations) {
      if (operation.scope === undefined) continue;
      const other = scopeValues.find((scope) => scope !== operation.scope) as Scope;
      for (const token of [nothing.token, (scoped.get(other) as { token: string }).token]) {
        const problem = problemOf(await call(operation, token), 403, 'insufficient_scope');
        assert.match(problem.detail, new RegExp(operation.scope.replace(':', '\\:')), operation.operationId);
      }
    }
  });

  test('the right scope passes (whatever the route answers then, it is not 401 or 403)', async () => {
    for (const operation of operations) {
      if (operation.scope === undefined) continue;
      const response = await call(operation, (scoped.get(operation.scope) as { token: string }).token);
      assert.ok(response.status !== 401 && response.status !== 403, `${operation.operationId}: ${response.status} ${response.text.slice(0, 200)}`);
    }
    const started = await request(server.url)
      .post('/v1/processes')
      .set('authorization', `Bearer ${everything.token}`)
      .send({ deployment: 'demo.echo', input: { value: 'authorized' } });
    assert.equal(started.status, 201);
  });
});

describe('keys and configuration', () => {
  test('the key store holds digests only, and rereads a changed file', () => {
    const file = join(directory, 'rotating.json');
    const first = createKey({ id: 'first', tenant: 't', scopes: ['processes:read'] });
    const second = createKey({ id: 'second', tenant: 't', scopes: ['processes:write'] });
    writeFileSync(file, JSON.stringify({ keys: [first.entry] }));
    let now = 1_000_000;
    const store = new ApiKeyStore(file, { now: () => now });
    assert.equal(store.authenticate(first.token)?.keyId, 'first');
    assert.equal(store.authenticate(second.token), undefined);
    assert.equal(first.entry.sha256, digestOf(first.token));
    assert.ok(!JSON.stringify(first.entry).includes(first.token.slice(6)), 'the entry holds no usable secret');
    // Rotation: the second key replaces the first, without a restart.
    writeFileSync(file, JSON.stringify({ keys: [second.entry] }));
    now += 1_500;
    assert.equal(store.authenticate(second.token)?.keyId, 'second');
    assert.equal(store.authenticate(first.token), undefined);
    // A broken file keeps the last good keys.
    writeFileSync(file, '{not json');
    now += 1_500;
    assert.equal(store.authenticate(second.token)?.keyId, 'second');
    assert.throws(() => parseKeys('{"keys":[{"id":"x","sha256":"nope","tenant":"t","scopes":[]}]}'), /sha256/);
    assert.throws(() => parseKeys('{"keys":[{"id":"x","sha256":"' + 'a'.repeat(64) + '","tenant":"t","scopes":["root"]}]}'), /scopes/);
  });

  test('`scope keys create` prints a key once and its entry', () => {
    let out = '';
    assert.equal(keysCommand(['create', '--scopes', 'processes:read,trees:admin', '--tenant', 'acme', '--id', 'ops'], (text) => (out += text)).exitCode, 0);
    const [keyLine, , entryLine] = out.trim().split('\n');
    const token = (keyLine as string).replace('key (shown only now): ', '');
    const entry = JSON.parse(entryLine as string) as { id: string; sha256: string; tenant: string; scopes: string[] };
    assert.deepEqual({ ...entry, sha256: undefined }, { id: 'ops', sha256: undefined, tenant: 'acme', scopes: ['processes:read', 'trees:admin'] });
    assert.equal(entry.sha256, digestOf(token));
    assert.equal(keysCommand(['create', '--scopes', 'root'], () => undefined).exitCode, 2);
  });

  test('a non-loopback address without authentication is refused, unless asked for knowingly', () => {
    assert.throws(() => loadConfig({ HOST: '0.0.0.0' }), (error) => error instanceof ConfigError && /not a loopback address/.test(error.message));
    assert.equal(loadConfig({ HOST: '0.0.0.0', SCOPE_ALLOW_UNAUTHENTICATED: '1' }).auth.mode, 'off');
    assert.deepEqual(loadConfig({ HOST: '0.0.0.0', SCOPE_API_KEYS_FILE: keysFile }).auth, { mode: 'on', keysFile });
    assert.equal(loadConfig({}).auth.mode, 'off', 'the embedded default on loopback');
    assert.throws(() => loadConfig({ SCOPE_AUTH: 'keys' }), /SCOPE_API_KEYS_FILE/);
  });
});
