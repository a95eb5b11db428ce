import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { EventSource } from 'eventsource';
import { streamTypeNames } from '../../plugins/stream/index.js';
import { requireRedisServer, startRedisServer, type RedisServer } from '../helpers/redis-server.js';
import {
  comparePositions,
  eventually,
  floodDeployment,
  floodName,
  gate,
  metricValue,
  openSse,
  parseSse,
  rawGet,
  readSse,
  splitResponse,
  startProxy,
  startTestServer,
  streamPath,
  type SseEvent,
  type SseSession,
  type TestServer,
} from './sse-harness.js';

/** Every entry id of a finished tree, in log order, as a complete stream shows them. */
function ids(events: readonly SseEvent[]): string[] {
  return events.filter((event) => event.id !== undefined).map((event) => event.id as string);
}

function assertAscending(positions: readonly string[]): void {
  for (let index = 1; index < positions.length; index += 1) {
    assert.ok(comparePositions(positions[index - 1] as string, positions[index] as string) < 0, `positions ascend: ${positions.join(' ')}`);
  }
}

/** Reads the answer's wait id once demo.approval waits. */
async function waitIdOf(server: TestServer, processId: string): Promise<string> {
  const { body } = await server.json(`/v1/processes/${encodeURIComponent(processId)}`);
  assert.equal(typeof body.waitId, 'string', `process waits: ${JSON.stringify(body)}`);
  return body.waitId as string;
}

async function answer(server: TestServer, processId: string, waitId: string): Promise<void> {
  const { status, body } = await server.json(`/v1/processes/${encodeURIComponent(processId)}/signals`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ signals: [{ id: `answer-${waitId}`, waitId, payload: { approved: true, comment: 'ok' } }] }),
  });
  assert.equal(status, 200, JSON.stringify(body));
}

const isWaiting = (event: SseEvent): boolean => event.event === 'agent.step.committed' && event.data?.payload?.status === 'waiting';

