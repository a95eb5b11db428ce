import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { expectProblem, raw, startServer, type TestServer } from './server.js';

let server: TestServer;
before(async () => {
  server = await startServer();
});
after(async () => {
  await server.close();
});

test('GET /healthz: alive', async () => {
  const { data, response } = await server.client.GET('/healthz');
  assert.equal(response.status, 200);
  assert.deepEqual(data, { status: 'ok' });
});

test('GET /readyz: ready with its checks; 503 once the Host has closed', async () => {
  const ready = await server.client.GET('/readyz');
  assert.equal(ready.response.status, 200);
  assert.equal(ready.data!.ready, true);
  assert.ok(Object.values(ready.data!.checks).every((check) => check === 'ok'));

  const closing = await startServer();
  try {
    await closing.host.close(1_000);
    const notReady = await closing.client.GET('/readyz');
    assert.equal(notReady.response.status, 503);
    assert.equal((notReady.error as { ready: boolean }).ready, false);
  } finally {
    await closing.close();
  }
});

test('GET /metrics: Prometheus text from the Host', async () => {
  await server.client.POST('/v1/processes', { body: { deployment: 'demo.echo', input: { value: 'm' } } });
  const response = await raw(server, 'GET', '/metrics');
  assert.equal(response.status, 200);
  assert.match(response.headers.get('content-type') ?? '', /^text\/plain/);
  assert.match(response.text, /^# HELP /m);
  assert.match(response.text, /^# TYPE \S+ (counter|gauge|histogram)/m);
});

test('GET /openapi.json: the document this app generates', async () => {
  const { data, response } = await server.client.GET('/openapi.json');
  assert.equal(response.status, 200);
  assert.deepEqual(data, JSON.parse(JSON.stringify(server.app.swagger())));
  assert.equal((data as { openapi: string }).openapi, '3.1.0');
});

test('GET /docs: the rendered docs, assets served locally', async () => {
  const page = await raw(server, 'GET', '/docs/');
  assert.equal(page.status, 200);
  assert.match(page.headers.get('content-type') ?? '', /^text\/html/);
  const scripts = [...page.text.matchAll(/<script[^>]+src="([^"]+)"/g)].map((match) => match[1]!);
  assert.ok(scripts.length > 0);
  for (const src of scripts) assert.ok(!/^(https?:)?\/\//.test(src), `external script ${src}`);
  const bundle = await fetch(new URL('static/swagger-ui-bundle.js', `${server.url}/docs/`));
  assert.equal(bundle.status, 200);
  await bundle.arrayBuffer();
});

test('request ids: a plain x-request-id is echoed, anything else is replaced by a fresh id', async () => {
  const echoed = await raw(server, 'GET', '/healthz', { headers: { 'x-request-id': 'client-req-42' } });
  assert.equal(echoed.headers.get('x-request-id'), 'client-req-42');
  const minted = await raw(server, 'GET', '/healthz');
  assert.match(minted.headers.get('x-request-id') ?? '', /^[0-9a-f-]{36}$/);
  const refused = await raw(server, 'GET', '/healthz', { headers: { 'x-request-id': 'has spaces and "quotes"' } });
  assert.match(refused.headers.get('x-request-id') ?? '', /^[0-9a-f-]{36}$/);
  const problem = await raw(server, 'GET', '/v1/deployments/demo.none', { headers: { 'x-request-id': 'trace-7' } });
  assert.equal(problem.body.requestId, 'trace-7');
});

test('an unknown route is 404 route_not_found', async () => {
  const response = await raw(server, 'GET', '/v1/nothing-here?x=1');
  assert.equal(response.status, 404);
  assert.equal(response.body.code, 'route_not_found');
  assert.equal(response.body.instance, '/v1/nothing-here');
  const result = await server.client.GET('/v1/deployments/{name}', { params: { path: { name: 'demo.none' } } });
  expectProblem(result, 404, 'deployment_not_found');
});
