import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { buildApp } from '../../src/app/app.js';
import { loadConfig } from '../../src/server/config.js';
import { EngineHost } from '../../src/server/engine-host.js';
import { HistoryTrimmedError } from '../../src/server/errors.js';
import type { Host, StreamOptions, TreeStream } from '../../src/server/host.js';
import { requireRedisServer, startRedisServer, type RedisServer } from '../helpers/redis-server.js';
import { openSse, readSse, startTestServer, streamPath, type SseEvent, type TestServer } from './sse-harness.js';

/**
 * Trimmed history over HTTP: `/events?after=` and the SSE stream's cursor answer 410 `history_trimmed`
 * (with `firstAvailable`) instead of skipping what retention removed; a stream from the beginning says
 * where it starts; a stream that falls behind ends with `scope.stream.error` (`history_trimmed`).
 */

const json = { 'content-type': 'application/json' };

function eventsPath(processId: string, query = ''): string {
  return `/v1/processes/${encodeURIComponent(processId)}/events${query}`;
}

/** A waiting demo.approval whose log then receives far more entries than it keeps; the position of its first entry. */
async function trimmedProcess(server: TestServer): Promise<{ pid: string; first: string }> {
  const pid = await server.start('demo.approval', { subject: 'retention over http' });
  const session = await openSse(`${server.base}${streamPath(pid)}`);
  const started = await session.waitFor((event) => event.event === 'agent.process.started');
  await session.waitFor((event) => event.event === 'agent.step.committed' && event.data.payload?.status === 'waiting');
  session.close();
  await session.done;
  const signals = Array.from({ length: 300 }, (_, index) => ({ id: `note-${index}`, payload: { note: `note ${index}` } }));
  const { status, body } = await server.json(`/v1/processes/${encodeURIComponent(pid)}/signals`, {
    method: 'POST',
    headers: json,
    body: JSON.stringify({ signals }),
  });
  assert.equal(status, 200, JSON.stringify(body));
  return { pid, first: started.id as string };
}

function expectTrimmed(status: number, body: any, firstAvailable: string): void {
  assert.equal(status, 410, JSON.stringify(body));
  assert.equal(body.code, 'history_trimmed');
  assert.equal(body.type, 'urn:scope:problem:history_trimmed');
  assert.equal(body.status, 410);
  assert.equal(body.firstAvailable, firstAvailable);
  assert.match(body.detail, /trimmed/);
}

function retentionFlows(mode: string, env: () => Record<string, string>): void {
  describe(`trimmed history over HTTP (${mode})`, () => {
    let server: TestServer;
    let pid: string;
    let first: string;
    let firstAvailable: string;
    before(async () => {
      server = await startTestServer({ env: env(), stream: { keepAliveMs: 60_000 } });
      ({ pid, first } = await trimmedProcess(server));
      const { body } = await server.json(eventsPath(pid, '?limit=1000'));
      firstAvailable = body.items[0].position;
    });
    after(async () => {
      await server.json(`/v1/processes/${encodeURIComponent(pid)}/cancel`, { method: 'POST', headers: json, body: '{}' });
      await server.close();
    });

    test('/events without a cursor starts at the oldest entry held; a trimmed cursor is 410 history_trimmed', { timeout: 30_000 }, async () => {
      const { status, body } = await server.json(eventsPath(pid, '?limit=1000'));
      assert.equal(status, 200);
      assert.deepEqual(Object.keys(body).sort(), ['items', 'nextCursor'], 'the page shape does not change');
      assert.notEqual(firstAvailable, first);
      assert.equal(body.items[0].type, 'agent.signal.accepted');

      const response = await fetch(`${server.base}${eventsPath(pid, `?after=${first}`)}`);
      assert.match(response.headers.get('content-type') ?? '', /^application\/problem\+json/);
      expectTrimmed(response.status, await response.json(), firstAvailable);
      // A cursor inside what is held still pages on.
      const inside = await server.json(eventsPath(pid, `?after=${firstAvailable}&limit=1000`));
      assert.equal(inside.status, 200);
      assert.deepEqual(inside.body.items, body.items.slice(1));
    });

    test('the stream refuses a trimmed Last-Event-ID or ?after= with 410 before any event', { timeout: 30_000 }, async () => {
      for (const headers of [{ 'last-event-id': first }, {}] as Record<string, string>[]) {
        const path = streamPath(pid, 'last-event-id' in headers ? '' : `?after=${first}`);
        const response = await fetch(`${server.base}${path}`, { headers: { accept: 'text/event-stream', ...headers } });
        assert.match(response.headers.get('content-type') ?? '', /^application\/problem\+json/);
        expectTrimmed(response.status, await response.json(), firstAvailable);
      }
    });

    test('a stream from the beginning opens with scope.stream.notice, then the oldest entry held', { timeout: 30_000 }, async () => {
      for (const query of ['', '?after=0']) {
        const session = await openSse(`${server.base}${streamPath(pid, query)}`);
        try {
          assert.equal(session.status, 200);
          await session.waitFor((event) => event.id === firstAvailable);
          const [notice, next] = session.events;
          assert.deepEqual(notice, { id: undefined, event: 'scope.stream.notice', data: { reason: 'history_trimmed', firstAvailable } });
          assert.equal((next as SseEvent).id, firstAvailable);
        } finally {
          session.close();
          await session.done;
        }
      }
    });
  });
}