describe('GET /v1/trees/{rootId}/stream (embedded mode)', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer({ stream: { keepAliveMs: 50, retryMs: 50 } });
  });
  after(async () => {
    await server.close();
  });

  test('demo.echo: started → deltas → finished, then scope.stream.end without an id', async () => {
    const rootId = await server.start('demo.echo', { value: 'héllo' });
    const session = await readSse(`${server.base}${streamPath(rootId)}`);
    assert.equal(session.status, 200);
    assert.match(session.headers.get('content-type') ?? '', /^text\/event-stream/);
    assert.equal(session.headers.get('cache-control'), 'no-cache, no-transform');
    assert.ok(session.headers.get('x-request-id'), 'the request id header survives the hijack');
    assert.deepEqual(session.retries, [50]);

    const names = session.events.map((event) => event.event);
    assert.equal(names[0], 'agent.process.started');
    const finished = names.indexOf('agent.process.finished');
    assert.ok(finished > 0, names.join(' '));
    assert.equal(names.at(-1), 'scope.stream.end');
    assert.equal(names.filter((name) => name === 'scope.stream.end').length, 1);
    const deltas = session.events.filter((event) => event.event === 'agent.delta');
    assert.deepEqual(
      deltas.map((event) => event.data.payload.char),
      ['h', 'é', 'l', 'l', 'o'],
    );
    assert.ok(deltas.every((event) => event.data.process_id === rootId));

    const end = session.events.at(-1) as SseEvent;
    assert.equal(end.id, undefined, 'scope.stream.end carries no id');
    const entryIds = ids(session.events);
    assert.equal(entryIds.length, session.events.length - 1, 'every other message has an id');
    assertAscending(entryIds);
    assert.deepEqual(end.data, { rootId, reason: 'completed', lastEventId: entryIds.at(-1) });
    assert.equal(session.events[finished]?.data.payload.status, 'completed');
  });

  test('Last-Event-ID from the middle replays every later entry exactly once and nothing earlier', async () => {
    const rootId = await server.start('demo.echo', { value: 'resume' });
    const full = await readSse(`${server.base}${streamPath(rootId)}`);
    const all = ids(full.events);
    const middle = all[Math.floor(all.length / 2)] as string;
    const expected = all.slice(all.indexOf(middle) + 1);

    const resumed = await readSse(`${server.base}${streamPath(rootId)}`, { 'last-event-id': middle });
    assert.deepEqual(ids(resumed.events), expected);
    assert.deepEqual(
      resumed.events.slice(0, -1).map((event) => event.event),
      full.events.slice(all.indexOf(middle) + 1, -1).map((event) => event.event),
    );
    assert.equal(resumed.events.at(-1)?.event, 'scope.stream.end');

    const viaQuery = await readSse(`${server.base}${streamPath(rootId, `?after=${middle}`)}`);
    assert.deepEqual(ids(viaQuery.events), expected);

    // EventSource reconnects with its original URL plus the header: the header is the newer cursor.
    const both = await readSse(`${server.base}${streamPath(rootId, '?after=0')}`, { 'last-event-id': middle });
    assert.deepEqual(ids(both.events), expected);

    const atEnd = await readSse(`${server.base}${streamPath(rootId)}`, { 'last-event-id': all.at(-1) as string });
    assert.deepEqual(
      atEnd.events.map((event) => event.event),
      ['scope.stream.end'],
    );
  });

  test('a reconnect while the process runs misses nothing and repeats nothing', async () => {
    const rootId = await server.start('demo.approval', { subject: 'reconnect' });
    const first = await openSse(`${server.base}${streamPath(rootId)}`);
    await first.waitFor(isWaiting, 'the wait');
    first.close();
    await first.done;
    const seen = ids(first.events);

    await answer(server, rootId, await waitIdOf(server, rootId));
    const second = await readSse(`${server.base}${streamPath(rootId)}`, { 'last-event-id': seen.at(-1) as string });
    const later = ids(second.events);
    assert.equal(second.events.at(-1)?.event, 'scope.stream.end');
    assert.ok(later.includes(second.events.find((event) => event.event === 'agent.process.finished')?.id as string));

    const full = await readSse(`${server.base}${streamPath(rootId)}`);
    assert.deepEqual([...seen, ...later], ids(full.events));
  });

  test('EventSource reconnects on its own with Last-Event-ID and sees every entry once', async () => {
    const rootId = await server.start('demo.approval', { subject: 'eventsource' });
    const proxy = await startProxy(server.port);
    const received: { type: string; id: string }[] = [];
    const source = new EventSource(`http://127.0.0.1:${proxy.port}${streamPath(rootId)}`);
    let opens = 0;
    let reopened!: () => void;
    const secondOpen = new Promise<void>((resolve) => {
      reopened = resolve;
    });
    let waiting!: () => void;
    const waitSeen = new Promise<void>((resolve) => {
      waiting = resolve;
    });
    const ended = new Promise<void>((resolve, reject) => {
      for (const type of streamTypeNames) {
        source.addEventListener(type, (message) => {
          received.push({ type, id: message.lastEventId });
          if (type === 'agent.step.committed' && JSON.parse(message.data).payload?.status === 'waiting') waiting();
        });
      }
      source.addEventListener('scope.stream.end', () => {
        source.close();
        resolve();
      });
      source.addEventListener('scope.stream.error', (message) => reject(new Error(`stream error ${message.data}`)));
    });
    source.addEventListener('open', () => {
      opens += 1;
      if (opens === 2) reopened();
    });
    try {
      await waitSeen;
      const lastBeforeCut = received.at(-1)?.id as string;
      proxy.cut();
      // Answer while the client is away: what commits meanwhile must arrive through the replay.
      await answer(server, rootId, await waitIdOf(server, rootId));
      await secondOpen;
      await ended;
      assert.ok(proxy.requests.length >= 2, 'EventSource reconnected');
      assert.match(proxy.requests[1] as string, new RegExp(`\\r\\nlast-event-id: ${lastBeforeCut}(\\r\\n|$)`, 'i'));

      const full = await readSse(`${server.base}${streamPath(rootId)}`);
      assert.deepEqual(
        received.map((entry) => entry.id),
        ids(full.events),
      );
      assert.ok(received.some((entry) => entry.type === 'agent.process.finished'));
    } finally {
      source.close();
      await proxy.close();
    }
  });

  test('?types= keeps only the named events; agent.delta selects deltas', async () => {
    const rootId = await server.start('demo.echo', { value: 'abc' });
    const lifecycle = await readSse(`${server.base}${streamPath(rootId, '?types=agent.process.started,agent.process.finished')}`);
    assert.deepEqual(
      lifecycle.events.map((event) => event.event),
      ['agent.process.started', 'agent.process.finished', 'scope.stream.end'],
    );
    const deltas = await readSse(`${server.base}${streamPath(rootId, '?types=agent.delta')}`);
    assert.deepEqual(
      deltas.events.map((event) => event.event),
      ['agent.delta', 'agent.delta', 'agent.delta', 'scope.stream.end'],
    );
    // A filtered stream resumes by position like any other.
    const full = await readSse(`${server.base}${streamPath(rootId)}`);
    const firstDelta = deltas.events[0]?.id as string;
    const resumed = await readSse(`${server.base}${streamPath(rootId, `?types=agent.delta&after=${firstDelta}`)}`);
    assert.deepEqual(ids(resumed.events), ids(deltas.events).slice(1));
    assert.ok(ids(full.events).includes(firstDelta));
  });

  test('?processId= keeps the entries of one process', async () => {
    const rootId = await server.start('demo.echo', { value: 'p' });
    const own = await readSse(`${server.base}${streamPath(rootId, `?processId=${encodeURIComponent(rootId)}`)}`);
    const full = await readSse(`${server.base}${streamPath(rootId)}`);
    assert.deepEqual(ids(own.events), ids(full.events));
    assert.ok(own.events.slice(0, -1).every((event) => event.data.process_id === rootId));

    const other = await readSse(`${server.base}${streamPath(rootId, '?processId=process:someone-else')}`);
    assert.deepEqual(
      other.events.map((event) => event.event),
      ['scope.stream.end'],
    );
  });

  test('keep-alive comments arrive at the configured interval', async () => {
    const rootId = await server.start('demo.approval', { subject: 'keep-alive' });
    const session = await openSse(`${server.base}${streamPath(rootId)}`);
    try {
      await session.waitForComments(3);
      assert.ok(session.comments.slice(0, 3).every((comment) => comment.trim() === 'keep-alive'), JSON.stringify(session.comments));
    } finally {
      session.close();
      await server.json(`/v1/processes/${encodeURIComponent(rootId)}/cancel`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    }
  });

  test('header and query injection attempts are 400 invalid_request, never 500', async () => {
    const rootId = await server.start('demo.echo', { value: 'x' });
    await server.result(rootId);
    const path = streamPath(rootId);

    // Header values with CR/LF cannot cross Node's HTTP client; inject them below the parser.
    for (const value of ['1\r\nevent: x', '1\nevent: x', '1\revent: x', 'abc', '01', '-1', '1-2-3', '']) {
      const response = await server.app.inject({ method: 'GET', url: path, headers: { 'last-event-id': value } });
      assert.equal(response.statusCode, 400, `Last-Event-ID ${JSON.stringify(value)}: ${response.body}`);
      assert.match(String(response.headers['content-type']), /^application\/problem\+json/);
      assert.equal(JSON.parse(response.body).code, 'invalid_request');
    }
    const tooBig = await server.json(path, { headers: { 'last-event-id': '99999999999999999999' } });
    assert.equal(tooBig.status, 400, 'a position past uint64');
    assert.equal(tooBig.body.code, 'invalid_request');

    for (const query of [
      '?after=1%0D%0Aevent:%20x',
      '?after=1%0Aevent:x',
      '?types=agent.delta%0D%0Aevent:%20x',
      '?types=agent.delta%0A',
      '?types=agent.delta,,agent.process.started',
      '?types=agent.unknown',
      '?processId=process:a%0D%0Aevent:x',
      '?after=1&extra=1',
    ]) {
      const { status, body } = await server.json(`${path}${query}`);
      assert.equal(status, 400, `${query}: ${JSON.stringify(body)}`);
      assert.equal(body.code, 'invalid_request', query);
    }

    // On the wire, CR LF inside a header ends it: what follows is just another header, never a frame.
    const raw = await rawGet(server.port, path, ['Last-Event-ID: 1', 'event: x', 'data: injected']);
    const { status, body } = splitResponse(await raw.closed);
    assert.equal(status, 200);
    const events = parseSse(body);
    assert.ok(events.every((event) => event.event !== 'x' && event.data?.injected === undefined));
    assert.equal(events[0]?.id, '2', 'resumed after 1');
    assert.equal(events.at(-1)?.event, 'scope.stream.end');

    const bareLf = await rawGet(server.port, path, ['Last-Event-ID: 1\nevent: x']);
    const answered = splitResponse(await bareLf.closed);
    assert.ok(answered.status === 200 || answered.status === 400, `status ${answered.status}`);
    assert.ok(!/^event: x$/m.test(answered.body));
  });

  test('an unknown tree is 404 tree_not_found before any stream starts', async () => {
    const { status, body } = await server.json(streamPath('process:0123456789abcdef0123456789abcdef'));
    assert.equal(status, 404);
    assert.equal(body.code, 'tree_not_found');
    const badId = await server.json(streamPath('not a process id'));
    assert.equal(badId.status, 400);
    assert.equal(badId.body.code, 'invalid_request');
  });

  test('the SSE clients gauge counts open streams, and ended streams by reason', async () => {
    const rootId = await server.start('demo.approval', { subject: 'gauge' });
    const clients = (): Promise<number> => metricValue(server, 'scope_sse_clients');
    const before = await clients();
    const session = await openSse(`${server.base}${streamPath(rootId)}`);
    await session.waitFor(isWaiting);
    assert.equal(await clients(), before + 1);
    session.close();
    await session.done;
    await eventually(async () => (await clients()) === before, 'the gauge to go down');
    assert.ok((await metricValue(server, 'scope_sse_streams_ended_total{reason="client_closed"}')) >= 1);
    assert.ok((await metricValue(server, 'scope_sse_streams_ended_total{reason="completed"}')) >= 1);
    await server.json(`/v1/processes/${encodeURIComponent(rootId)}/cancel`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
  });

  test('the route is documented: text/event-stream, operationId, tag, Last-Event-ID, problems', async () => {
    const { body: document } = await server.json('/openapi.json');
    const operation = document.paths['/v1/trees/{rootId}/stream'].get;
    assert.equal(operation.operationId, 'streamTree');
    assert.deepEqual(operation.tags, ['stream']);
    assert.deepEqual(Object.keys(operation.responses['200'].content), ['text/event-stream']);
    assert.equal(operation.responses['200'].content['text/event-stream'].schema.type, 'string');
    const header = operation.parameters.find((parameter: any) => parameter.in === 'header' && parameter.name === 'last-event-id');
    assert.ok(header, 'the last-event-id header parameter');
    assert.ok(operation.responses['400'] && operation.responses['404']);
    assert.equal(document.paths['/v1/trees/{rootId}/stream'].head, undefined, 'no HEAD twin');
  });
});

