import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { expectProblem, startServer, type TestServer } from './server.js';

let server: TestServer;
before(async () => {
  server = await startServer();
});
after(async () => {
  await server.close();
});

test('GET /v1/deployments lists the five demos with their contracts', async () => {
  const { data, response } = await server.client.GET('/v1/deployments');
  assert.equal(response.status, 200);
  const names = data!.items.map((deployment) => deployment.name).sort();
  assert.deepEqual(names, ['demo.approval', 'demo.counter', 'demo.echo', 'demo.sleep', 'demo.unreliable']);
  for (const deployment of data!.items) {
    assert.match(deployment.deploymentRef, new RegExp(`^${deployment.name.replace('.', '\\.')}\\+sha256:[0-9a-f]{64}$`));
    assert.equal(typeof deployment.inputSchema, 'object');
    assert.ok(deployment.outputSchema !== undefined && deployment.signalSchema !== undefined);
  }
});

test('GET /v1/deployments/{name} returns one entry', async () => {
  const { data, response } = await server.client.GET('/v1/deployments/{name}', { params: { path: { name: 'demo.echo' } } });
  assert.equal(response.status, 200);
  assert.equal(data!.name, 'demo.echo');
  assert.deepEqual((data!.inputSchema as { required?: string[] }).required, ['value']);
});

test('GET /v1/deployments/{name}: an unknown name is 404 deployment_not_found', async () => {
  const result = await server.client.GET('/v1/deployments/{name}', { params: { path: { name: 'demo.nothing' } } });
  expectProblem(result, 404, 'deployment_not_found');
});

test('GET /v1/deployments/{name}: a name outside the qualified-name syntax is 400 invalid_request', async () => {
  const result = await server.client.GET('/v1/deployments/{name}', { params: { path: { name: 'Demo Echo' } } });
  const problem = expectProblem(result, 400, 'invalid_request');
  assert.deepEqual(problem.errors?.map((error) => error.pointer), ['/params/name']);
});

test('GET /v1/deployments: unknown query parameters are 400 invalid_request', async () => {
  const result = await server.client.GET('/v1/deployments', { params: { query: { page: 2 } as never } });
  const problem = expectProblem(result, 400, 'invalid_request');
  assert.deepEqual(problem.errors?.map((error) => [error.pointer, error.keyword]), [['/query/page', 'additionalProperties']]);
});
