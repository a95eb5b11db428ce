/**
 * The bad input suite: malformed JSON, wrong types, unknown fields, oversized bodies, bad identity
 * syntax, unknown names, bad ranges and cursors. Each answers its documented problem, never a 5xx.
 * Routes are enumerated from openapi.yaml, so a new route is covered without editing this file.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import request from 'supertest';
import { parse } from 'yaml';
import { start, startServer, type TestServer } from './server.js';

interface Operation {
  parameters?: Array<{ in: string; name: string }>;
  requestBody?: { required?: boolean };
}
const document = parse(readFileSync(new URL('../../openapi.yaml', import.meta.url), 'utf8')) as {
  paths: Record<string, Record<string, Operation>>;
};
const routes = Object.entries(document.paths).flatMap(([path, item]) =>
  Object.entries(item).map(([method, operation]) => ({ method: method.toUpperCase(), path, operation })),
);

const json = { 'content-type': 'application/json' };
let server: TestServer;
let small: TestServer;
let processId: string;
let effectId: string;
let gateId: string;
const statuses: number[] = [];

/** A valid body per body route (path template → body). */
const validBodies: Record<string, unknown> = {
  '/v1/processes': { deployment: 'demo.echo', input: { value: 'x' } },
  '/v1/processes/{id}/signals': { signals: [{ id: 'note-1', payload: { note: 'x' } }] },
  '/v1/processes/{id}/pause': { reason: 'r' },
  '/v1/processes/{id}/resume': {},
  '/v1/processes/{id}/cancel': { reason: 'r' },
  '/v1/processes/{id}/kill': { reason: 'r' },
  '/v1/processes/{id}/effects/{effectId}/resolution': { status: 'succeeded', payload: {} },
  '/v1/trees/{rootId}/pause': { reason: 'r' },
  '/v1/trees/{rootId}/resume': {},
  '/v1/trees/{rootId}/cancel': { reason: 'r' },
  '/v1/trees/{rootId}/kill': { reason: 'r' },
  '/v1/trees/{rootId}/restore': { allowDrift: false },
  '/v1/processes:bulk': { filter: { deployment: 'demo.none' }, action: 'cancel', dryRun: true },
  '/v1/gates/{gateId}/answer': { answer: { approved: true }, requestId: 'answer-1' },
  '/v1/gates': { kind: 'form', answerSchema: true },
  '/v1/gates/{gateId}/callback': { answer: 'visited' },
};
const bodyRoutes = routes.filter((route) => route.operation.requestBody !== undefined);

function fill(path: string, values: Record<string, string> = {}): string {
  // The gate callback's token is a required query parameter: a body test sends one.
  const query = path.endsWith('/callback') ? '?token=not-a-token' : '';
  const filled = path.replace(/\{([A-Za-z]+)\}/g, (_, name: string) => {
    if (values[name] !== undefined) return values[name]!;
    if (name === 'name') return 'demo.echo';
    if (name === 'effectId') return encodeURIComponent(effectId);
    if (name === 'gateId') return encodeURIComponent(gateId);
    return encodeURIComponent(processId);
  });
  return filled + query;
}

/** One request through supertest: the body goes out exactly as written (no serialisation). */
async function send(target: TestServer, method: string, path: string, init: { body?: string; headers?: Record<string, string> } = {}) {
  let pending = request(target.url)[method.toLowerCase() as 'get' | 'post' | 'delete'](path);
  for (const [name, value] of Object.entries(init.headers ?? {})) pending = pending.set(name, value);
  const response = await (init.body === undefined ? pending : pending.send(init.body));
  statuses.push(response.status);
  return { status: response.status, body: response.body, text: response.text };
}

function expectCode(response: { status: number; body: any; text: string }, status: number, code: string, context: string): void {
  assert.equal(response.status, status, `${context}: ${response.text}`);
  assert.equal(response.body?.code, code, context);
}