describe('a slow client', () => {
  test('is dropped with scope.stream.error while the engine finishes the process normally', async () => {
    const release = gate();
    // The flood waits for the fast client every eighth delta (well inside its 32-message bound), so on a
    // loaded machine only the paused client can fall behind: a fast client dropped too (seen in CI) says
    // nothing about the slow one.
    let fast: SseSession | undefined;
    const deltasRead = (): number => fast?.events.filter((event) => event.event === 'agent.delta').length ?? 0;
    const pace = (emitted: number): Promise<unknown> => (fast as SseSession).waitFor(() => deltasRead() >= emitted, `${emitted} deltas at the fast client`);
    const server = await startTestServer({
      deployments: [floodDeployment(release.opened, pace)],
      stream: { bufferEntries: 32, maxBufferBytes: 1024 * 1024, stallTimeoutMs: 60_000, lingerMs: 60_000, keepAliveMs: 60_000 },
    });
    try {
      // 400 deltas of 64 KiB: far more than the kernel's socket buffers and the client's bound.
      const rootId = await server.start(floodName, { count: 400, size: 64 * 1024 });
      const slow = await rawGet(server.port, streamPath(rootId));
      await slow.until((text) => text.includes('event: agent.effect.started'));
      slow.socket.pause();
      fast = await openSse(`${server.base}${streamPath(rootId)}`);
      await fast.waitFor((event) => event.event === 'agent.effect.started');
      release.open();

      // The engine is not held back: the process completes while the slow client reads nothing.
      const result = await server.result(rootId);
      assert.equal(result.status, 'completed');
      assert.deepEqual(result.output, { emitted: 400 });
      await fast.done;
      assert.equal(fast.events.at(-1)?.event, 'scope.stream.end');
      assert.equal(fast.events.filter((event) => event.event === 'agent.delta').length, 400);
      // Still reading nothing, the slow client falls past its bound and is dropped.
      await eventually(async () => (await metricValue(server, 'scope_sse_streams_ended_total{reason="dropped"}')) === 1, 'the drop');

      slow.socket.resume();
      const { status, body } = splitResponse(await slow.closed);
      assert.equal(status, 200);
      const events = parseSse(body);
      const last = events.at(-1) as SseEvent;
      assert.equal(last.event, 'scope.stream.error');
      assert.equal(last.id, undefined);
      assert.equal(last.data.reason, 'slow_client');
      assert.match(last.data.detail, /fell more than/);
      assert.ok(events.filter((event) => event.event === 'agent.delta').length < 400, 'dropped before the end');
      assert.ok(!events.some((event) => event.event === 'scope.stream.end'));

      // Reconnecting with the last id received resumes losslessly.
      const lastId = ids(events).at(-1) as string;
      const rest = await readSse(`${server.base}${streamPath(rootId)}`, { 'last-event-id': lastId });
      assert.deepEqual([...ids(events), ...ids(rest.events)], ids(fast.events));
    } finally {
      release.open();
      await server.close();
    }
  });

  test('that stalls while history is replayed is dropped after the stall timeout', async () => {
    const release = gate();
    release.open();
    const server = await startTestServer({
      deployments: [floodDeployment(release.opened)],
      stream: { bufferEntries: 8, stallTimeoutMs: 200, lingerMs: 60_000, pageSize: 50 },
    });
    try {
      const rootId = await server.start(floodName, { count: 300, size: 64 * 1024 });
      await server.result(rootId);
      const slow = await rawGet(server.port, streamPath(rootId));
      slow.socket.pause();
      await eventually(async () => (await metricValue(server, 'scope_sse_streams_ended_total{reason="dropped"}')) === 1, 'the drop');
      slow.socket.resume();
      const events = parseSse(splitResponse(await slow.closed).body);
      assert.equal(events.at(-1)?.event, 'scope.stream.error');
      assert.equal(events.at(-1)?.data.reason, 'slow_client');
      assert.match(events.at(-1)?.data.detail, /took no data for 200 ms/);
    } finally {
      await server.close();
    }
  });
});

