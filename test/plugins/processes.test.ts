import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { expectProblem, resultOf, start, startServer, until, type TestServer } from './server.js';

let server: TestServer;
before(async () => {
  server = await startServer();
});
after(async () => {
  await server.close();
});

describe('POST /v1/processes', () => {
  test('starts a root process: 201, Location, the committed view', async () => {
    const { data, response } = await server.client.POST('/v1/processes', { body: { deployment: 'demo.echo', input: { value: 'hi' } } });
    assert.equal(response.status, 201);
    const process = data!;
    assert.equal(response.headers.get('location'), `/v1/processes/${encodeURIComponent(process.processId)}`);
    assert.match(process.processId, /^process:[0-9a-f]{32}$/);
    assert.equal(process.rootId, process.processId);
    assert.equal(process.parentId, null);
    assert.equal(process.depth, 0);
    assert.equal(process.deployment, 'demo.echo');
    assert.match(process.deploymentRef, /^demo\.echo\+sha256:/);
    assert.ok(['running', 'completed'].includes(process.status));
  });

  test('Idempotency-Key: the same body returns the same process (200), another body is 409', async () => {
    const body = { deployment: 'demo.echo', input: { value: 'once' } };
    const headers = { 'idempotency-key': 'test-key-1' };
    const first = await server.client.POST('/v1/processes', { body, params: { header: headers } });
    assert.equal(first.response.status, 201);
    const again = await server.client.POST('/v1/processes', { body, params: { header: headers } });
    assert.equal(again.response.status, 200);
    assert.equal(again.data!.processId, first.data!.processId);
    const other = await server.client.POST('/v1/processes', {
      body: { deployment: 'demo.echo', input: { value: 'twice' } },
      params: { header: headers },
    });
    expectProblem(other, 409, 'idempotency_key_conflict');
  });

  test('an unknown deployment is 404 deployment_not_found', async () => {
    const result = await server.client.POST('/v1/processes', { body: { deployment: 'demo.missing', input: {} } });
    expectProblem(result, 404, 'deployment_not_found');
  });

  test('input that fails the deployment input schema is 422 schema_validation_failed, pointing into the body', async () => {
    const result = await server.client.POST('/v1/processes', { body: { deployment: 'demo.echo', input: { value: 3 } } });
    const problem = expectProblem(result, 422, 'schema_validation_failed');
    assert.deepEqual(problem.errors, [{ pointer: '/body/input/value', message: 'must be string', keyword: 'type' }]);
  });

  test('asking for capabilities the server does not grant is 403 authority_exceeded', async () => {
    const result = await server.client.POST('/v1/processes', {
      body: { deployment: 'demo.echo', input: { value: 'x' }, capabilities: ['net.fetch'] },
    });
    expectProblem(result, 403, 'authority_exceeded');
  });

  test('a narrower budget is accepted and shows in the view', async () => {
    const budget = { steps: { maximum: 10 }, effects: { maximum: 5 }, signals: { maximum: 5 } };
    const { data, response } = await server.client.POST('/v1/processes', { body: { deployment: 'demo.echo', input: { value: 'b' }, budget } });
    assert.equal(response.status, 201);
    assert.deepEqual(data!.budget, budget);
  });

  test('an Idempotency-Key outside visible ASCII is 400 invalid_request', async () => {
    const result = await server.client.POST('/v1/processes', {
      body: { deployment: 'demo.echo', input: { value: 'x' } },
      params: { header: { 'idempotency-key': 'two words' } },
    });
    const problem = expectProblem(result, 400, 'invalid_request');
    assert.deepEqual(problem.errors?.map((error) => error.pointer), ['/headers/idempotency-key']);
  });
});

