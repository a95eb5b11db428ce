import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import request from 'supertest';
import { coordinationExampleNames } from '../../src/server/examples/coordination.js';
import { problemOf, startServer, type TestServer } from './server.js';

let server: TestServer;
before(async () => {
  server = await startServer();
});
after(async () => {
  await server.close();
});

test('GET /v1/deployments lists the six demos and the strategy examples with their contracts', async () => {
  const response = await request(server.url).get('/v1/deployments');
  assert.equal(response.status, 200);
  const items = response.body.items as Array<{ name: string; deploymentRef: string; inputSchema: unknown; outputSchema?: unknown; signalSchema?: unknown }>;
  const names = items.map((deployment) => deployment.name).sort();
  assert.deepEqual(names, ['demo.approval', 'demo.counter', 'demo.echo', 'demo.fanout', 'demo.sleep', 'demo.unreliable', 'example.messaging.notify', 'example.workflow.batch', 'example.workflow.review', 'example.collaboration.research', 'example.collaboration.research.coordinator', 'example.collaboration.research.notes', 'example.collaboration.research.survey', 'example.planning.errands', 'example.agent.tools', 'example.agent.research', 'example.agent.summarizer', 'example.agent.briefing', ...coordinationExampleNames].sort());
  for (const deployment of items) {
    assert.match(deployment.deploymentRef, new RegExp(`^${deployment.name.replaceAll('.', '\\.')}\\+sha256:[0-9a-f]{64}$`));
    assert.equal(typeof deployment.inputSchema, 'object');
    assert.ok(deployment.outputSchema !== undefined && deployment.signalSchema !== undefined);
  }
});

test('GET /v1/deployments/{name} returns one entry', async () => {
  const response = await request(server.url).get('/v1/deployments/demo.echo');
  assert.equal(response.status, 200);
  assert.equal(response.body.name, 'demo.echo');
  assert.deepEqual((response.body.inputSchema as { required?: string[] }).required, ['value']);
});

test('GET /v1/deployments/{name}: an unknown name is 404 deployment_not_found', async () => {
  problemOf(await request(server.url).get('/v1/deployments/demo.nothing'), 404, 'deployment_not_found');
});

test('GET /v1/deployments/{name}: a name outside the qualified-name syntax is 400 invalid_request', async () => {
  const problem = problemOf(await request(server.url).get(`/v1/deployments/${encodeURIComponent('Demo Echo')}`), 400, 'invalid_request');
  assert.deepEqual(problem.errors?.map((error) => error.pointer), ['/params/name']);
});

test('GET /v1/deployments: unknown query parameters are 400 invalid_request', async () => {
  const problem = problemOf(await request(server.url).get('/v1/deployments').query({ page: 2 }), 400, 'invalid_request');
  assert.deepEqual(problem.errors?.map((error) => [error.pointer, error.keyword]), [['/query/page', 'additionalProperties']]);
});