describe('server shutdown', () => {
  // The structure issue's defect 9: shutdown ended streams with `scope.stream.end`, the event that means
  // "the tree is done", so a client could not tell it should reconnect elsewhere.
  test('ends open streams with scope.stream.error (reason shutdown, a retry hint, the last id), never scope.stream.end', async () => {
    const server = await startTestServer();
    const rootId = await server.start('demo.approval', { subject: 'shutdown' });
    const session = await openSse(`${server.base}${streamPath(rootId)}`);
    await session.waitFor(isWaiting);
    await server.close();
    await session.done;
    const end = session.events.at(-1) as SseEvent;
    assert.equal(end.event, 'scope.stream.error');
    assert.equal(end.id, undefined);
    assert.equal(end.data.reason, 'shutdown');
    assert.equal(end.data.code, 'shutting_down');
    assert.equal(typeof end.data.retryMs, 'number');
    assert.equal(end.data.lastEventId, ids(session.events).at(-1));
    assert.equal(session.retries.length, 2, 'the opening retry and the final one');
    assert.ok(!session.events.some((event) => event.event === 'scope.stream.end'));
  });

  test('a stream of a tree that is done ends with scope.stream.end {reason: completed}', async () => {
    const server = await startTestServer();
    try {
      const rootId = await server.start('demo.echo', { value: 'end' });
      const session = await readSse(`${server.base}${streamPath(rootId)}`);
      const end = session.events.at(-1) as SseEvent;
      assert.equal(end.event, 'scope.stream.end');
      assert.equal(end.data.reason, 'completed');
      assert.equal(end.data.lastEventId, ids(session.events).at(-1));
    } finally {
      await server.close();
    }
  });
});

