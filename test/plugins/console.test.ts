import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { createKey } from '../../src/app/auth/key-store.js';
import { consoleDist, consolePolicy } from '../../plugins/console/index.js';
import { startServer, type TestServer } from './server.js';

/** How `/` is served: the committed bundle, a strict policy, caching by content hash, the API's 404s untouched. */

const scripts = (html: string): string[] => [...html.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/g)].map((match) => `${match[1]}|${match[2]}`);

describe('the console at /', () => {
  let server: TestServer;
  before(async () => {
    server = await startServer();
  });
  after(async () => {
    await server.close();
  });

  test('index.html: no-cache, a strict script-src self policy, no inline script, assets named by hash and cached for good', async () => {
    const page = await fetch(`${server.url}/`);
    assert.equal(page.status, 200);
    assert.match(page.headers.get('content-type') ?? '', /^text\/html/);
    assert.equal(page.headers.get('cache-control'), 'no-cache');
    const policy = page.headers.get('content-security-policy') ?? '';
    assert.equal(policy, consolePolicy);
    assert.match(policy, /script-src 'self'(;|$)/);
    assert.doesNotMatch(policy, /unsafe-inline|unsafe-eval|https?:/);
    const html = await page.text();
    const found = scripts(html);
    assert.equal(found.length, 1);
    for (const script of found) {
      const [attributes = '', body = ''] = script.split('|');
      assert.equal(body.trim(), '', 'no inline script');
      assert.match(attributes, /src="\/console-[A-Z0-9]{8}\.js"/, 'a same-origin, hashed script');
    }
    const asset = /src="(\/console-[A-Z0-9]{8}\.js)"/.exec(html)![1]!;
    const js = await fetch(`${server.url}${asset}`);
    assert.equal(js.status, 200);
    assert.match(js.headers.get('content-type') ?? '', /javascript/);
    assert.equal(js.headers.get('cache-control'), 'public, max-age=31536000, immutable');
    const code = await js.text();
    assert.doesNotMatch(code, /import\s*\(?\s*["'`]https?:|from\s*["'`]https?:/, 'no import from the network');
    const css = /href="(\/console-[A-Z0-9]{8}\.css)"/.exec(html)![1]!;
    assert.equal((await fetch(`${server.url}${css}`)).status, 200);
  });

  test('the served files are exactly the committed bundle', async () => {
    for (const name of readdirSync(consoleDist)) {
      const served = await fetch(`${server.url}/${name}`);
      assert.equal(served.status, 200, name);
      assert.equal(Buffer.from(await served.arrayBuffer()).toString('base64'), readFileSync(join(consoleDist, name)).toString('base64'), name);
    }
  });

  test('paths that are neither the console nor the API keep the problem+json 404', async () => {
    const response = await fetch(`${server.url}/processes/anything`);
    assert.equal(response.status, 404);
    assert.match(response.headers.get('content-type') ?? '', /^application\/problem\+json/);
    assert.equal(((await response.json()) as { code: string }).code, 'route_not_found');
  });
});

describe('the console with authentication on', () => {
  const directory = mkdtempSync(join(tmpdir(), 'scope-console-auth-'));
  const keysFile = join(directory, 'keys.json');
  const reader = createKey({ id: 'reader', tenant: 'a', scopes: ['processes:read'] });
  let server: TestServer;
  before(async () => {
    writeFileSync(keysFile, JSON.stringify({ keys: [reader.entry] }));
    server = await startServer({ env: { SCOPE_AUTH: 'keys', SCOPE_API_KEYS_FILE: keysFile } });
  });
  after(async () => {
    await server.close();
    rmSync(directory, { recursive: true, force: true });
  });

  test('the page itself needs no token (it asks for one); the API behind it still does', async () => {
    assert.equal((await fetch(`${server.url}/`)).status, 200);
    assert.equal((await fetch(`${server.url}/v1/processes`)).status, 401);
    assert.equal((await fetch(`${server.url}/v1/processes`, { headers: { authorization: `Bearer ${reader.token}` } })).status, 200);
  });
});
