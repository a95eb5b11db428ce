import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { openSse, readSse, startTestServer, streamPath, type TestServer } from './sse-harness.js';

interface Entry {
  position: string;
  type: string;
  processId: string;
  data: any;
}

function eventsPath(processId: string, query = ''): string {
  return `/v1/processes/${encodeURIComponent(processId)}/events${query}`;
}

/** Every page from `after`, following `nextCursor`. */
async function allPages(server: TestServer, processId: string, limit: number, after?: string): Promise<{ entries: Entry[]; pages: number }> {
  const entries: Entry[] = [];
  let cursor = after;
  let pages = 0;
  for (;;) {
    const query = `?limit=${limit}${cursor === undefined ? '' : `&after=${cursor}`}`;
    const { status, body } = await server.json(eventsPath(processId, query));
    assert.equal(status, 200, JSON.stringify(body));
    assert.ok(body.items.length <= limit);
    entries.push(...body.items);
    pages += 1;
    if (body.nextCursor === null) return { entries, pages };
    cursor = body.nextCursor;
  }
}

describe('GET /v1/processes/{id}/events', () => {
  let server: TestServer;
  let echo: string;
  before(async () => {
    server = await startTestServer();
    echo = await server.start('demo.echo', { value: 'pages' });
    await server.result(echo);
  });
  after(async () => {
    await server.close();
  });

  test('pages hold the same entries, in the same order and positions, as the SSE stream', async () => {
    const { entries, pages } = await allPages(server, echo, 4);
    assert.ok(pages > 2, `several pages (${pages})`);
    const stream = await readSse(`${server.base}${streamPath(echo)}`);
    const streamed = stream.events.filter((event) => event.id !== undefined);
    assert.deepEqual(
      entries.map((entry) => [entry.position, entry.type]),
      streamed.map((event) => [event.id, event.event]),
    );
    assert.deepEqual(
      entries.map((entry) => entry.data),
      streamed.map((event) => event.data),
    );
    assert.equal(entries[0]?.type, 'agent.process.started');
    assert.ok(entries.some((entry) => entry.type === 'agent.process.finished'));
    assert.deepEqual(
      entries.filter((entry) => entry.type === 'agent.delta').map((entry) => entry.data.payload.char),
      [...'pages'],
    );
    assert.ok(entries.every((entry) => entry.processId === echo));
  });

  test('after= a position returns exactly the later entries; the default limit is 100', async () => {
    const { body: full } = await server.json(eventsPath(echo));
    assert.equal(full.nextCursor, null);
    assert.ok(full.items.length < 100);
    const middle = full.items[3] as Entry;
    const { status, body } = await server.json(eventsPath(echo, `?after=${middle.position}`));
    assert.equal(status, 200);
    assert.deepEqual(body.items, full.items.slice(4));

    const last = full.items.at(-1) as Entry;
    const { body: empty } = await server.json(eventsPath(echo, `?after=${last.position}`));
    assert.deepEqual(empty, { items: [], nextCursor: null });

    const { body: fromZero } = await server.json(eventsPath(echo, '?after=0'));
    assert.deepEqual(fromZero.items, full.items);
  });

  test('a page of an unfinished process, then the rest once it finished', async () => {
    const approval = await server.start('demo.approval', { subject: 'events' });
    // The stream says when the wait is committed.
    const live = await openSse(`${server.base}${streamPath(approval)}`);
    await live.waitFor((event) => event.event === 'agent.step.committed' && event.data.payload.status === 'waiting');
    live.close();
    const seen: Entry[] = (await server.json(eventsPath(approval))).body.items;
    assert.ok(seen.some((entry) => entry.type === 'agent.step.committed'));
    assert.ok(!seen.some((entry) => entry.type === 'agent.process.finished'));
    const { body: view } = await server.json(`/v1/processes/${encodeURIComponent(approval)}`);
    const { status } = await server.json(`/v1/processes/${encodeURIComponent(approval)}/signals`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ signals: [{ id: 'yes', waitId: view.waitId, payload: { approved: true } }] }),
    });
    assert.equal(status, 200);
    await server.result(approval);
    const { entries: rest } = await allPages(server, approval, 3, seen.at(-1)?.position);
    assert.ok(rest.some((entry) => entry.type === 'agent.process.finished'));
    const { entries: all } = await allPages(server, approval, 1000);
    assert.deepEqual([...seen, ...rest], all);
  });

  test('an unparseable cursor is 400 invalid_request', async () => {
    for (const after of ['abc', '01', '1-', '-1', '1-2-3', '1.5', '%0D%0A1', '99999999999999999999', '123456789012345678901']) {
      const { status, body } = await server.json(eventsPath(echo, `?after=${after}`));
      assert.equal(status, 400, `after=${after}: ${JSON.stringify(body)}`);
      assert.equal(body.code, 'invalid_request', after);
    }
    const { status, body } = await server.json(eventsPath(echo, '?after='));
    assert.equal(status, 400, JSON.stringify(body));
    assert.equal(body.code, 'invalid_request');
  });

  test('limit must be an integer in 1..1000; unknown parameters are refused', async () => {
    for (const query of ['?limit=0', '?limit=1001', '?limit=abc', '?limit=1.5', '?limit=-1', '?cursor=1', '?types=agent.delta']) {
      const { status, body } = await server.json(eventsPath(echo, query));
      assert.equal(status, 400, `${query}: ${JSON.stringify(body)}`);
      assert.equal(body.code, 'invalid_request', query);
    }
    const { status, body } = await server.json(eventsPath(echo, '?limit=1000'));
    assert.equal(status, 200);
    assert.ok(body.items.length > 0);
  });

  test('an unknown process is 404 process_not_found; a bad id is 400', async () => {
    const missing = await server.json(eventsPath('process:0123456789abcdef0123456789abcdef'));
    assert.equal(missing.status, 404);
    assert.equal(missing.body.code, 'process_not_found');
    const bad = await server.json(eventsPath('bad id'));
    assert.equal(bad.status, 400);
    assert.equal(bad.body.code, 'invalid_request');
  });

  test('the route is documented with its page schema and problems', async () => {
    const { body: document } = await server.json('/openapi.json');
    const operation = document.paths['/v1/processes/{id}/events'].get;
    assert.equal(operation.operationId, 'listProcessEvents');
    assert.deepEqual(operation.tags, ['events']);
    assert.equal(operation.responses['200'].content['application/json'].schema.$ref, '#/components/schemas/LogPage');
    assert.ok(document.components.schemas.LogEntry && document.components.schemas.LogPage);
    assert.deepEqual(
      operation.parameters.filter((parameter: any) => parameter.in === 'query').map((parameter: any) => parameter.name).sort(),
      ['after', 'limit', 'processId'],
    );
    assert.ok(operation.responses['400'] && operation.responses['404']);
  });
});
