import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startRedisServer, type RedisServer } from '../helpers/redis-server.js';
import { eventually, readSse, startTestServer, streamPath, type TestServer } from './sse-harness.js';

/**
 * Defect 2 of the structure issue: a cursor beyond the newest position of a tree's log was never
 * issued, so reading after it would silently skip whatever the log appends up to it. It is 409
 * `cursor_ahead` (with `lastPosition`), before any stream header, on the stream and on `/events`
 * alike (before the fix: `Last-Event-ID: 11` with the head at 8 was accepted and positions 9 and 10
 * were never delivered; on a finished tree `Last-Event-ID: 1000` got `scope.stream.end`).
 */

async function lastPosition(server: TestServer, processId: string): Promise<string> {
  const page = await server.json(`/v1/processes/${encodeURIComponent(processId)}/events?limit=1000`);
  assert.equal(page.status, 200);
  return page.body.items.at(-1).position as string;
}

/** A cursor `steps` positions beyond `position` (embedded: integers; Redis: `<ms>-<seq>`). */
function beyond(position: string, steps: number): string {
  const [major, minor] = position.split('-');
  return minor === undefined ? String(Number(major) + steps) : `${major}-${Number(minor) + steps}`;
}

function suite(mode: string, env: () => Record<string, string>): void {
  describe(`a cursor ahead of the log (${mode})`, () => {
    let server: TestServer;
    before(async () => {
      server = await startTestServer({ env: env() });
    });
    after(async () => {
      await server.close();
    });

    test('is 409 cursor_ahead on the stream (header or query) and /events; the head itself streams on', async () => {
      const processId = await server.start('demo.approval', { subject: 'ahead' });
      // Waiting for its answer, the tree appends nothing: the head position is stable while we probe.
      await eventually(async () => (await server.json(`/v1/processes/${encodeURIComponent(processId)}`)).body.status === 'waiting', 'the process waits');
      const head = await lastPosition(server, processId);
      const ahead = beyond(head, 3);

      for (const url of [`${server.base}${streamPath(processId)}`, `${server.base}${streamPath(processId, `?after=${ahead}`)}`]) {
        const response = await fetch(url, { headers: url.includes('after=') ? {} : { 'last-event-id': ahead } });
        assert.equal(response.status, 409, url);
        assert.match(response.headers.get('content-type') ?? '', /^application\/problem\+json/);
        const problem = (await response.json()) as { code: string; lastPosition: string };
        assert.equal(problem.code, 'cursor_ahead');
        assert.equal(problem.lastPosition, head);
      }
      const page = await server.json(`/v1/processes/${encodeURIComponent(processId)}/events?after=${ahead}`);
      assert.equal(page.status, 409);
      assert.equal(page.body.code, 'cursor_ahead');

      // A cursor at the head is fine: the stream stays open and delivers what follows, skipping nothing.
      const controller = new AbortController();
      const live = await fetch(`${server.base}${streamPath(processId)}`, { headers: { 'last-event-id': head }, signal: controller.signal });
      assert.equal(live.status, 200);
      controller.abort();
      await live.body?.cancel().catch(() => undefined);
    });

    test('a finished tree: a cursor past its end is refused, its last position ends the stream normally', async () => {
      const processId = await server.start('demo.echo', { value: 'done' });
      const result = await server.json(`/v1/processes/${encodeURIComponent(processId)}/result?waitMs=10000`);
      assert.equal(result.status, 200);
      // The stream's own end says the tree is drained; its last id is the log's last position.
      const whole = await readSse(`${server.base}${streamPath(processId)}`);
      assert.equal(whole.events.at(-1)?.event, 'scope.stream.end');
      const last = whole.events.filter((event) => event.id !== undefined).at(-1)?.id as string;
      assert.equal(last, await lastPosition(server, processId));

      const refused = await fetch(`${server.base}${streamPath(processId)}`, { headers: { 'last-event-id': beyond(last, 1000) } });
      assert.equal(refused.status, 409);
      assert.equal(((await refused.json()) as { code: string }).code, 'cursor_ahead');
      const resumed = await readSse(`${server.base}${streamPath(processId)}`, { 'last-event-id': last });
      assert.equal(resumed.status, 200);
      assert.deepEqual(resumed.events.map((event) => event.event), ['scope.stream.end']);
    });
  });
}

suite('embedded', () => ({}));

let redis: RedisServer | undefined;
before(async () => {
  redis = await startRedisServer();
});
after(async () => {
  await redis?.stop();
});
suite('redis', () => ({ SCOPE_REDIS_URL: (redis as RedisServer).url, SCOPE_KEY_PREFIX: `ahead${process.pid}` }));
