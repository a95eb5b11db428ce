/**
 * The edge: every error the server sends is `application/problem+json` with a registry code, also
 * the ones Node's HTTP parser and Fastify's router raise before any route runs. Over a real socket;
 * `node:net` where no HTTP client would send the input.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import request from 'supertest';
import { classifyClientError } from '../../plugins/client-errors.js';
import { problemRegistry, type ProblemCode } from '../../plugins/problem-details.js';
import { exchange, parseResponse, rawRequest, type RawResponse } from './raw-http.js';
import { problemOf, startServer, type TestServer } from './server.js';

let server: TestServer;
const statuses: number[] = [];

before(async () => {
  server = await startServer();
});
after(async () => {
  await server.close();
});

/** Asserts a complete problem+json answer on a raw exchange, closed afterwards. */
function rawProblem(response: RawResponse, status: number, code: ProblemCode): { detail: string; instance: string; requestId: string } {
  statuses.push(response.status);
  assert.equal(response.status, status, response.body.slice(0, 300));
  assert.match(response.headers['content-type'] ?? '', /^application\/problem\+json/);
  const problem = JSON.parse(response.body) as Record<string, unknown>;
  assert.equal(problem.code, code);
  assert.equal(problem.status, status);
  assert.equal(problem.type, `urn:scope:problem:${code}`);
  assert.equal(problem.title, problemRegistry[code].title);
  assert.equal(problem.status, problemRegistry[code].status);
  assert.equal(typeof problem.detail, 'string');
  assert.equal(problem.requestId, response.headers['x-request-id']);
  assert.equal(typeof problem.instance, 'string');
  return problem as { detail: string; instance: string; requestId: string };
}

function track<T extends { status: number }>(response: T): T {
  statuses.push(response.status);
  return response;
}

const close = 'Connection: close\r\n';

describe("Node's HTTP parser", () => {
  test('a 100,000-character path is 431 request_header_fields_too_large, a complete response, then the connection closes', async () => {
    const response = await rawRequest(server.url, `GET /v1/processes/${'a'.repeat(100_000)} HTTP/1.1\r\nHost: x\r\n${close}\r\n`);
    const problem = rawProblem(response, 431, 'request_header_fields_too_large');
    assert.equal(response.headers.connection, 'close');
    assert.ok(problem.detail.length < 300 && !problem.detail.includes('aaaa'), 'the path is not echoed');
    assert.ok(!problem.instance.includes('aaaa'));
    // A header block over the limit is the same problem.
    rawProblem(await rawRequest(server.url, `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'b'.repeat(100_000)}\r\n${close}\r\n`), 431, 'request_header_fields_too_large');
  });

  test('a bare CR or a bare LF inside a header value is 400 invalid_request', async () => {
    for (const value of ['a\rb', 'a\nb']) {
      const response = await rawRequest(server.url, `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Value: ${value}\r\n${close}\r\n`);
      rawProblem(response, 400, 'invalid_request');
      assert.equal(response.headers.connection, 'close');
    }
  });

  test('other requests that are not HTTP/1.1 are 400 invalid_request: a bad method, garbage, contradictory framing', async () => {
    const requests = [
      `FOO /healthz HTTP/1.1\r\nHost: x\r\n${close}\r\n`,
      'HELLO\r\n\r\n',
      `GET /healthz HTTP/9.9\r\nHost: x\r\n${close}\r\n`,
      `POST /v1/processes HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: abc\r\n${close}\r\n{}`,
      `POST /v1/processes HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\nContent-Type: application/json\r\n${close}\r\n{}`,
      `POST /v1/processes HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 2\r\n${close}\r\n2\r\n{}\r\n0\r\n\r\n`,
    ];
    for (const text of requests) {
      const problem = rawProblem(await rawRequest(server.url, text), 400, 'invalid_request');
      assert.match(problem.detail, /not a valid HTTP\/1\.1 request/, text);
    }
  });

  test('a client error after a complete exchange on a keep-alive connection answers once, after the first response', async () => {
    const bytes = await exchange(server.url, `GET /healthz HTTP/1.1\r\nHost: x\r\n\r\nGET /healthz HTTP/1.1\r\nHost: x\r\nX-A: a\rb\r\n\r\n`);
    const text = bytes.toString('latin1');
    const second = text.indexOf('HTTP/1.1 400');
    assert.ok(text.startsWith('HTTP/1.1 200') && second > 0, text);
    rawProblem(parseResponse(bytes.subarray(Buffer.byteLength(text.slice(0, second), 'latin1'))), 400, 'invalid_request');
  });

  test('HTTP/1.1 without a Host header is 400 invalid_request', async () => {
    const problem = rawProblem(await rawRequest(server.url, `GET /healthz HTTP/1.1\r\n${close}\r\n`), 400, 'invalid_request');
    assert.match(problem.detail, /Host/);
    // HTTP/1.0 needs none.
    const old = await rawRequest(server.url, 'GET /healthz HTTP/1.0\r\n\r\n');
    assert.equal(old.status, 200);
  });

  test('an expectation other than 100-continue is 417 expectation_failed; 100-continue is honoured', async () => {
    const problem = rawProblem(await rawRequest(server.url, `GET /healthz HTTP/1.1\r\nHost: x\r\nExpect: a-pony\r\n${close}\r\n`), 417, 'expectation_failed');
    assert.match(problem.detail, /a-pony/);
    const body = JSON.stringify({ deployment: 'demo.echo', input: { value: 'continue' } });
    const text = (
      await exchange(
        server.url,
        `POST /v1/processes HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n${close}\r\n${body}`,
      )
    ).toString('utf8');
    assert.match(text, /^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 201 /);
  });
});