retentionFlows('embedded', () => ({ SCOPE_EVENT_LOG_MAXLEN: '20' }));

let redis: RedisServer | undefined;
before(async () => {
  requireRedisServer();
  redis = await startRedisServer();
});
after(async () => {
  await redis?.stop();
});
retentionFlows('redis', () => ({ SCOPE_REDIS_URL: (redis as RedisServer).url, SCOPE_KEY_PREFIX: `trimmed-${process.pid}`, SCOPE_EVENT_LOG_MAXLEN: '10' }));

describe('a stream that falls behind retention', () => {
  test('ends with scope.stream.error {reason: history_trimmed, firstAvailable, lastEventId}, not scope.stream.end', { timeout: 30_000 }, async () => {
    const config = loadConfig({ SCOPE_SHUTDOWN_MS: '300' });
    const engine = new EngineHost({ config, defaultMetrics: false });
    let cut: { cursor: string; firstAvailable: string } | undefined;
    // The Host's live tail reports what a reader that fell behind the log meets (EngineHost does this itself,
    // see test/server/history-trimmed.test.ts); here it happens on cue, once the stored history is written.
    const host = new Proxy(engine, {
      get(target, property) {
        if (property === 'openStream') {
          return async (rootId: string, options: StreamOptions): Promise<TreeStream> => {
            const opened = await engine.openStream(rootId, options);
            return {
              trimmedStart: opened.trimmedStart,
              end: undefined,
              async *[Symbol.asyncIterator]() {
                let cursor = options.after ?? '0';
                for await (const item of opened) {
                  if (item.live) break;
                  yield item;
                  cursor = item.entry.position;
                  // The history a page holds now is all written: the "live" part begins behind retention.
                  const rest = await engine.events(rootId, { after: cursor, limit: 1 });
                  if (rest.items.length === 0) break;
                }
                cut = { cursor, firstAvailable: '999999' };
                throw new HistoryTrimmedError(rootId, cut.cursor, cut.firstAvailable);
              },
            };
          };
        }
        const value: unknown = Reflect.get(target, property, target);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    }) as unknown as Host;
    const app = await buildApp({ host, config: { stream: { keepAliveMs: 60_000 } } });
    await app.listen({ port: 0, host: '127.0.0.1' });
    const base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
    try {
      const response = await fetch(`${base}/v1/processes`, { method: 'POST', headers: json, body: JSON.stringify({ deployment: 'demo.approval', input: { subject: 'behind' } }) });
      const { processId } = (await response.json()) as { processId: string };
      const session = await readSse(`${base}${streamPath(processId)}`);
      assert.equal(session.status, 200);
      const last = session.events.at(-1) as SseEvent;
      const delivered = session.events.filter((event) => event.id !== undefined);
      assert.ok(delivered.length > 0, 'the history was written first');
      assert.equal(last.event, 'scope.stream.error');
      assert.equal(last.id, undefined);
      assert.deepEqual(cut, { cursor: delivered.at(-1)?.id, firstAvailable: '999999' }, 'the tail resumed after the last id written');
      assert.equal(last.data.reason, 'history_trimmed');
      assert.equal(last.data.code, 'history_trimmed');
      assert.equal(last.data.firstAvailable, '999999');
      assert.equal(last.data.lastEventId, delivered.at(-1)?.id);
      assert.ok(!session.events.some((event) => event.event === 'scope.stream.end'));
      await fetch(`${base}/v1/processes/${encodeURIComponent(processId)}/cancel`, { method: 'POST', headers: json, body: '{}' });
    } finally {
      await app.close();
    }
  });
});

describe('openapi', () => {
  test('the events page and the stream document 410 history_trimmed; Problem carries firstAvailable', { timeout: 30_000 }, async () => {
    const server = await startTestServer();
    try {
      const { body: document } = await server.json('/openapi.json');
      for (const path of ['/v1/processes/{id}/events', '/v1/trees/{rootId}/stream']) {
        const response = document.paths[path].get.responses['410'];
        assert.ok(response, `${path} documents 410`);
        assert.deepEqual(Object.keys(response.content['application/problem+json'].examples), ['history_trimmed']);
        assert.match(document.paths[path].get.description, /history_trimmed/);
      }
      assert.ok(document.components.schemas.Problem.properties.firstAvailable);
      assert.ok(document.components.schemas.Problem.properties.code.enum.includes('history_trimmed'));
    } finally {
      await server.close();
    }
  });
});