describe('GET /v1/processes/{id} and /result', () => {
  test('inspection and the terminal result of demo.echo', async () => {
    const { processId } = await start(server, 'demo.echo', { value: 'abc' });
    const result = await resultOf(server, processId);
    assert.equal(result.status, 'completed');
    assert.equal(result.cause, 'completion');
    assert.deepEqual(result.output, { value: 'abc' });
    assert.equal(result.failure, null);
    assert.deepEqual(result.unresolvedEffectIds, []);

    const { data, response } = await server.client.GET('/v1/processes/{id}', { params: { path: { id: processId } } });
    assert.equal(response.status, 200);
    assert.equal(data!.status, 'completed');
    assert.deepEqual(data!.result, result);
    assert.equal(data!.waitId, null);
    assert.equal(data!.waitKind, null);
    assert.ok(data!.usage.committedSteps >= 1);
  });

  test('a failed process is data: 200 with its failure', async () => {
    const { processId } = await start(server, 'demo.unreliable', { mode: 'fail', replayable: false });
    const result = await resultOf(server, processId);
    assert.equal(result.status, 'failed');
    assert.equal(result.failure?.kind, 'external');
    assert.equal(result.output, null);
  });

  test('a process that is not terminal answers 202 with its status (waitMs=0 and a short wait)', async () => {
    const { processId } = await start(server, 'demo.approval', { subject: 'pending' });
    const now = await server.client.GET('/v1/processes/{id}/result', { params: { path: { id: processId } } });
    assert.equal(now.response.status, 202);
    assert.equal(now.data!.processId, processId);
    assert.ok(['running', 'waiting'].includes(now.data!.status));
    const later = await server.client.GET('/v1/processes/{id}/result', { params: { path: { id: processId }, query: { waitMs: 50 } } });
    assert.equal(later.response.status, 202);
    assert.equal(later.data!.status, 'waiting');
  });

  test('unknown processes are 404 process_not_found', async () => {
    const id = 'process:00000000000000000000000000000000';
    expectProblem(await server.client.GET('/v1/processes/{id}', { params: { path: { id } } }), 404, 'process_not_found');
    expectProblem(await server.client.GET('/v1/processes/{id}/result', { params: { path: { id } } }), 404, 'process_not_found');
  });

  test('waitMs outside 0..60000 or not an integer is 400 invalid_request', async () => {
    const id = 'process:00000000000000000000000000000000';
    for (const waitMs of [60_001, -1, 1.5]) {
      const result = await server.client.GET('/v1/processes/{id}/result', { params: { path: { id }, query: { waitMs } } });
      const problem = expectProblem(result, 400, 'invalid_request');
      assert.deepEqual(problem.errors?.map((error) => error.pointer), ['/query/waitMs']);
    }
    const text = await server.client.GET('/v1/processes/{id}/result', { params: { path: { id }, query: { waitMs: 'soon' as never } } });
    expectProblem(text, 400, 'invalid_request');
  });
});

describe('GET /v1/processes', () => {
  test('root processes newest first, filtered, paged with a cursor', async () => {
    const first = await start(server, 'demo.counter', { target: 5 });
    const second = await start(server, 'demo.counter', { target: 6 });
    await until(
      () => server.client.GET('/v1/processes/{id}', { params: { path: { id: second.processId } } }),
      (r) => r.data?.status === 'waiting',
    );
    const { data, response } = await server.client.GET('/v1/processes', { params: { query: { deployment: 'demo.counter', limit: 1 } } });
    assert.equal(response.status, 200);
    assert.deepEqual(data!.items.map((item) => item.processId), [second.processId]);
    assert.equal(data!.items[0]!.deployment, 'demo.counter');
    assert.ok(data!.nextCursor !== null);
    const next = await server.client.GET('/v1/processes', {
      params: { query: { deployment: 'demo.counter', limit: 1, cursor: data!.nextCursor! } },
    });
    assert.deepEqual(next.data!.items.map((item) => item.processId), [first.processId]);

    const waiting = await server.client.GET('/v1/processes', { params: { query: { status: 'waiting', deployment: 'demo.counter' } } });
    assert.ok(waiting.data!.items.some((item) => item.processId === second.processId));
    assert.ok(waiting.data!.items.every((item) => item.status === 'waiting'));
  });

  test('an unparseable cursor, an unknown status or a bad limit is 400 invalid_request', async () => {
    expectProblem(await server.client.GET('/v1/processes', { params: { query: { cursor: 'not-a-cursor' } } }), 400, 'invalid_request');
    expectProblem(await server.client.GET('/v1/processes', { params: { query: { status: 'sleeping' as never } } }), 400, 'invalid_request');
    expectProblem(await server.client.GET('/v1/processes', { params: { query: { limit: 0 } } }), 400, 'invalid_request');
    expectProblem(await server.client.GET('/v1/processes', { params: { query: { limit: 1001 } } }), 400, 'invalid_request');
  });
});
