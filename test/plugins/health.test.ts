import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import request from 'supertest';
import { problemOf, startServer, type TestServer } from './server.js';

let server: TestServer;
before(async () => {
  server = await startServer();
});
after(async () => {
  await server.close();
});

test('GET /healthz: alive', async () => {
  const response = await request(server.url).get('/healthz');
  assert.equal(response.status, 200);
  assert.deepEqual(response.body, { status: 'ok' });
});

test('GET /readyz: ready with its checks; 503 once the Host has closed', async () => {
  const ready = await request(server.url).get('/readyz');
  assert.equal(ready.status, 200);
  assert.equal(ready.body.ready, true);
  assert.ok(Object.values(ready.body.checks as Record<string, string>).every((check) => check === 'ok'));

  const closing = await startServer();
  try {
    await closing.host.close(1_000);
    const notReady = await request(closing.url).get('/readyz');
    assert.equal(notReady.status, 503);
    assert.equal((notReady.body as { ready: boolean }).ready, false);
  } finally {
    await closing.close();
  }
});

test('GET /metrics: Prometheus text from the Host', async () => {
  await request(server.url).post('/v1/processes').send({ deployment: 'demo.echo', input: { value: 'm' } });
  const response = await request(server.url).get('/metrics');
  assert.equal(response.status, 200);
  assert.match(response.headers['content-type'] ?? '', /^text\/plain/);
  assert.match(response.text, /^# HELP /m);
  assert.match(response.text, /^# TYPE \S+ (counter|gauge|histogram)/m);
});

test('GET /openapi.json: the document this app generates', async () => {
  const response = await request(server.url).get('/openapi.json');
  assert.equal(response.status, 200);
  assert.deepEqual(response.body, JSON.parse(JSON.stringify(server.app.swagger())));
  assert.equal((response.body as { openapi: string }).openapi, '3.1.0');
});

test('GET /docs: the rendered docs, assets served locally', async () => {
  const page = await request(server.url).get('/docs/');
  assert.equal(page.status, 200);
  assert.match(page.headers['content-type'] ?? '', /^text\/html/);
  const scripts = [...page.text.matchAll(/<script[^>]+src="([^"]+)"/g)].map((match) => match[1]!);
  assert.ok(scripts.length > 0);
  for (const src of scripts) assert.ok(!/^(https?:)?\/\//.test(src), `external script ${src}`);
  const bundle = await request(server.url).get(new URL('static/swagger-ui-bundle.js', `${server.url}/docs/`).pathname);
  assert.equal(bundle.status, 200);
});

test('request ids: a plain x-request-id is echoed, anything else is replaced by a fresh id', async () => {
  const echoed = await request(server.url).get('/healthz').set('x-request-id', 'client-req-42');
  assert.equal(echoed.headers['x-request-id'], 'client-req-42');
  const minted = await request(server.url).get('/healthz');
  assert.match(minted.headers['x-request-id'] ?? '', /^[0-9a-f-]{36}$/);
  const refused = await request(server.url).get('/healthz').set('x-request-id', 'has spaces and "quotes"');
  assert.match(refused.headers['x-request-id'] ?? '', /^[0-9a-f-]{36}$/);
  const problem = await request(server.url).get('/v1/deployments/demo.none').set('x-request-id', 'trace-7');
  assert.equal(problem.body.requestId, 'trace-7');
});

test('an unknown route is 404 route_not_found', async () => {
  const response = await request(server.url).get('/v1/nothing-here?x=1');
  assert.equal(response.status, 404);
  assert.equal(response.body.code, 'route_not_found');
  assert.equal(response.body.instance, '/v1/nothing-here');
  problemOf(await request(server.url).get('/v1/deployments/demo.none'), 404, 'deployment_not_found');
});
