import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, test } from 'node:test';
import { expectProblem, raw, resultOf, start, startServer, until, type TestServer } from './server.js';

let server: TestServer;
before(async () => {
  server = await startServer();
});
after(async () => {
  await server.close();
});

const missing = 'process:00000000000000000000000000000000';

test('GET /v1/trees/{rootId}: incarnation, head digest, one entry per process', async () => {
  const { processId } = await start(server, 'demo.approval', { subject: 'tree' });
  const { data } = await until(
    () => server.client.GET('/v1/trees/{rootId}', { params: { path: { rootId: processId } } }),
    (r) => r.data?.processes[0]?.status === 'waiting',
  );
  const tree = data!;
  assert.equal(tree.rootId, processId);
  assert.match(tree.incarnationId, /^incarnation:[0-9a-f]{32}$/);
  assert.match(tree.headDigest, /^sha256:[0-9a-f]{64}$/);
  assert.equal(tree.active, true);
  assert.equal(tree.stopped, false);
  assert.equal(tree.freeze, 'none');
  assert.deepEqual(tree.processes.map((process) => process.processId), [processId]);
});

test('GET snapshot: the stored head, ETag = its digest, 304 on If-None-Match', async () => {
  const { processId } = await start(server, 'demo.echo', { value: 'snap' });
  await resultOf(server, processId);
  const path = `/v1/trees/${encodeURIComponent(processId)}/snapshot`;
  const first = await raw(server, 'GET', path);
  assert.equal(first.status, 200);
  const etag = first.headers.get('etag')!;
  assert.match(etag, /^"sha256:[0-9a-f]{64}"$/);
  // The body is the canonical TreeSnapshot text, byte for byte: its SHA-256 is the digest.
  assert.equal(`"sha256:${createHash('sha256').update(first.text).digest('hex')}"`, etag);
  assert.equal(typeof first.body, 'object');
  const tree = await server.client.GET('/v1/trees/{rootId}', { params: { path: { rootId: processId } } });
  assert.equal(etag, `"${tree.data!.headDigest}"`);

  const again = await raw(server, 'GET', path, { headers: { 'if-none-match': etag } });
  assert.equal(again.status, 304);
  assert.equal(again.text, '');
  assert.equal((await raw(server, 'GET', path, { headers: { 'if-none-match': '"sha256:0"' } })).status, 200);
});

