import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import request from 'supertest';
import { ConfigError, loadConfig } from '../../src/server/config.js';
import { startServer, type TestServer } from './server.js';

/** Security headers on every response (helmet), and CORS only for the origins configured. */

describe('security headers', () => {
  let server: TestServer;
  before(async () => {
    server = await startServer();
  });
  after(async () => {
    await server.close();
  });

  test('API responses carry helmet headers and a strict content security policy', async () => {
    for (const path of ['/v1/deployments', '/v1/processes/process:missing', '/healthz']) {
      const response = await request(server.url).get(path);
      assert.equal(response.headers['x-content-type-options'], 'nosniff', path);
      assert.match(response.headers['content-security-policy'] ?? '', /default-src 'self'/, path);
      assert.match(response.headers['content-security-policy'] ?? '', /script-src 'self'(;|$)/, path);
      assert.equal(response.headers['x-frame-options'], 'SAMEORIGIN', path);
    }
  });

  test('/docs sets its own policy (Swagger UI\'s, scripts from itself only) and never upgrades plain http', async () => {
    const response = await request(server.url).get('/docs/');
    assert.equal(response.status, 200);
    const policy = response.headers['content-security-policy'] ?? '';
    assert.match(policy, /script-src 'self'/);
    assert.match(policy, /script-src-attr 'none'/, "Swagger UI's own policy, not the API's");
    assert.doesNotMatch(policy, /upgrade-insecure-requests/);
    assert.doesNotMatch(response.text, /<script>[^<]/, 'no inline script for the policy to allow');
  });

  test('no CORS by default: a preflight gets no allow-origin', async () => {
    const preflight = await request(server.url)
      .options('/v1/processes')
      .set('origin', 'http://evil.example')
      .set('access-control-request-method', 'POST');
    assert.equal(preflight.headers['access-control-allow-origin'], undefined);
  });
});

describe('CORS with an allowlist', () => {
  let server: TestServer;
  before(async () => {
    server = await startServer({ env: { SCOPE_CORS_ORIGINS: 'http://console.example:8080,https://ops.example' } });
  });
  after(async () => {
    await server.close();
  });

  test('an allowed origin gets its preflight and its responses; another does not', async () => {
    const preflight = await request(server.url)
      .options('/v1/processes')
      .set('origin', 'https://ops.example')
      .set('access-control-request-method', 'POST')
      .set('access-control-request-headers', 'content-type,idempotency-key');
    assert.equal(preflight.status, 204);
    assert.equal(preflight.headers['access-control-allow-origin'], 'https://ops.example');
    assert.match(preflight.headers['access-control-allow-headers'] ?? '', /idempotency-key/);
    const list = await request(server.url).get('/v1/deployments').set('origin', 'http://console.example:8080');
    assert.equal(list.headers['access-control-allow-origin'], 'http://console.example:8080');
    assert.match(list.headers['access-control-expose-headers'] ?? '', /x-request-id/);
    const other = await request(server.url).get('/v1/deployments').set('origin', 'http://evil.example');
    assert.equal(other.status, 200);
    assert.equal(other.headers['access-control-allow-origin'], undefined);
  });

  test('an origin with a path, or no scheme, is a configuration error', () => {
    for (const bad of ['https://ops.example/app', 'ops.example', 'ftp://x.example']) {
      assert.throws(() => loadConfig({ SCOPE_CORS_ORIGINS: bad }), ConfigError, bad);
    }
  });
});
