import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { createKey } from '../../src/app/auth/key-store.js';
import { startServer, type TestServer as KeyedServer } from '../plugins/server.js';
import { startProxy, startTestServer, type TestServer } from '../plugins/sse-harness.js';

/**
 * The console at `/` in a real browser: headless Debian Chromium (playwright-core, a fresh temporary
 * profile per launch) against a real embedded server with the demo deployments. Each test drives the
 * page as a person would and asserts on the DOM; a failing test leaves a screenshot in
 * `test-artifacts/` (CI keeps it). With SCOPE_CONSOLE_SCREENSHOTS=<dir> the run also writes the README's
 * screenshots there (`npm run console:screenshots`).
 */
const chromiumPath = '/usr/bin/chromium';
const skip = existsSync(chromiumPath) ? false : `${chromiumPath} is absent (apt-get install -y chromium); the console browser tests cannot run`;
const artifacts = process.env.SCOPE_TEST_ARTIFACTS ?? 'test-artifacts';
const readmeShots = process.env.SCOPE_CONSOLE_SCREENSHOTS;
const launchArgs = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run', '--disable-sync'];

/** Keeps a screenshot of a failing tab in the CI artifacts folder. */
async function keepScreenshot(tab: Page, name: string): Promise<void> {
  await mkdir(artifacts, { recursive: true });
  await tab.screenshot({ path: join(artifacts, `console-${name}.png`), fullPage: true }).catch(() => undefined);
}