test('POST capture: quiesces and returns the committed cut', async () => {
  const { processId } = await start(server, 'demo.approval', { subject: 'capture' });
  await until(() => server.client.GET('/v1/processes/{id}', { params: { path: { id: processId } } }), (r) => r.data?.status === 'waiting');
  const capture = await raw(server, 'POST', `/v1/trees/${encodeURIComponent(processId)}/capture`);
  assert.equal(capture.status, 200);
  assert.match(capture.headers.get('etag') ?? '', /^"sha256:/);
  const snapshot = await raw(server, 'GET', `/v1/trees/${encodeURIComponent(processId)}/snapshot`);
  assert.equal(snapshot.headers.get('etag'), capture.headers.get('etag'));
  assert.equal(snapshot.text, capture.text);
});

test('POST capture with Effects in flight past waitMs: 409 tree_busy, nothing held, the tree runs on', async () => {
  const { processId } = await start(server, 'demo.sleep', { ms: 600_000 });
  const id = encodeURIComponent(processId);
  await until(() => server.client.GET('/v1/processes/{id}', { params: { path: { id: processId } } }), (r) => r.data?.usage.preparedEffects === 1);
  const busy = await raw(server, 'POST', `/v1/trees/${id}/capture?waitMs=50`);
  assert.equal(busy.status, 409, busy.text);
  assert.equal(busy.headers.get('content-type'), 'application/problem+json; charset=utf-8');
  assert.equal(busy.body.code, 'tree_busy');
  assert.match(busy.body.detail, /in flight after 50 ms/);
  const tree = await server.client.GET('/v1/trees/{rootId}', { params: { path: { rootId: processId } } });
  assert.equal(tree.data!.freeze, 'none', 'the hold was lifted');
  // The tree still takes commands: the cancel reaches the sleeping Effect and the process ends.
  assert.equal((await raw(server, 'POST', `/v1/processes/${id}/cancel`)).status, 202);
  assert.equal((await resultOf(server, processId)).status, 'canceled');
  assert.equal((await raw(server, 'POST', `/v1/trees/${id}/capture?waitMs=5000`)).status, 200, 'once settled, the capture succeeds');
  for (const bad of ['0', '60001', 'soon']) {
    const refused = await raw(server, 'POST', `/v1/trees/${id}/capture?waitMs=${bad}`);
    assert.equal(refused.status, 400, `waitMs=${bad}`);
    assert.equal(refused.body.code, 'invalid_request');
  }
});

test('DELETE releases a finished tree (reads then come from the store); restore takes it back', async () => {
  const { processId } = await start(server, 'demo.echo', { value: 'release' });
  const before = await resultOf(server, processId);
  const release = await server.client.DELETE('/v1/trees/{rootId}', { params: { path: { rootId: processId } } });
  assert.equal(release.response.status, 204);

  const stored = await server.client.GET('/v1/trees/{rootId}', { params: { path: { rootId: processId } } });
  assert.equal(stored.data!.active, false);
  assert.deepEqual(await resultOf(server, processId), before);

  const restore = await server.client.POST('/v1/trees/{rootId}/restore', { params: { path: { rootId: processId } } });
  assert.equal(restore.response.status, 200);
  assert.equal(restore.data!.active, true);
  assert.equal(restore.data!.rootId, processId);
  assert.notEqual(restore.data!.incarnationId, stored.data!.incarnationId);
});

test('DELETE ?purge=true on a finished tree deletes it; on a live tree it is 409 tree_live', async () => {
  const live = await start(server, 'demo.approval', { subject: 'live' });
  await until(() => server.client.GET('/v1/processes/{id}', { params: { path: { id: live.processId } } }), (r) => r.data?.status === 'waiting');
  expectProblem(
    await server.client.DELETE('/v1/trees/{rootId}', { params: { path: { rootId: live.processId }, query: { purge: true } } }),
    409,
    'tree_live',
  );

  const { processId } = await start(server, 'demo.echo', { value: 'purge' });
  await resultOf(server, processId);
  const purge = await server.client.DELETE('/v1/trees/{rootId}', { params: { path: { rootId: processId }, query: { purge: true } } });
  assert.equal(purge.response.status, 204);
  expectProblem(await server.client.GET('/v1/trees/{rootId}', { params: { path: { rootId: processId } } }), 404, 'tree_not_found');
  expectProblem(await server.client.GET('/v1/processes/{id}', { params: { path: { id: processId } } }), 404, 'process_not_found');
});

test('capture of a tree no runtime here owns is 409 tree_not_active', async () => {
  const { processId } = await start(server, 'demo.echo', { value: 'inactive' });
  await resultOf(server, processId);
  await server.client.DELETE('/v1/trees/{rootId}', { params: { path: { rootId: processId } } });
  expectProblem(await server.client.POST('/v1/trees/{rootId}/capture', { params: { path: { rootId: processId } } }), 409, 'tree_not_active');
});

test('unknown trees are 404 tree_not_found on every tree route', async () => {
  const path = { rootId: missing };
  expectProblem(await server.client.GET('/v1/trees/{rootId}', { params: { path } }), 404, 'tree_not_found');
  expectProblem(await server.client.GET('/v1/trees/{rootId}/snapshot', { params: { path } }), 404, 'tree_not_found');
  expectProblem(await server.client.POST('/v1/trees/{rootId}/capture', { params: { path } }), 404, 'tree_not_found');
  expectProblem(await server.client.POST('/v1/trees/{rootId}/restore', { params: { path } }), 404, 'tree_not_found');
  expectProblem(await server.client.DELETE('/v1/trees/{rootId}', { params: { path } }), 404, 'tree_not_found');
});

test('?purge must be a boolean', async () => {
  const result = await server.client.DELETE('/v1/trees/{rootId}', { params: { path: { rootId: missing }, query: { purge: 'yes' as never } } });
  assert.deepEqual(expectProblem(result, 400, 'invalid_request').errors?.map((error) => error.pointer), ['/query/purge']);
});