describe('GET /v1/trees/{rootId}/stream (Redis mode)', () => {
  let redis: RedisServer;
  let server: TestServer;
  before(async () => {
    requireRedisServer();
    redis = await startRedisServer();
    server = await startTestServer({ env: { SCOPE_REDIS_URL: redis.url, SCOPE_KEY_PREFIX: `stream-test-${process.pid}` } });
  });
  after(async () => {
    await server?.close();
    await redis?.stop();
  });

  test('demo.echo streams from the Redis log and resumes by stream id', async () => {
    const rootId = await server.start('demo.echo', { value: 'redis' });
    const full = await readSse(`${server.base}${streamPath(rootId)}`);
    const all = ids(full.events);
    assert.ok(all.every((id) => /^\d+-\d+$/.test(id)), all.join(' '));
    assertAscending(all);
    assert.equal(full.events[0]?.event, 'agent.process.started');
    assert.ok(full.events.some((event) => event.event === 'agent.process.finished'));
    assert.equal(full.events.filter((event) => event.event === 'agent.delta').length, 5);
    assert.equal(full.events.at(-1)?.event, 'scope.stream.end');

    const middle = all[Math.floor(all.length / 2)] as string;
    const resumed = await readSse(`${server.base}${streamPath(rootId)}`, { 'last-event-id': middle });
    assert.deepEqual(ids(resumed.events), all.slice(all.indexOf(middle) + 1));
  });

  test('a live reconnect in Redis mode misses nothing and repeats nothing', async () => {
    const rootId = await server.start('demo.approval', { subject: 'redis reconnect' });
    const first = await openSse(`${server.base}${streamPath(rootId)}`);
    await first.waitFor(isWaiting);
    first.close();
    await first.done;
    await answer(server, rootId, await waitIdOf(server, rootId));
    const second = await readSse(`${server.base}${streamPath(rootId)}`, { 'last-event-id': ids(first.events).at(-1) as string });
    const full = await readSse(`${server.base}${streamPath(rootId)}`);
    assert.deepEqual([...ids(first.events), ...ids(second.events)], ids(full.events));
  });
});

