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

const effectsOf = (id: string) => server.client.GET('/v1/processes/{id}/effects', { params: { path: { id } } });

/** Starts demo.unreliable in `unknown` mode and waits until its one effect is Unknown. */
async function unknownEffect(replayable: boolean): Promise<{ processId: string; effectId: string }> {
  const { processId } = await start(server, 'demo.unreliable', { mode: 'unknown', replayable });
  const { data } = await until(() => effectsOf(processId), (r) => r.data?.items[0]?.status === 'unknown');
  const view = await server.client.GET('/v1/processes/{id}', { params: { path: { id: processId } } });
  assert.deepEqual(view.data!.unknownEffectIds, [data!.items[0]!.effectId]);
  return { processId, effectId: data!.items[0]!.effectId };
}

test('GET effects: id, target, status and attempts of a settled effect', async () => {
  const { processId } = await start(server, 'demo.echo', { value: 'e' });
  await resultOf(server, processId);
  const { data, response } = await effectsOf(processId);
  assert.equal(response.status, 200);
  assert.equal(data!.items.length, 1);
  const effect = data!.items[0]!;
  assert.match(effect.effectId, /^effect:[0-9a-f]{64}$/);
  assert.equal(effect.target, 'dispatcher');
  assert.equal(effect.status, 'settled');
  assert.equal(effect.attempts, 1);
  assert.equal(effect.stepSequence, 1);
  assert.equal(effect.batchIndex, 0);
});

test('GET effects of an unknown process is 404 process_not_found', async () => {
  expectProblem(await effectsOf('process:00000000000000000000000000000000'), 404, 'process_not_found');
});

test('resolution of an Unknown effect completes demo.unreliable', async () => {
  const { processId, effectId } = await unknownEffect(false);
  const { data, response } = await server.client.POST('/v1/processes/{id}/effects/{effectId}/resolution', {
    params: { path: { id: processId, effectId } },
    body: { status: 'succeeded', payload: { mode: 'unknown', attempts: 1 } },
  });
  assert.equal(response.status, 200);
  assert.equal(data!.effectId, effectId);
  assert.equal(data!.status, 'resolved');
  const result = await resultOf(server, processId);
  assert.equal(result.status, 'completed');
  assert.deepEqual(result.output, { mode: 'unknown', attempts: 1 });
});

test('replay of a replayable Unknown effect settles it (attempts counts the replay)', async () => {
  const { processId, effectId } = await unknownEffect(true);
  const { data, response } = await server.client.POST('/v1/processes/{id}/effects/{effectId}/replay', {
    params: { path: { id: processId, effectId } },
  });
  assert.equal(response.status, 200);
  assert.equal(data!.status, 'resolved');
  assert.equal(data!.attempts, 2);
  const result = await resultOf(server, processId);
  assert.deepEqual(result.output, { mode: 'unknown', attempts: 2 });
});

test('replay when the ReplayPolicy forbids it is 422 effect_replay_forbidden', async () => {
  const { processId, effectId } = await unknownEffect(false);
  const result = await server.client.POST('/v1/processes/{id}/effects/{effectId}/replay', { params: { path: { id: processId, effectId } } });
  expectProblem(result, 422, 'effect_replay_forbidden');
  await server.client.POST('/v1/processes/{id}/kill', { params: { path: { id: processId } } });
});

test('replay or resolution of an effect that is not Unknown is 409 effect_not_pending', async () => {
  const { processId } = await start(server, 'demo.sleep', { ms: 60_000 });
  const { data } = await until(() => effectsOf(processId), (r) => r.data?.items[0]?.status === 'pending');
  const effectId = data!.items[0]!.effectId;
  const path = { id: processId, effectId };
  expectProblem(await server.client.POST('/v1/processes/{id}/effects/{effectId}/replay', { params: { path } }), 409, 'effect_not_pending');
  expectProblem(
    await server.client.POST('/v1/processes/{id}/effects/{effectId}/resolution', { params: { path }, body: { status: 'failed', payload: {} } }),
    409,
    'effect_not_pending',
  );
  await server.client.POST('/v1/processes/{id}/kill', { params: { path: { id: processId } } });
});

test('replay or resolution on a finished process is 409 process_finished, also once its tree is released (the stored head answers)', async () => {
  const { processId } = await start(server, 'demo.echo', { value: 'fin' });
  await resultOf(server, processId);
  const effectId = (await effectsOf(processId)).data!.items[0]!.effectId;
  const path = { id: processId, effectId };
  expectProblem(await server.client.POST('/v1/processes/{id}/effects/{effectId}/replay', { params: { path } }), 409, 'process_finished');
  expectProblem(
    await server.client.POST('/v1/processes/{id}/effects/{effectId}/resolution', { params: { path }, body: { status: 'succeeded', payload: {} } }),
    409,
    'process_finished',
  );
  await server.client.DELETE('/v1/trees/{rootId}', { params: { path: { rootId: processId } } });
  expectProblem(await server.client.POST('/v1/processes/{id}/effects/{effectId}/replay', { params: { path } }), 409, 'process_finished');
  expectProblem(
    await server.client.POST('/v1/processes/{id}/effects/{effectId}/resolution', { params: { path }, body: { status: 'succeeded', payload: {} } }),
    409,
    'process_finished',
  );
});

test('unknown processes and effects are 404; a resolution status outside succeeded|failed is 400', async () => {
  const missing = { id: 'process:00000000000000000000000000000000', effectId: 'effect:00' };
  expectProblem(await server.client.POST('/v1/processes/{id}/effects/{effectId}/replay', { params: { path: missing } }), 404, 'process_not_found');
  expectProblem(
    await server.client.POST('/v1/processes/{id}/effects/{effectId}/resolution', { params: { path: missing }, body: { status: 'failed', payload: {} } }),
    404,
    'process_not_found',
  );
  const { processId } = await start(server, 'demo.approval', { subject: 'no effect' });
  const path = { id: processId, effectId: 'effect:does-not-exist' };
  expectProblem(await server.client.POST('/v1/processes/{id}/effects/{effectId}/replay', { params: { path } }), 404, 'effect_not_found');
  expectProblem(
    await server.client.POST('/v1/processes/{id}/effects/{effectId}/resolution', { params: { path }, body: { status: 'failed', payload: {} } }),
    404,
    'effect_not_found',
  );
  const bad = await server.client.POST('/v1/processes/{id}/effects/{effectId}/resolution', {
    params: { path },
    body: { status: 'unknown' as never, payload: {} },
  });
  assert.deepEqual(expectProblem(bad, 400, 'invalid_request').errors?.map((error) => error.pointer), ['/body/status']);
});
