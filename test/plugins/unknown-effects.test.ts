import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { expectProblem, resultOf, start, startServer, until, type TestServer } from './server.js';

let server: TestServer;
before(async () => {
  server = await startServer();
});
after(async () => {
  await server.close();
});

const unknownPage = (query: { cursor?: string; limit?: number } = {}) =>
  server.client.GET('/v1/effects', { params: { query: { status: 'unknown', ...query } } });

async function unknownProcess(): Promise<string> {
  const { processId } = await start(server, 'demo.unreliable', { mode: 'unknown', replayable: false });
  await until(
    () => server.client.GET('/v1/processes/{id}', { params: { path: { id: processId } } }),
    (r) => (r.data?.unknownEffectIds.length ?? 0) === 1,
  );
  return processId;
}

test('GET /v1/effects?status=unknown lists every Unknown effect across trees, with its evidence, in pages', async () => {
  const first = await unknownProcess();
  const second = await unknownProcess();
  const settled = await start(server, 'demo.echo', { value: 'x' });
  await resultOf(server, settled.processId);

  const { data, response } = await unknownPage();
  assert.equal(response.status, 200);
  const listed = data!.items.map((item) => item.processId);
  assert.deepEqual([...listed].sort(), [first, second].sort());
  for (const item of data!.items) {
    assert.equal(item.deployment, 'demo.unreliable');
    assert.equal(item.rootId, item.processId);
    assert.equal(item.effect.status, 'unknown');
    assert.equal(item.effect.attempts, 1);
    assert.match(item.effect.effectId, /^effect:/);
  }

  // Pages of one: the cursor continues exactly after the previous entry.
  const one = await unknownPage({ limit: 1 });
  assert.equal(one.data!.items.length, 1);
  assert.ok(one.data!.nextCursor !== null);
  const two = await unknownPage({ limit: 1, cursor: one.data!.nextCursor! });
  assert.equal(two.data!.items.length, 1);
  assert.equal(two.data!.nextCursor, null);
  assert.deepEqual([one.data!.items[0]!.processId, two.data!.items[0]!.processId], listed);

  // Resolved: no longer listed.
  const effectId = data!.items.find((item) => item.processId === first)!.effect.effectId;
  const resolved = await server.client.POST('/v1/processes/{id}/effects/{effectId}/resolution', {
    params: { path: { id: first, effectId } },
    body: { status: 'succeeded', payload: { mode: 'unknown', attempts: 1 } },
  });
  assert.equal(resolved.response.status, 200);
  const after = await unknownPage();
  assert.deepEqual(
    after.data!.items.map((item) => item.processId),
    [second],
  );
  await server.client.POST('/v1/processes/{id}/kill', { params: { path: { id: second } } });
});

test('GET /v1/effects needs status=unknown, and refuses a cursor it did not make', async () => {
  expectProblem(await server.client.GET('/v1/effects', { params: { query: {} as never } }), 400, 'invalid_request');
  expectProblem(await server.client.GET('/v1/effects', { params: { query: { status: 'settled' as never } } }), 400, 'invalid_request');
  expectProblem(await unknownPage({ cursor: 'bm90IGEgY3Vyc29y' }), 400, 'invalid_request');
});

test('GET /v1/processes filters by start time (startedAfter, startedBefore)', async () => {
  const early = await start(server, 'demo.echo', { value: 'early' });
  const earlyView = await server.client.GET('/v1/processes/{id}', { params: { path: { id: early.processId } } });
  const boundary = earlyView.data!.startedAt;
  // A later start (a clock tick later than the first: starts within one millisecond share a time).
  const { late, lateView } = await until(
    async () => {
      const process = await start(server, 'demo.echo', { value: 'late' });
      return { late: process, lateView: await server.client.GET('/v1/processes/{id}', { params: { path: { id: process.processId } } }) };
    },
    ({ lateView: view }) => view.data!.startedAt > boundary,
  );
  const since = await server.client.GET('/v1/processes', { params: { query: { startedAfter: lateView.data!.startedAt, limit: 100 } } });
  assert.deepEqual(
    since.data!.items.map((item) => item.processId),
    [late.processId],
  );
  const before = await server.client.GET('/v1/processes', { params: { query: { startedBefore: lateView.data!.startedAt, limit: 100 } } });
  const ids = before.data!.items.map((item) => item.processId);
  assert.ok(ids.includes(early.processId));
  assert.ok(!ids.includes(late.processId));
  expectProblem(await server.client.GET('/v1/processes', { params: { query: { startedAfter: 'yesterday' } } }), 400, 'invalid_request');
});

test('GET /v1/processes?hasUnknown=&hasOpenGate= filter by the marks every summary carries; the effect view names each attempt\'s worker', async () => {
  const unknown = await unknownProcess();
  const gate = await start(server, 'demo.approval', { subject: 'marks over HTTP' });
  await until(
    () => server.client.GET('/v1/processes/{id}', { params: { path: { id: gate.processId } } }),
    (r) => r.data?.waitKind === 'external',
  );
  // (Earlier tests of this server left Unknowns too: a killed process keeps its Unknown outcome.)
  const withUnknown = await server.client.GET('/v1/processes', { params: { query: { hasUnknown: 'true', limit: 100 } } });
  assert.ok(withUnknown.data!.items.every((item) => item.hasUnknown && !item.hasOpenGate));
  assert.ok(withUnknown.data!.items.some((item) => item.processId === unknown));
  const withGate = await server.client.GET('/v1/processes', { params: { query: { hasOpenGate: 'true', limit: 100 } } });
  assert.deepEqual(
    withGate.data!.items.map((item) => [item.processId, item.hasUnknown, item.hasOpenGate]),
    [[gate.processId, false, true]],
  );
  const neither = await server.client.GET('/v1/processes', { params: { query: { hasOpenGate: 'false', hasUnknown: 'false', limit: 100 } } });
  assert.ok(neither.data!.items.every((item) => item.processId !== unknown && item.processId !== gate.processId));
  expectProblem(await server.client.GET('/v1/processes', { params: { query: { hasUnknown: 'yes' as never } } }), 400, 'invalid_request');

  const dry = await server.client.POST('/v1/processes:bulk', { body: { filter: { hasOpenGate: true }, action: 'cancel', dryRun: true } });
  assert.equal(dry.data!.matched, 1);

  // Embedded: every attempt ran in this node.
  const listed = await server.client.GET('/v1/effects', { params: { query: { status: 'unknown' } } });
  const item = listed.data!.items.find((entry) => entry.processId === unknown)!;
  assert.equal(item.effect.attemptList.length, 1);
  assert.equal(item.effect.attemptList[0]!.worker, 'embedded');
  assert.match(item.effect.attemptList[0]!.attemptId, /^attempt:/);
  await server.client.POST('/v1/processes/{id}/kill', { params: { path: { id: unknown } } });
  await server.client.POST('/v1/processes/{id}/kill', { params: { path: { id: gate.processId } } });
});