describe('the console in a browser', { skip }, () => {
  let server: TestServer;
  let browser: Browser;
  let context: BrowserContext;

  before(async () => {
    server = await startTestServer();
    browser = await chromium.launch({
      executablePath: chromiumPath,
      args: launchArgs,
    });
    context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
  });
  after(async () => {
    await context?.close();
    await browser?.close();
    await server?.close();
  });

  /** Runs `body` in a new tab; on failure keeps a screenshot and the page's errors. */
  async function inTab<T>(name: string, body: (tab: Page, errors: string[]) => Promise<T>): Promise<T> {
    const tab = await context.newPage();
    const errors: string[] = [];
    tab.on('pageerror', (error) => errors.push(error.message));
    try {
      const value = await body(tab, errors);
      assert.deepEqual(errors, [], 'no script error on the page');
      return value;
    } catch (error) {
      await keepScreenshot(tab, name);
      throw error;
    } finally {
      await tab.close();
    }
  }

  async function readmeShot(tab: Page, name: string): Promise<void> {
    if (readmeShots === undefined) return;
    await mkdir(readmeShots, { recursive: true });
    await tab.screenshot({ path: join(readmeShots, `${name}.png`) });
  }

  interface FirstRender {
    readonly at: number;
    readonly rows: number;
    readonly loading: boolean;
    readonly timeFilter: boolean;
  }

  /** Records what the app's first render put in the DOM (before anything else can change it), for {@link firstRenderOf}. */
  async function recordFirstRender(tab: Page): Promise<void> {
    await tab.addInitScript({
      content: `new MutationObserver((_, observer) => {
        if (document.querySelector('#app header') === null) return;
        observer.disconnect();
        window.firstRender = {
          at: performance.now(),
          rows: document.querySelectorAll('tbody tr[data-process-id]').length,
          loading: document.querySelector('main p[role="status"]') !== null,
          timeFilter: document.getElementById('filter-after') !== null,
        };
      }).observe(document, { childList: true, subtree: true });`,
    });
  }

  async function firstRenderOf(tab: Page): Promise<FirstRender> {
    return (await tab.evaluate('window.firstRender')) as FirstRender;
  }

  /** Every request the page made for the Processes view's first page, in order. */
  async function firstPageRequests(tab: Page): Promise<{ initiator: string; start: number; end: number }[]> {
    return JSON.parse(
      (await tab.evaluate(
        `JSON.stringify(performance.getEntriesByType('resource').filter((e) => e.name.endsWith('/v1/processes?limit=20')).map((e) => ({ initiator: e.initiatorType, start: e.startTime, end: e.responseEnd })))`,
      )) as string,
    ) as { initiator: string; start: number; end: number }[];
  }

  /** When the app had its first page (main.tsx's mark), or null before. */
  async function firstPageIn(tab: Page): Promise<number | null> {
    return (await tab.evaluate(`performance.getEntriesByName('scope.console.first-page')[0]?.startTime ?? null`)) as number | null;
  }

  /**
   * Waits until `selector` matches exactly `count` elements. The predicate is a function, not a
   * string: Playwright evaluates a string predicate again on every poll, and the console's CSP
   * (script-src 'self') refuses that eval once the check has to poll.
   */
  async function countReaches(tab: Page, selector: string, count: number, timeout = 20_000): Promise<void> {
    await tab.waitForFunction(
      ([target, expected]) => (globalThis as any).document.querySelectorAll(target).length === expected,
      [selector, count] as const,
      { timeout },
    );
  }

  /** Polls the API (not the page) until `predicate` holds: for preparing a scene, never for the assertion itself. */
  async function until<T>(read: () => Promise<T>, predicate: (value: T) => boolean, timeoutMs = 20_000): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const value = await read();
      if (predicate(value)) return value;
      if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms: ${JSON.stringify(value)}`);
      await new Promise((resolve) => setImmediate(resolve));
    }
  }

  const view = (id: string) => server.json(`/v1/processes/${encodeURIComponent(id)}`).then((response) => response.body);

  test('demo.approval: started from the Deployments form, listed in Processes, answered in the Inbox; the open tree turns completed live', async () => {
    await inTab('approval', async (tab) => {
      await tab.goto(`${server.base}/#/deployments`);
      const card = tab.locator('li.deployment[data-deployment="demo.approval"]');
      await card.locator('summary', { hasText: 'Start a process' }).click();
      await card.getByLabel('subject (required)').fill('ship the console');
      await card.getByRole('button', { name: 'Start demo.approval' }).click();
      const started = card.locator('.started a');
      await started.waitFor();
      const processId = (await started.textContent()) ?? '';
      assert.match(processId, /^process:[0-9a-f]{32}$/);

      await tab.goto(`${server.base}/#/processes?deployment=demo.approval`);
      const row = tab.locator(`tr[data-process-id="${processId}"]`);
      await row.locator('.status', { hasText: 'waiting' }).waitFor();
      assert.equal(await tab.locator('#filter-deployment').inputValue(), 'demo.approval', 'the filter comes from the URL');

      await row.getByRole('link').click();
      const node = tab.locator(`.tree-node[data-process-id="${processId}"]`);
      await tab.locator(`.tree-node[data-process-id="${processId}"][data-status="waiting"]`).waitFor();
      assert.match((await node.textContent()) ?? '', /waits \(external\)/);
      await tab.locator('[data-stream="live"]').waitFor();
      // Marks this document: a reload would lose it.
      await tab.evaluate('window.stillTheSamePage = true');

      await inTab('approval-inbox', async (inbox) => {
        await inbox.goto(`${server.base}/#/inbox`);
        const item = inbox.locator(`li.inbox-item[data-process-id="${processId}"]`);
        await item.getByLabel('approved (required)').check();
        await item.getByLabel('comment').fill('looks good');
        await readmeShot(inbox, 'console-inbox');
        await item.getByRole('button', { name: 'Send answer' }).click();
        await item.getByText('Answered from this page.').waitFor();
      });

      await tab.locator(`.tree-node[data-process-id="${processId}"][data-status="completed"]`).waitFor({ timeout: 20_000 });
      assert.equal(await tab.evaluate('window.stillTheSamePage'), true, 'the tree updated without a reload');
      assert.ok((await tab.locator('.events li[data-event="agent.signal.accepted"]').count()) >= 1, 'the answer is on the timeline');
      const result = await server.result(processId);
      assert.deepEqual(result.output, { subject: 'ship the console', approved: true, comment: 'looks good', notes: [] });
    });
  });

  test('demo.unreliable: the Unknown effect is listed under Unknown outcomes, resolved from the page after a confirmation naming it; the process completes', async () => {
    const processId = await server.start('demo.unreliable', { mode: 'unknown', replayable: false });
    await until(() => view(processId), (process) => process.unknownEffectIds.length === 1);
    await inTab('unknown', async (tab) => {
      await tab.goto(`${server.base}/#/unknown`);
      const item = tab.locator('li.unknown-item').filter({ hasText: processId });
      await item.waitFor();
      const effectId = (await item.getAttribute('data-effect-id')) ?? '';
      assert.match(effectId, /^effect:/);
      assert.match((await item.textContent()) ?? '', /Attempts\s*1/);
      await item.getByLabel('Payload (JSON)').fill('{"mode":"unknown","attempts":1}');
      await item.getByRole('button', { name: 'Resolve…' }).click();
      const confirmation = item.getByRole('alertdialog');
      assert.match((await confirmation.textContent()) ?? '', new RegExp(`Resolve effect ${effectId} of ${processId} as succeeded`));
      await readmeShot(tab, 'console-unknown');
      await confirmation.getByRole('button', { name: 'Confirm' }).click();
      await tab.locator(`.settled-list li[data-effect-id="${effectId}"]`, { hasText: 'Resolved as succeeded.' }).waitFor();
    });
    const result = await server.result(processId);
    assert.equal(result.status, 'completed');
    assert.deepEqual(result.output, { mode: 'unknown', attempts: 1 });
  });

  test("demo.fanout: the tree draws the root and its N children, each with its status, from the stream", async () => {
    const values = ['alpha', 'beta', 'gamma', 'delta', 'epsilon'];
    const rootId = await server.start('demo.fanout', { values, quorum: values.length });
    await inTab('fanout', async (tab) => {
      await tab.goto(`${server.base}/#/tree/${encodeURIComponent(rootId)}`);
      const root = tab.locator(`.tree-node[data-process-id="${rootId}"]`);
      await tab.locator(`.tree-node[data-process-id="${rootId}"][data-status="completed"]`).waitFor({ timeout: 20_000 });
      const children = root.locator(':scope > ul > li.tree-node');
      await countReaches(tab, '.tree-node[data-status="completed"]', values.length + 1);
      assert.equal(await children.count(), values.length);
      for (let index = 0; index < values.length; index += 1) assert.match((await children.nth(index).textContent()) ?? '', /demo\.echo.*completed/);
      await tab.locator('[data-stream="ended"]').waitFor();
      assert.equal(await tab.locator('.events li[data-event="agent.process.started"]').count(), values.length + 1);
      // The timeline filter shows one event type.
      await tab.getByLabel('Event type').selectOption('agent.process.finished');
      assert.equal(await tab.locator('.events li').count(), values.length + 1);
      await readmeShot(tab, 'console-tree');
    });
  });

  test('demo.counter: the open tree follows each committed step while the stream stays open (the next wait appears live)', async () => {
    const processId = await server.start('demo.counter', { target: 3 });
    const first = await until(() => view(processId), (process) => process.waitId !== null);
    await inTab('counter', async (tab) => {
      await tab.goto(`${server.base}/#/tree/${encodeURIComponent(processId)}`);
      await tab.locator(`.tree-node[data-process-id="${processId}"] .mark-wait[title="${first.waitId}"]`).waitFor();
      await tab.evaluate('window.stillTheSamePage = true');
      await server.json(`/v1/processes/${encodeURIComponent(processId)}/signals`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ signals: [{ id: 'round-1', waitId: first.waitId, payload: { add: 1 } }] }),
      });
      const second = await until(() => view(processId), (process) => process.waitId !== null && process.waitId !== first.waitId);
      await tab.locator(`.tree-node[data-process-id="${processId}"] .mark-wait[title="${second.waitId}"]`).waitFor({ timeout: 20_000 });
      assert.equal(await tab.locator('[data-stream="live"]').count(), 1, 'the stream is still open');
      assert.equal(await tab.evaluate('window.stillTheSamePage'), true);
    });
    await server.json(`/v1/processes/${encodeURIComponent(processId)}/kill`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
  });

  test('the tree marks a broken stream, resumes it from the last event id, and still follows the tree live', async () => {
    const processId = await server.start('demo.approval', { subject: 'through a proxy' });
    const waiting = await until(() => view(processId), (process) => process.waitId !== null);
    const proxy = await startProxy(server.port);
    try {
      await inTab('resync', async (tab) => {
        await tab.goto(`http://127.0.0.1:${proxy.port}/#/tree/${encodeURIComponent(processId)}`);
        await tab.locator(`.tree-node[data-process-id="${processId}"][data-status="waiting"]`).waitFor();
        await tab.locator('[data-stream="live"]').waitFor();
        // The stream is open before its first event arrives; a cut before any event leaves no id to resume from.
        await tab.locator('ol.events li[data-event]').first().waitFor();
        assert.equal(await tab.locator('.stream-resynced').count(), 0, 'no break marked before one happens');
        await tab.evaluate('window.stillTheSamePage = true');
        proxy.cut();
        const marker = tab.locator('.stream-resynced[data-stream="live"]');
        await marker.waitFor();
        assert.match((await marker.textContent()) ?? '', /resynced after a break \(1×/);
        assert.ok(
          proxy.heads.some((head) => /^GET \/v1\/trees\/[^ ]+\/stream/.test(head) && /\r\nlast-event-id: \d+/i.test(head)),
          'the reconnect resumes from the last id',
        );
        await server.json(`/v1/processes/${encodeURIComponent(processId)}/signals`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ signals: [{ id: 'after-the-break', waitId: waiting.waitId, payload: { approved: true } }] }),
        });
        await tab.locator(`.tree-node[data-process-id="${processId}"][data-status="completed"]`).waitFor({ timeout: 20_000 });
        assert.equal(await tab.evaluate('window.stillTheSamePage'), true);
        // Every committed event once: nothing repeated across the reconnect.
        const positions = await tab.locator('.events li .position').allTextContents();
        assert.equal(new Set(positions).size, positions.length, positions.join(' '));
      });
    } finally {
      await proxy.close();
    }
  });

  test('the has-Unknown and has-open-gate filters: kept in the URL, rows marked in words, sent to the bulk dry run; the Unknown view names each attempt\'s worker', async () => {
    const unknown = await server.start('demo.unreliable', { mode: 'unknown', replayable: false });
    const gate = await server.start('demo.approval', { subject: 'filtered' });
    await until(() => view(unknown), (process) => process.unknownEffectIds.length === 1);
    await until(() => view(gate), (process) => process.waitKind === 'external');
    await inTab('marks', async (tab) => {
      const posts: string[] = [];
      tab.on('request', (request) => {
        if (request.method() === 'POST') posts.push(request.postData() ?? '');
      });
      await tab.goto(`${server.base}/#/processes?hasUnknown=true`);
      const unknownRow = tab.locator(`tr[data-process-id="${unknown}"]`);
      await unknownRow.waitFor();
      assert.equal(await tab.locator('#filter-unknown').inputValue(), 'true', 'the filter comes from the URL');
      assert.match((await unknownRow.textContent()) ?? '', /Unknown outcome/);
      assert.equal(await tab.locator(`tr[data-process-id="${gate}"]`).count(), 0, 'a tree without an Unknown is not listed');
      const rows = await tab.locator('tbody tr[data-process-id]').allTextContents();
      assert.ok(rows.every((text) => /Unknown outcome/.test(text)), rows.join(' | '));

      // Switch filters from the page: the URL follows, and so does the list.
      await tab.getByLabel('Unknown outcome').selectOption('');
      await tab.getByLabel('Open gate').selectOption('true');
      const gateRow = tab.locator(`tr[data-process-id="${gate}"]`);
      await gateRow.waitFor();
      assert.match((await gateRow.textContent()) ?? '', /Open gate/);
      assert.equal(await tab.locator(`tr[data-process-id="${unknown}"]`).count(), 0);
      const hash = await tab.evaluate('location.hash');
      assert.match(String(hash), /hasOpenGate=true/);
      assert.doesNotMatch(String(hash), /hasUnknown/);

      await tab.getByRole('button', { name: 'Dry run: count matching processes' }).click();
      const confirmation = tab.getByRole('alertdialog');
      await confirmation.waitFor();
      assert.match((await confirmation.textContent()) ?? '', /matching with an open gate/);
      assert.deepEqual(JSON.parse(posts[0] ?? '{}').filter, { hasOpenGate: true });
      await confirmation.getByRole('button', { name: 'Dismiss' }).click();

      await tab.goto(`${server.base}/#/unknown`);
      const item = tab.locator('li.unknown-item').filter({ hasText: unknown });
      await item.waitFor();
      assert.deepEqual(await item.locator('.attempts .attempt-worker').allTextContents(), ['embedded'], 'the one attempt ran in this (embedded) node');
    });
    for (const id of [unknown, gate]) await server.json(`/v1/processes/${encodeURIComponent(id)}/kill`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
  });

  test('bulk cancel of 10 demo.sleep processes by filter: the server\'s dry-run count, a confirmation, then one bulk call cancels every one', async () => {
    const ids: string[] = [];
    for (let index = 0; index < 10; index += 1) ids.push(await server.start('demo.sleep', { ms: 600_000 }));
    await until(
      () => server.json('/v1/processes?deployment=demo.sleep&status=running&limit=100').then((response) => response.body.items.length),
      (count) => count === 10,
    );
    await inTab('bulk', async (tab) => {
      const controls: string[] = [];
      tab.on('request', (request) => {
        if (request.method() === 'POST') controls.push(`${new URL(request.url()).pathname} ${request.postData() ?? ''}`);
      });
      await tab.goto(`${server.base}/#/processes?deployment=demo.sleep&status=running`);
      await countReaches(tab, 'tbody tr[data-process-id]', 10);
      await tab.getByLabel('Action', { exact: true }).selectOption('cancel');
      await tab.getByRole('button', { name: 'Dry run: count matching processes' }).click();
      const confirmation = tab.getByRole('alertdialog');
      await confirmation.waitFor();
      assert.match((await confirmation.textContent()) ?? '', /cancel 10 processes \(with their trees\) matching status running, deployment demo\.sleep/);
      assert.equal(controls.length, 1, `the count is the server's dry run: ${controls.join(' | ')}`);
      assert.deepEqual(JSON.parse(controls[0]!.slice('/v1/processes:bulk '.length)), { filter: { status: 'running', deployment: 'demo.sleep' }, action: 'cancel', dryRun: true });
      for (const id of ids) assert.notEqual((await view(id)).status, 'canceled', 'the dry run changed nothing');
      await confirmation.getByRole('button', { name: 'Confirm: cancel 10' }).click();
      await tab.locator('.bulk-progress[data-done="true"]', { hasText: 'cancel: 10 matched, 10 affected (10 processes), 0 skipped, 0 failed' }).waitFor();
      assert.ok(
        controls.every((line) => line.startsWith('/v1/processes:bulk ')),
        `no per-process control route is called: ${controls.join(' | ')}`,
      );
      await tab.getByText('No process matches.').waitFor({ timeout: 20_000 });
    });
    for (const id of ids) assert.equal((await server.result(id)).status, 'canceled');
  });

  test('a second answer to an answered gate shows who answered first (when, provenance, actor)', async () => {
    const processId = await server.start('demo.approval', { subject: 'twice' });
    await until(() => view(processId), (process) => process.waitId !== null);
    await inTab('conflict', async (tab) => {
      await tab.goto(`${server.base}/#/inbox`);
      const item = tab.locator(`li.inbox-item[data-process-id="${processId}"]`);
      await item.getByLabel('approved (required)').check();
      const gateId = (await item.getAttribute('data-gate-id')) ?? '';
      assert.match(gateId, /^gate:/);
      // Someone else answers first, through the same gate.
      const first = await server.json(`/v1/gates/${encodeURIComponent(gateId)}/answer`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ answer: { approved: false }, requestId: 'someone-else', actor: 'ada' }),
      });
      assert.equal(first.status, 200);
      await item.getByRole('button', { name: 'Send answer' }).click();
      const shown = item.locator('.first-answer');
      await shown.waitFor();
      assert.equal(await shown.getAttribute('data-provenance'), 'human');
      const text = (await shown.textContent()) ?? '';
      assert.match(text, /Answered first at .+ by ada \(provenance: human\)/);
      assert.ok(text.includes(String(first.body.gate.answer.answeredAt).replace('T', ' ').replace(/\.\d+Z$/, 'Z')), `when: ${text}`);
      assert.equal(await item.locator('.problem').getAttribute('data-code'), 'gate_already_answered');
    });
    assert.equal(((await server.result(processId)).output as { approved: boolean }).approved, false);
  });

  test('an answer resent after a lost response keeps its request id: admitted once, shown as answered', async () => {
    const processId = await server.start('demo.approval', { subject: 'lost response' });
    await until(() => view(processId), (process) => process.waitId !== null);
    await inTab('retry', async (tab) => {
      const requestIds: string[] = [];
      let lose = true;
      // The first answer reaches the server, but its response never reaches the page.
      await tab.route('**/v1/gates/*/answer', async (route) => {
        requestIds.push(JSON.parse(route.request().postData() ?? '{}').requestId);
        if (!lose) return route.continue();
        lose = false;
        await route.fetch();
        await route.abort('connectionreset');
      });
      await tab.goto(`${server.base}/#/inbox`);
      const item = tab.locator(`li.inbox-item[data-process-id="${processId}"]`);
      await item.getByLabel('approved (required)').check();
      await item.getByRole('button', { name: 'Send answer' }).click();
      await item.locator('.problem').waitFor();
      await item.getByRole('button', { name: 'Send answer' }).click();
      await item.getByText('Answered from this page.').waitFor();
      assert.equal(requestIds.length, 2);
      assert.equal(requestIds[0], requestIds[1], 'the retry carries the same request id');
    });
    assert.equal(((await server.result(processId)).output as { approved: boolean }).approved, true);
  });

  test('a tree-wide cancel from the Tree view ends every live process of an example.collaboration.research tree, shown live', async () => {
    const rootId = await server.start('example.collaboration.research', { topic: 'the console', surveyMs: 60_000 });
    const tree = () => server.json(`/v1/trees/${encodeURIComponent(rootId)}`).then((response) => response.body as { processes: { processId: string; deployment: string; status: string }[] });
    const live = await until(tree, (body) => body.processes.some((process) => process.deployment === 'example.collaboration.research.survey' && process.status === 'running'));
    const survey = live.processes.find((process) => process.deployment === 'example.collaboration.research.survey')!.processId;
    await inTab('tree-cancel', async (tab) => {
      await tab.goto(`${server.base}/#/tree/${encodeURIComponent(rootId)}`);
      await tab.locator(`.tree-node[data-process-id="${survey}"][data-status="running"]`).waitFor();
      await tab.locator('[data-stream="live"]').waitFor();
      await tab.evaluate('window.stillTheSamePage = true');
      const group = tab.getByRole('group', { name: `Controls for the whole tree ${rootId}` });
      await group.getByRole('button', { name: 'cancel the whole tree' }).click();
      const done = group.locator('.tree-control-done');
      await done.waitFor();
      const affected = Number(/cancel of the whole tree: (\d+) process/.exec((await done.textContent()) ?? '')?.[1]);
      assert.ok(affected >= 2, `the root and the survey at least: ${affected}`);
      await tab.locator(`.tree-node[data-process-id="${rootId}"][data-status="canceled"]`).waitFor({ timeout: 20_000 });
      await tab.locator(`.tree-node[data-process-id="${survey}"][data-status="canceled"]`).waitFor({ timeout: 20_000 });
      await countReaches(tab, '.tree-node[data-status="canceled"]', affected);
      const statuses = await tab.locator('.tree-node').evaluateAll((nodes) => nodes.map((node) => node.getAttribute('data-status')));
      assert.ok(
        statuses.every((status) => status === 'canceled' || status === 'completed'),
        `every process ended: canceled, or completed before the cancel: ${statuses.join(' ')}`,
      );
      assert.equal(await tab.evaluate('window.stillTheSamePage'), true, 'shown live, without a reload');
    });
    const after = await tree();
    assert.equal(after.processes.filter((process) => process.status === 'canceled').length, after.processes.filter((process) => process.status !== 'completed').length);
  });

  test('the first load: the first page comes once, from the page\'s preload, in the app\'s first render; the start-time filters follow the first paint', async () => {
    await server.start('demo.echo', { value: 'first load' });
    // A warm list path answers well within the app's first-page wait (a cold one can exceed it on a loaded machine).
    for (let warm = 0; warm < 3; warm += 1) await fetch(`${server.base}/v1/processes?limit=20`).then((response) => response.text());
    await inTab('first-load', async (tab) => {
      await recordFirstRender(tab);
      await tab.goto(`${server.base}/#/processes`);
      await tab.locator('#filter-after').waitFor();
      const first = await firstRenderOf(tab);
      // One request for the first page, made by the preload (not a second one by the script): the
      // refresh comes two seconds after the render, so anything before it would be a duplicate.
      const lists = await firstPageRequests(tab);
      const [preload] = lists;
      assert.equal(preload?.initiator, 'link', JSON.stringify(lists));
      // When the app had the page (its mark), not when the network did: on a loaded machine the
      // answer's promise can still be queued behind the app's timer after the response has ended.
      // A page later than the first render is marked after the filters appear, and before its rows.
      await tab.locator('tbody tr[data-process-id]').first().waitFor();
      const pageIn = await firstPageIn(tab);
      const seen = JSON.stringify({ first, preload, pageIn });
      assert.ok(pageIn !== null && pageIn >= preload.end, `the app took the preload's answer: ${seen}`);
      if (pageIn < first.at) {
        assert.ok(first.rows > 0, `the page was in before the first render, which shows its rows: ${seen}`);
        assert.equal(first.loading, false, 'no "Loading…" frame before them');
      } else {
        // The app waits 250 ms for the first page (main.tsx), then renders "Loading…": a loaded
        // machine can answer later than that, and the rows follow in the next frame.
        assert.equal(first.loading, true, `rendered before the page came: the loading state, ${seen}`);
        assert.ok(first.at - preload.start >= 240, `the first render waited for the page: ${seen}`);
      }
      assert.equal(first.timeFilter, false, 'the date-time inputs are created after the first paint');
      assert.deepEqual(lists.filter((entry) => entry.start < preload.end + 1_500), [preload], 'the script took the preload\'s answer');

      // The deferred inputs still show the filter from the URL.
      await tab.goto('about:blank');
      await tab.goto(`${server.base}/#/processes?startedAfter=2020-01-02T03:04`);
      await tab.locator('#filter-after').waitFor();
      assert.equal(await tab.locator('#filter-after').inputValue(), '2020-01-02T03:04');
      assert.equal(await tab.locator('#filter-after').getAttribute('type'), 'datetime-local');
    });
  });

  test('a slow first page: the first render shows "Loading…" after the app\'s whole wait, then the rows from the same one request', async () => {
    await server.start('demo.echo', { value: 'slow first page' });
    await inTab('slow-first-page', async (tab) => {
      // The list's answer is held back past the app's 250 ms wait (main.tsx): a slow server, injected.
      const holdMs = 600;
      await tab.route('**/v1/processes?limit=20', async (route) => {
        await new Promise((resolve) => setTimeout(resolve, holdMs));
        await route.continue();
      });
      await recordFirstRender(tab);
      await tab.goto(`${server.base}/#/processes`);
      // The app marks the page (main.tsx) before the view that awaits the same answer shows its rows.
      await tab.locator('tbody tr[data-process-id]').first().waitFor({ timeout: 20_000 });
      const first = await firstRenderOf(tab);
      const pageIn = await firstPageIn(tab);
      const lists = await firstPageRequests(tab);
      const [preload] = lists;
      const seen = JSON.stringify({ first, pageIn, lists });
      assert.equal(preload?.initiator, 'link', `the page came from the preload: ${seen}`);
      assert.ok(pageIn !== null, `the app had the page when its rows showed: ${seen}`);
      assert.equal(first.loading, true, `the first render came before the page: the loading state, ${seen}`);
      assert.equal(first.rows, 0, seen);
      assert.ok(pageIn > first.at, `the page came after that render: ${seen}`);
      assert.ok(first.at - preload.start >= 240, `the first render waited for the page first: ${seen}`);
      assert.deepEqual(lists.filter((entry) => entry.start < pageIn), [preload], `and from no second request: ${seen}`);
    });
  });

  test('the Processes view asks for one page, not the whole store, with many processes present', async () => {
    const count = 250;
    for (let index = 0; index < count; index += 1) await server.host.startProcess({ deployment: 'demo.echo', input: { value: String(index) } });
    await inTab('one-page', async (tab) => {
      const lists: string[] = [];
      tab.on('request', (request) => {
        const url = new URL(request.url());
        if (url.pathname.startsWith('/v1/')) lists.push(url.pathname + url.search);
      });
      await tab.goto(`${server.base}/#/processes`);
      await countReaches(tab, 'tbody tr[data-process-id]', 20);
      await tab.getByRole('button', { name: 'Next page' }).waitFor();
      assert.ok(lists.length >= 1);
      for (const path of lists) assert.equal(path, '/v1/processes?limit=20', `only the first page is asked for: ${lists.join(' ')}`);
      await tab.getByRole('button', { name: 'Next page' }).click();
      await tab.waitForFunction(() => (globalThis as any).location.hash.includes('cursor='));
      await countReaches(tab, 'tbody tr[data-process-id]', 20);
      const paged = lists.filter((path) => path.includes('cursor='));
      assert.ok(paged.length >= 1, 'the next page follows the cursor');
      assert.ok(paged.every((path) => path.includes('limit=20')));
    });
  });
});

