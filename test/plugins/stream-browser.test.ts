import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { chromium, type Browser } from 'playwright-core';
import { streamTypeNames } from '../../plugins/stream/index.js';
import { startTestServer, type TestServer } from './sse-harness.js';

/**
 * A real browser on the stream: headless Debian Chromium (driven by playwright-core, no downloaded
 * browser) opens a page served by the same server, whose script uses the native `EventSource` and
 * collects event names until `scope.stream.end`. `.ci/run` installs chromium so CI runs this.
 */
const chromiumPath = '/usr/bin/chromium';
const skip = existsSync(chromiumPath) ? false : `${chromiumPath} is absent (apt-get install -y chromium); the browser test cannot run`;

/**
 * The page: ?root=<rootId>; publishes `window.streamResult` = {names, ids, end} once the stream ends.
 * (Browser-side expressions are strings: this file is type-checked without the DOM library.)
 */
function page(): string {
  const types = JSON.stringify(streamTypeNames);
  return `<!doctype html>
<html><head><meta charset="utf-8"><title>Scope stream</title><link rel="icon" href="data:,"></head>
<body><ol id="log"></ol>
<script>
  const root = new URLSearchParams(location.search).get('root');
  const names = [];
  const ids = [];
  const source = new EventSource('/v1/trees/' + encodeURIComponent(root) + '/stream');
  const note = (name, id) => {
    names.push(name);
    if (id) ids.push(id);
    const item = document.createElement('li');
    item.textContent = name + (id ? ' #' + id : '');
    document.getElementById('log').append(item);
  };
  for (const type of ${types}) source.addEventListener(type, (message) => note(type, message.lastEventId));
  source.addEventListener('scope.stream.end', (message) => {
    note('scope.stream.end');
    source.close();
    window.streamResult = { names, ids, end: JSON.parse(message.data) };
  });
  source.addEventListener('scope.stream.error', (message) => {
    source.close();
    window.streamResult = { names, ids, error: JSON.parse(message.data) };
  });
</script></body></html>`;
}

describe('the stream in a browser (native EventSource)', { skip }, () => {
  let server: TestServer;
  let browser: Browser;
  before(async () => {
    server = await startTestServer({
      beforeListen(app) {
        // The test page's script is inline: it carries its own policy (the app's forbids inline scripts).
        app.get('/test/stream-page', { schema: { hide: true } }, async (_request, reply) =>
          reply.header('content-security-policy', "default-src 'self'; script-src 'unsafe-inline'").type('text/html; charset=utf-8').send(page()),
        );
      },
    });
    browser = await chromium.launch({
      executablePath: chromiumPath,
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    });
  });
  after(async () => {
    await browser?.close();
    await server?.close();
  });

  test('a live demo.approval stream: events until scope.stream.end', async () => {
    const rootId = await server.start('demo.approval', { subject: 'browser' });
    const tab = await browser.newPage();
    const errors: string[] = [];
    tab.on('pageerror', (error) => errors.push(error.message));
    try {
      await tab.goto(`${server.base}/test/stream-page?root=${encodeURIComponent(rootId)}`);
      // The page is connected and has seen the wait: answer it, live.
      // Predicates as functions, not strings: a string predicate is eval'd in the page, which the
      // page's CSP (no 'unsafe-eval') refuses whenever Playwright has to poll it.
      await tab.waitForFunction(() => (globalThis as any).document.getElementById('log').textContent.includes('agent.step.committed'));
      const { body: view } = await server.json(`/v1/processes/${encodeURIComponent(rootId)}`);
      const { status } = await server.json(`/v1/processes/${encodeURIComponent(rootId)}/signals`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ signals: [{ id: 'browser-answer', waitId: view.waitId, payload: { approved: true } }] }),
      });
      assert.equal(status, 200);
      const handle = await tab.waitForFunction(() => (globalThis as any).streamResult, undefined, { timeout: 20_000 });
      const result = (await handle.jsonValue()) as { names: string[]; ids: string[]; end?: { reason: string; rootId: string } };
      assert.equal(result.names[0], 'agent.process.started');
      assert.ok(result.names.includes('agent.signal.accepted'), result.names.join(' '));
      assert.ok(result.names.includes('agent.process.finished'), result.names.join(' '));
      assert.equal(result.names.at(-1), 'scope.stream.end');
      assert.deepEqual(result.end, { rootId, reason: 'completed', lastEventId: result.ids.at(-1) });
      assert.equal(new Set(result.ids).size, result.ids.length, 'no id twice');
      assert.deepEqual(errors, []);
    } finally {
      await tab.close();
    }
  });

  test('demo.echo deltas reach the page', async () => {
    const rootId = await server.start('demo.echo', { value: 'browser' });
    const tab = await browser.newPage();
    try {
      await tab.goto(`${server.base}/test/stream-page?root=${encodeURIComponent(rootId)}`);
      const handle = await tab.waitForFunction(() => (globalThis as any).streamResult, undefined, { timeout: 20_000 });
      const result = (await handle.jsonValue()) as { names: string[] };
      assert.equal(result.names.filter((name) => name === 'agent.delta').length, 'browser'.length);
      assert.equal(result.names.at(-1), 'scope.stream.end');
    } finally {
      await tab.close();
    }
  });
});