describe('stream capacity', () => {
  test('past SCOPE_SSE_MAX_STREAMS a stream is 503 stream_capacity with Retry-After; a closed one frees its place', async () => {
    const server = await startTestServer({ stream: { maxStreams: 2 } });
    try {
      const rootId = await server.start('demo.approval', { subject: 'capacity' });
      const first = await openSse(`${server.base}${streamPath(rootId)}`);
      const second = await openSse(`${server.base}${streamPath(rootId)}`);
      await Promise.all([first.waitFor(isWaiting), second.waitFor(isWaiting)]);
      const refused = await fetch(`${server.base}${streamPath(rootId)}`);
      assert.equal(refused.status, 503);
      assert.match(refused.headers.get('content-type') ?? '', /^application\/problem\+json/);
      assert.equal(((await refused.json()) as { code: string }).code, 'stream_capacity');
      assert.match(refused.headers.get('retry-after') ?? '', /^\d+$/);
      first.close();
      await eventually(async () => {
        const again = await fetch(`${server.base}${streamPath(rootId)}`, { signal: AbortSignal.timeout(2_000) }).catch(() => undefined);
        const ok = again?.status === 200;
        await again?.body?.cancel().catch(() => undefined);
        return ok;
      }, 'a place freed by the closed stream');
      second.close();
    } finally {
      await server.close();
    }
  });
});
