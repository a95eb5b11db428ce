/**
 * HTTP metrics on the Host's registry: `scope_http_requests_total` and
 * `scope_http_request_duration_seconds` by method, route pattern and status, read back from
 * `GET /metrics`. The route label never carries the raw URL.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import request from 'supertest';
import { buildApp } from '../../src/app/app.js';
import { rawRequest } from './raw-http.js';
import { startServer, type TestServer } from './server.js';

let server: TestServer;
before(async () => {
  server = await startServer();
});
after(async () => {
  await server.close();
});

interface Sample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

function samples(text: string): Sample[] {
  return text
    .split('\n')
    .filter((line) => line !== '' && !line.startsWith('#'))
    .map((line) => {
      const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
      assert.ok(match, `unparseable sample line ${line}`);
      const labels: Record<string, string> = {};
      for (const [, key, value] of (match[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[key!] = value!;
      return { name: match[1]!, labels, value: Number(match[3]) };
    });
}

function value(all: readonly Sample[], name: string, labels: Record<string, string>): number | undefined {
  return all.find((sample) => sample.name === name && Object.entries(labels).every(([key, v]) => sample.labels[key] === v))?.value;
}

test('requests are counted and timed by method, route pattern and status', async () => {
  const hostile = `probe-${'x'.repeat(40)}`;
  await request(server.url).get('/healthz').expect(200);
  await request(server.url).get('/healthz').expect(200);
  await request(server.url).get('/v1/deployments/demo.echo').expect(200);
  await request(server.url).get('/v1/deployments/demo.none').expect(404);
  await request(server.url).post('/v1/processes').send({ deployment: 'demo.echo', input: { value: 'metrics' } }).expect(201);
  for (let index = 0; index < 3; index += 1) await request(server.url).get(`/${hostile}/${index}`).expect(404);
  await request(server.url).get('/v1/processes/process:%zz').expect(400);
  assert.equal((await rawRequest(server.url, 'GET /healthz HTTP/1.1\r\nHost: x\r\nX-A: a\rb\r\n\r\n')).status, 400);

  const response = await request(server.url).get('/metrics').expect(200);
  assert.match(response.headers['content-type'] ?? '', /^text\/plain/);
  assert.match(response.text, /^# TYPE scope_http_requests_total counter$/m);
  assert.match(response.text, /^# TYPE scope_http_request_duration_seconds histogram$/m);
  const all = samples(response.text);
  const total = 'scope_http_requests_total';
  assert.equal(value(all, total, { method: 'GET', route: '/healthz', status: '200' }), 2);
  assert.equal(value(all, total, { method: 'GET', route: '/v1/deployments/:name', status: '200' }), 1);
  assert.equal(value(all, total, { method: 'GET', route: '/v1/deployments/:name', status: '404' }), 1);
  assert.equal(value(all, total, { method: 'POST', route: '/v1/processes', status: '201' }), 1);
  assert.equal(value(all, total, { method: 'GET', route: 'unmatched', status: '404' }), 3);
  assert.equal(value(all, total, { method: 'GET', route: 'unmatched', status: '400' }), 1, 'a path the router cannot decode');
  assert.equal(value(all, total, { method: 'unknown', route: 'unparsed', status: '400' }), 1, 'a request the parser refused');

  const count = 'scope_http_request_duration_seconds_count';
  assert.equal(value(all, count, { method: 'GET', route: '/healthz', status: '200' }), 2);
  assert.equal(value(all, count, { method: 'GET', route: 'unmatched', status: '404' }), 3);
  assert.equal(value(all, count, { method: 'GET', route: 'unmatched', status: '400' }), 1);
  assert.equal(value(all, 'scope_http_request_duration_seconds_bucket', { method: 'GET', route: '/healthz', status: '200', le: '+Inf' }), 2);
  const sum = value(all, 'scope_http_request_duration_seconds_sum', { method: 'POST', route: '/v1/processes', status: '201' });
  assert.ok(sum !== undefined && sum > 0 && sum < 60, `duration sum ${sum}`);

  const routes = new Set(all.filter((sample) => sample.name.startsWith('scope_http_')).map((sample) => sample.labels.route));
  assert.ok(![...routes].some((route) => route?.includes('probe-') || route?.includes('%zz') || route?.includes('demo.')), [...routes].join(', '));
  for (const route of routes) assert.ok(route === 'unmatched' || route === 'unparsed' || route?.startsWith('/'), `route label ${route}`);
});

test('the metrics live on the Host registry, beside the Host metrics', () => {
  const registry = server.host.telemetry.registry;
  assert.ok(registry.getSingleMetric('scope_http_requests_total'));
  assert.ok(registry.getSingleMetric('scope_http_request_duration_seconds'));
  assert.ok(registry.getSingleMetric('scope_sse_clients'));
});

test('a second app on the same Host shares the metrics instead of failing on their names', async () => {
  const second = await buildApp({ host: server.host, config: { closeHost: false } });
  try {
    await second.ready();
    await request(second.server).get('/readyz').expect(200);
    await request(server.url).get('/readyz').expect(200);
    const all = samples((await request(server.url).get('/metrics').expect(200)).text);
    assert.equal(value(all, 'scope_http_requests_total', { method: 'GET', route: '/readyz', status: '200' }), 2);
  } finally {
    await second.close();
  }
});