test('a request that does not arrive in time is 408 request_timeout; other parser errors keep a quotable reason', () => {
  assert.deepEqual(classifyClientError(Object.assign(new Error('timeout'), { code: 'ERR_HTTP_REQUEST_TIMEOUT' })), {
    code: 'request_timeout',
    detail: 'the request did not arrive in time',
  });
  const parse = classifyClientError(Object.assign(new Error('Parse Error'), { code: 'HPE_INVALID_HEADER_TOKEN', reason: 'Invalid\r\nheader \u0000token' }));
  assert.equal(parse.code, 'invalid_request');
  assert.equal(parse.detail, 'not a valid HTTP/1.1 request (HPE_INVALID_HEADER_TOKEN: Invalid??header ?token)');
});

describe("Fastify's router", () => {
  test('a path that is not valid percent-encoding is 400 invalid_request, on API and docs routes alike', async () => {
    for (const path of ['/v1/processes/process:%zz', '/v1/trees/%E0%A4%A/stream', '/docs/%zz', '/docs/static/%zz', '/nowhere/%zz']) {
      const problem = problemOf(track(await request(server.url).get(path)), 400, 'invalid_request');
      assert.match(problem.detail, /percent-encoding/, path);
      assert.equal(problem.instance, path);
    }
  });

  test('a path segment longer than the router accepts is 400 invalid_request, the path not echoed', async () => {
    const response = track(await request(server.url).get(`/v1/processes/${'a'.repeat(3_000)}`));
    const problem = problemOf(response, 400, 'invalid_request');
    assert.ok(!problem.detail.includes('aaaa'));
  });

  test('HEAD of an unknown route and an unknown method on a known path are problems', async () => {
    const head = track(await request(server.url).head('/v1/nothing-here'));
    assert.equal(head.status, 404);
    assert.match(head.headers['content-type'] ?? '', /^application\/problem\+json/);
    for (const method of ['put', 'patch', 'delete', 'options'] as const) {
      problemOf(track(await request(server.url)[method]('/healthz')), 404, 'route_not_found');
    }
    problemOf(track(await request(server.url).get('/docs/no-such-page')), 404, 'route_not_found');
    problemOf(track(await request(server.url).get('/docs/static/no-such-asset.js')), 404, 'route_not_found');
  });

  test('an unsatisfiable Range on a docs asset is 416 range_not_satisfiable with its Content-Range', async () => {
    const response = track(await request(server.url).get('/docs/static/swagger-ui.css').set('Range', 'bytes=999999999-'));
    problemOf(response, 416, 'range_not_satisfiable');
    assert.match(response.headers['content-range'] ?? '', /^bytes \*\/\d+$/);
  });
});