describe('the console with authentication on', { skip }, () => {
  const directory = mkdtempSync(join(tmpdir(), 'scope-console-keys-'));
  const key = createKey({ id: 'operator', tenant: 'ops', scopes: ['processes:read', 'processes:write'] });
  let server: KeyedServer;
  let browser: Browser;
  before(async () => {
    const keysFile = join(directory, 'keys.json');
    writeFileSync(keysFile, JSON.stringify({ keys: [key.entry] }));
    // The plugin tests' server: buildApp gets the whole configuration, authentication included.
    server = await startServer({ env: { SCOPE_AUTH: 'keys', SCOPE_API_KEYS_FILE: keysFile } });
    browser = await chromium.launch({ executablePath: chromiumPath, args: launchArgs });
  });
  after(async () => {
    await browser?.close();
    await server?.close();
    rmSync(directory, { recursive: true, force: true });
  });

  const call = async (path: string, body?: unknown): Promise<any> => {
    const response = await fetch(`${server.url}${path}`, {
      method: body === undefined ? 'GET' : 'POST',
      headers: { authorization: `Bearer ${key.token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return response.json();
  };

  test('the page asks for a token, then lists processes and follows the tree stream live with it (fetch + Authorization)', async () => {
    const started = await call('/v1/processes', { deployment: 'demo.approval', input: { subject: 'with a key' } });
    const processId = started.processId as string;
    const tab = await browser.newPage();
    try {
      await tab.goto(`${server.url}/#/processes`);
      await tab.getByText('This server requires an API token').waitFor();
      await tab.getByLabel('Bearer token').fill(key.token);
      await tab.getByRole('button', { name: 'Use token' }).click();
      await tab.locator(`tr[data-process-id="${processId}"]`).waitFor();
      await tab.locator(`tr[data-process-id="${processId}"]`).getByRole('link').click();
      await tab.locator(`.tree-node[data-process-id="${processId}"][data-status="waiting"]`).waitFor();
      await tab.locator('[data-stream="live"]').waitFor();
      const view = await call(`/v1/processes/${encodeURIComponent(processId)}`);
      await call(`/v1/processes/${encodeURIComponent(processId)}/signals`, { signals: [{ id: 'keyed-answer', waitId: view.waitId, payload: { approved: true } }] });
      await tab.locator(`.tree-node[data-process-id="${processId}"][data-status="completed"]`).waitFor({ timeout: 20_000 });
      await tab.locator('[data-stream="ended"]').waitFor();
    } catch (error) {
      await keepScreenshot(tab, 'auth');
      throw error;
    } finally {
      await tab.close();
    }
  });
});
