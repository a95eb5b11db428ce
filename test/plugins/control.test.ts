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

const view = (id: string) => server.client.GET('/v1/processes/{id}', { params: { path: { id } } });

test('pause and resume a waiting process: 202, paused, then waiting again', async () => {
  const { processId } = await start(server, 'demo.approval', { subject: 'hold' });
  await until(() => view(processId), (r) => r.data?.status === 'waiting');
  const pause = await server.client.POST('/v1/processes/{id}/pause', { params: { path: { id: processId } }, body: { reason: 'lunch' } });
  assert.equal(pause.response.status, 202);
  assert.deepEqual(pause.data, { processId, action: 'pause' });
  const paused = await until(() => view(processId), (r) => r.data?.status === 'paused');
  assert.equal(paused.data!.pauseReason, 'lunch');

  expectProblem(await server.client.POST('/v1/processes/{id}/pause', { params: { path: { id: processId } } }), 409, 'invalid_process_control');

  const resume = await server.client.POST('/v1/processes/{id}/resume', { params: { path: { id: processId } } });
  assert.equal(resume.response.status, 202);
  assert.deepEqual(resume.data, { processId, action: 'resume' });
  await until(() => view(processId), (r) => r.data?.status === 'waiting');
});

test('cancel demo.sleep: canceled by host cancellation, with the reason', async () => {
  const { processId } = await start(server, 'demo.sleep', { ms: 60_000 });
  const cancel = await server.client.POST('/v1/processes/{id}/cancel', { params: { path: { id: processId } }, body: { reason: 'enough' } });
  assert.equal(cancel.response.status, 202);
  const result = await resultOf(server, processId);
  assert.equal(result.status, 'canceled');
  assert.equal(result.cause, 'host_cancellation');
  assert.equal(result.reason, 'enough');
});

test('kill demo.sleep: killed at once', async () => {
  const { processId } = await start(server, 'demo.sleep', { ms: 60_000 });
  const kill = await server.client.POST('/v1/processes/{id}/kill', { params: { path: { id: processId } } });
  assert.equal(kill.response.status, 202);
  const result = await resultOf(server, processId);
  assert.equal(result.status, 'killed');
  assert.equal(result.cause, 'engine_kill');
});

test('a body-less POST means {} (curl -X POST …/pause)', async () => {
  const { processId } = await start(server, 'demo.sleep', { ms: 60_000 });
  const response = await fetch(`${server.url}/v1/processes/${encodeURIComponent(processId)}/kill`, { method: 'POST' });
  assert.equal(response.status, 202);
  await resultOf(server, processId);
});

test('resume of a process that is not paused is 409 invalid_process_control', async () => {
  const { processId } = await start(server, 'demo.approval', { subject: 'not paused' });
  expectProblem(await server.client.POST('/v1/processes/{id}/resume', { params: { path: { id: processId } } }), 409, 'invalid_process_control');
});

test('control of a finished process is 409 process_finished', async () => {
  const { processId } = await start(server, 'demo.echo', { value: 'done' });
  await resultOf(server, processId);
  for (const action of ['pause', 'cancel', 'kill'] as const) {
    expectProblem(await server.client.POST(`/v1/processes/{id}/${action}`, { params: { path: { id: processId } } }), 409, 'process_finished');
  }
});

test('control of an unknown process is 404 process_not_found; a blank reason is 400', async () => {
  const id = 'process:00000000000000000000000000000000';
  expectProblem(await server.client.POST('/v1/processes/{id}/cancel', { params: { path: { id } } }), 404, 'process_not_found');
  const { processId } = await start(server, 'demo.approval', { subject: 'reason' });
  expectProblem(
    await server.client.POST('/v1/processes/{id}/cancel', { params: { path: { id: processId } }, body: { reason: '  ' } }),
    400,
    'invalid_request',
  );
});

test('control of a finished tree no runtime here holds answers from the stored head: 409 process_finished', async () => {
  const { processId } = await start(server, 'demo.echo', { value: 'released' });
  await resultOf(server, processId);
  await server.client.DELETE('/v1/trees/{rootId}', { params: { path: { rootId: processId } } });
  expectProblem(await server.client.POST('/v1/processes/{id}/pause', { params: { path: { id: processId } } }), 409, 'process_finished');
});