before(async () => {
  [server, small] = await Promise.all([startServer(), startServer({ env: { SCOPE_BODY_LIMIT: '2KiB' } })]);
  ({ processId } = await start(server, 'demo.approval', { subject: 'bad input' }));
  for (;;) {
    const gates = await request(server.url).get(`/v1/gates?rootId=${encodeURIComponent(processId)}`);
    if (gates.body.items?.length === 1) {
      gateId = gates.body.items[0].gateId;
      break;
    }
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  const sleeper = await start(server, 'demo.sleep', { ms: 60_000 });
  for (;;) {
    const effects = await request(server.url).get(`/v1/processes/${encodeURIComponent(sleeper.processId)}/effects`);
    if (effects.body.items.length > 0) {
      effectId = effects.body.items[0].effectId;
      break;
    }
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
});
after(async () => {
  await Promise.all([server.close(), small.close()]);
});

test('the suite sees every body route', () => {
  assert.deepEqual(bodyRoutes.map((route) => route.path).sort(), Object.keys(validBodies).sort());
});

describe('bodies', () => {
  test('malformed JSON is 400 invalid_request on every body route', async () => {
    for (const { method, path } of bodyRoutes) {
      for (const body of ['{"deployment":', '{a:1}', "{'a':1}", '[1,]', '']) {
        const response = await send(server, method, fill(path), { body, headers: json });
        expectCode(response, 400, 'invalid_request', `${method} ${path} ${JSON.stringify(body)}`);
      }
    }
  });

  test('a body that is not an object is 400 invalid_request', async () => {
    for (const { method, path } of bodyRoutes) {
      for (const body of ['[]', '"text"', '42', 'null', 'true']) {
        const response = await send(server, method, fill(path), { body, headers: json });
        expectCode(response, 400, 'invalid_request', `${method} ${path} ${body}`);
      }
    }
  });

  test('unknown fields are rejected with a pointer to the field, never dropped', async () => {
    for (const { method, path } of bodyRoutes) {
      const body = { ...(validBodies[path] as object), extra: 1 };
      const response = await send(server, method, fill(path), { body: JSON.stringify(body), headers: json });
      expectCode(response, 400, 'invalid_request', `${method} ${path}`);
      assert.deepEqual(response.body.errors, [
        { pointer: '/body/extra', keyword: 'additionalProperties', message: 'is not a known member (unknown fields are rejected)' },
      ]);
    }
    const nested = [
      ['/v1/processes', { deployment: 'demo.echo', input: {}, budget: { steps: { maximum: 1, extra: 1 }, effects: { maximum: 1 }, signals: { maximum: 1 } } }, '/body/budget/steps/extra'],
      ['/v1/processes', { deployment: 'demo.echo', input: {}, treeLimits: { maxDepth: 1, maxDeep: 2 } }, '/body/treeLimits/maxDeep'],
      ['/v1/processes/{id}/signals', { signals: [{ id: 'a', payload: {}, wait: 'w' }] }, '/body/signals/0/wait'],
    ] as const;
    for (const [path, body, pointer] of nested) {
      const response = await send(server, 'POST', fill(path), { body: JSON.stringify(body), headers: json });
      expectCode(response, 400, 'invalid_request', pointer);
      assert.deepEqual(response.body.errors.map((error: { pointer: string }) => error.pointer), [pointer]);
    }
  });

  test('wrong types are 400 invalid_request, every violation listed (no coercion)', async () => {
    const cases = [
      ['/v1/processes', { deployment: 5, input: {} }, ['/body/deployment']],
      ['/v1/processes', { deployment: 'demo.echo' }, ['/body/input']],
      ['/v1/processes', { deployment: 'demo.echo', input: {}, capabilities: 'all', budget: { steps: 1 } }, ['/body/budget/steps', '/body/capabilities']],
      ['/v1/processes', { deployment: 'demo.echo', input: {}, budget: { steps: { maximum: '5' }, effects: { maximum: 1 }, signals: { maximum: 1 } } }, ['/body/budget/steps/maximum']],
      ['/v1/processes/{id}/signals', { signals: 'x' }, ['/body/signals']],
      ['/v1/processes/{id}/signals', { signals: [{ id: 7, payload: {} }] }, ['/body/signals/0/id']],
      ['/v1/processes/{id}/signals', { signals: [{ id: 'a' }] }, ['/body/signals/0/payload']],
      ['/v1/processes/{id}/cancel', { reason: 5 }, ['/body/reason']],
      ['/v1/processes/{id}/effects/{effectId}/resolution', { status: 'maybe', payload: {} }, ['/body/status']],
    ] as const;
    for (const [path, body, pointers] of cases) {
      const response = await send(server, 'POST', fill(path), { body: JSON.stringify(body), headers: json });
      expectCode(response, 400, 'invalid_request', `${path} ${JSON.stringify(body)}`);
      const found = [...new Set(response.body.errors.map((error: { pointer: string }) => error.pointer))].sort();
      for (const pointer of pointers) assert.ok(found.includes(pointer), `${pointer} in ${JSON.stringify(found)}`);
    }
  });

  test('a prototype-poisoning body is 400 invalid_request', async () => {
    const body = '{"__proto__":{"admin":true},"deployment":"demo.echo","input":{}}';
    expectCode(await send(server, 'POST', '/v1/processes', { body, headers: json }), 400, 'invalid_request', '__proto__');
    const constructor = '{"deployment":"demo.echo","input":{"constructor":{"prototype":{"admin":true}}}}';
    assert.ok((await send(server, 'POST', '/v1/processes', { body: constructor, headers: json })).status < 500);
  });

  test('pathological JSON (deep nesting, huge numbers) is refused, not a 5xx', async () => {
    const deep = `{"deployment":"demo.echo","input":${'['.repeat(50_000)}${']'.repeat(50_000)}}`;
    const deepResponse = await send(server, 'POST', '/v1/processes', { body: deep, headers: json });
    assert.ok(deepResponse.status >= 400 && deepResponse.status < 500, deepResponse.text.slice(0, 300));
    const huge = '{"deployment":"demo.echo","input":{"value":"x","n":1e400}}';
    const hugeResponse = await send(server, 'POST', '/v1/processes', { body: huge, headers: json });
    assert.ok(hugeResponse.status >= 400 && hugeResponse.status < 500, hugeResponse.text);
  });

  test('a body over the limit is 413 payload_too_large on every body route', async () => {
    const big = JSON.stringify({ padding: 'x'.repeat(3 * 1024) });
    for (const { method, path } of bodyRoutes) {
      const response = await send(small, method, fill(path), { body: big, headers: json });
      expectCode(response, 413, 'payload_too_large', `${method} ${path}`);
      assert.match(response.body.detail, /2048 bytes/);
    }
    // The default limit is 1 MiB.
    const overDefault = JSON.stringify({ deployment: 'demo.echo', input: { value: 'x'.repeat(1024 * 1024) } });
    expectCode(await send(server, 'POST', '/v1/processes', { body: overDefault, headers: json }), 413, 'payload_too_large', '1 MiB');
  });

  test('a body that is not JSON is 415 unsupported_media_type', async () => {
    for (const { method, path } of bodyRoutes) {
      const response = await send(server, method, fill(path), { body: 'deployment=demo.echo', headers: { 'content-type': 'text/plain' } });
      expectCode(response, 415, 'unsupported_media_type', `${method} ${path}`);
    }
    const form = await send(server, 'POST', '/v1/processes', { body: 'a=1', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    expectCode(form, 415, 'unsupported_media_type', 'form');
  });
});

describe('paths, queries and headers', () => {
  const badIdentities = ['has space', 'x'.repeat(257), 'ünïcode', 'a/b', 'nul\u0000', 'semi;colon', 'quote"d'];

  test('bad identity syntax in any path parameter is 400 invalid_request pointing at it', async () => {
    let checked = 0;
    for (const { method, path, operation } of routes) {
      const names = (operation.parameters ?? []).filter((parameter) => parameter.in === 'path').map((parameter) => parameter.name);
      for (const name of names) {
        for (const bad of badIdentities) {
          // Bodies are keyed by path; a GET beside a POST on one path (…/signals) sends none.
          const body = method === 'GET' || validBodies[path] === undefined ? undefined : JSON.stringify(validBodies[path]);
          const response = await send(server, method, fill(path, { [name]: encodeURIComponent(bad) }), {
            ...(body === undefined ? {} : { body, headers: json }),
          });
          expectCode(response, 400, 'invalid_request', `${method} ${path} ${name}=${JSON.stringify(bad)}`);
          assert.deepEqual(response.body.errors.map((error: { pointer: string }) => error.pointer), [`/params/${name}`]);
          checked += 1;
        }
      }
    }
    assert.ok(checked >= 20 * badIdentities.length, `checked ${checked}`);
  });

  test('unknown deployment, process, effect and tree are their 404s', async () => {
    const none = 'process:ffffffffffffffffffffffffffffffff';
    expectCode(await send(server, 'GET', '/v1/deployments/demo.nope'), 404, 'deployment_not_found', 'deployment');
    expectCode(
      await send(server, 'POST', '/v1/processes', { body: JSON.stringify({ deployment: 'demo.nope', input: {} }), headers: json }),
      404,
      'deployment_not_found',
      'start',
    );
    for (const path of ['/v1/processes/{id}', '/v1/processes/{id}/result', '/v1/processes/{id}/effects', '/v1/processes/{id}/events']) {
      expectCode(await send(server, 'GET', fill(path, { id: none })), 404, 'process_not_found', path);
    }
    expectCode(await send(server, 'GET', fill('/v1/trees/{rootId}', { rootId: none })), 404, 'tree_not_found', 'tree');
    expectCode(
      await send(server, 'POST', fill('/v1/processes/{id}/effects/{effectId}/replay', { effectId: 'effect:none' })),
      404,
      'effect_not_found',
      'effect',
    );
  });

  test('waitMs outside 0..60000, bad limits, unknown statuses, unparseable cursors: 400 invalid_request', async () => {
    const result = fill('/v1/processes/{id}/result');
    for (const query of ['waitMs=60001', 'waitMs=-1', 'waitMs=1e3', 'waitMs=', 'waitMs=0x10', 'waitMs=1&waitMs=2']) {
      expectCode(await send(server, 'GET', `${result}?${query}`), 400, 'invalid_request', query);
    }
    for (const query of ['limit=0', 'limit=abc', 'status=asleep', 'cursor=%00', 'cursor=not-a-cursor', 'deployment=Demo', 'unknown=1']) {
      expectCode(await send(server, 'GET', `/v1/processes?${query}`), 400, 'invalid_request', query);
    }
    for (const query of ['after=abc', 'after=-1', 'after=01', 'limit=0']) {
      expectCode(await send(server, 'GET', `${fill('/v1/processes/{id}/events')}?${query}`), 400, 'invalid_request', `events ${query}`);
    }
    expectCode(await send(server, 'DELETE', `${fill('/v1/trees/{rootId}')}?purge=1`), 400, 'invalid_request', 'purge=1');
  });

  test('unknown query parameters are rejected on routes that take none', async () => {
    for (const { method, path, operation } of routes) {
      if ((operation.parameters ?? []).some((parameter) => parameter.in === 'query')) continue;
      if (!path.startsWith('/v1/')) continue;
      const body = validBodies[path] === undefined ? undefined : JSON.stringify(validBodies[path]);
      const response = await send(server, method, `${fill(path)}?debug=true`, { ...(body === undefined ? {} : { body, headers: json }) });
      expectCode(response, 400, 'invalid_request', `${method} ${path}`);
    }
  });

  test('a bad Idempotency-Key is 400 invalid_request', async () => {
    const body = JSON.stringify(validBodies['/v1/processes']);
    for (const key of ['x'.repeat(257), 'tab\there']) {
      expectCode(
        await send(server, 'POST', '/v1/processes', { body, headers: { ...json, 'idempotency-key': key } }),
        400,
        'invalid_request',
        `key ${JSON.stringify(key)}`,
      );
    }
  });
});

test('no bad input produced a 5xx', () => {
  assert.ok(statuses.length > 200, `${statuses.length} requests`);
  assert.deepEqual(statuses.filter((status) => status >= 500), []);
});