describe('JSON bodies', () => {
  const post = (body: string) => request(server.url).post('/v1/processes').set('content-type', 'application/json').send(body);

  test('__proto__ anywhere in a body is 400 invalid_request naming the member as a prototype-pollution key', async () => {
    const cases: Array<[string, string]> = [
      ['{"deployment":"demo.echo","input":{"__proto__":{}}}', '/body/input/__proto__'],
      ['{"__proto__":{"admin":true},"deployment":"demo.echo","input":{}}', '/body/__proto__'],
      ['{"deployment":"demo.echo","input":{"list":[1,{"a":{"__proto__":null}}]}}', '/body/input/list/1/a/__proto__'],
      ['{"deployment":"demo.echo","input":{"\\u005f_proto__":{}}}', '/body/input/__proto__'],
    ];
    for (const [body, pointer] of cases) {
      const problem = problemOf(track(await post(body)), 400, 'invalid_request');
      assert.deepEqual(problem.errors, [{ pointer, keyword: 'prototypePollution', message: 'is refused as a prototype-pollution key' }], body);
      assert.ok(problem.detail.includes(pointer), problem.detail);
      assert.match(problem.detail, /prototype-pollution/);
      assert.doesNotMatch(problem.detail, /not valid JSON/);
    }
  });

  test('constructor.prototype is refused the same way; constructor and prototype alone are ordinary members', async () => {
    const problem = problemOf(track(await post('{"deployment":"demo.echo","input":{"constructor":{"prototype":{"admin":true}}}}')), 400, 'invalid_request');
    assert.deepEqual(problem.errors?.map((error) => [error.pointer, error.keyword]), [['/body/input/constructor/prototype', 'prototypePollution']]);
    assert.match(problem.detail, /\/body\/input\/constructor\/prototype/);
    // demo.echo's input schema then refuses the extra member on its meaning, not as pollution.
    for (const body of ['{"deployment":"demo.echo","input":{"value":"x","constructor":"c"}}', '{"deployment":"demo.echo","input":{"value":"x","prototype":{}}}']) {
      const response = track(await post(body));
      assert.notEqual(response.status, 400, response.text);
      assert.ok(response.status < 500, response.text);
    }
    assert.equal(track(await post('{"deployment":"demo.echo","input":{"value":"constructor.prototype __proto__"}}')).status, 201);
  });

  test('malformed and empty JSON keep their answers', async () => {
    const malformed = problemOf(track(await post('{"deployment":')), 400, 'invalid_request');
    assert.match(malformed.detail, /not valid JSON/);
    const empty = problemOf(track(await post('')), 400, 'invalid_request');
    assert.match(empty.detail, /empty/);
    assert.equal(track(await post('\uFEFF{"deployment":"demo.echo","input":{"value":"bom"}}')).status, 201);
  });
});

test('requests that arrive while the server shuts down are 503 shutting_down problems', async () => {
  let entered!: () => void;
  let release!: () => void;
  const closing = new Promise<void>((resolve) => (entered = resolve));
  const held = new Promise<void>((resolve) => (release = resolve));
  const stopping = await startServer({
    prepare(app) {
      app.addHook('preClose', async () => {
        entered();
        await held;
      });
    },
  });
  const closed = stopping.close();
  try {
    await closing;
    for (const path of ['/healthz', '/v1/deployments', '/nowhere']) {
      const response = await request(stopping.url).get(path);
      problemOf(response, 503, 'shutting_down');
      assert.equal(response.headers.connection, 'close');
    }
  } finally {
    release();
    await closed;
  }
});

test('no bad input in this file produced a 5xx', () => {
  assert.ok(statuses.length > 30, `${statuses.length} requests`);
  assert.deepEqual(statuses.filter((status) => status >= 500), []);
});
