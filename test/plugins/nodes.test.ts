import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { expectProblem, start, startServer, type TestServer } from './server.js';

/** Embedded mode is one implicit node: `GET /v1/nodes` lists it alone, and there is nobody to evict. */

let server: TestServer;
before(async () => {
  server = await startServer();
});
after(async () => {
  await server.close();
});

test('GET /v1/nodes in embedded mode: this server alone', async () => {
  await start(server, 'demo.approval', { subject: 'nodes' });
  const { data, response } = await server.client.GET('/v1/nodes');
  assert.equal(response.status, 200);
  assert.deepEqual(data?.items, [{ nodeId: 'embedded', url: null, epoch: null, lease: 'live', leaseTtlMs: null, trees: 1, self: true }]);
});

test('POST /v1/nodes/{nodeId}/evict in embedded mode: 404 node_not_found; a malformed id is 400', async () => {
  expectProblem(await server.client.POST('/v1/nodes/{nodeId}/evict', { params: { path: { nodeId: 'other' } } }), 404, 'node_not_found');
  expectProblem(await server.client.POST('/v1/nodes/{nodeId}/evict', { params: { path: { nodeId: 'no spaces' } } }), 400, 'invalid_request');
});
