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

async function waiting(id: string) {
  const { data } = await until(
    () => server.client.GET('/v1/processes/{id}', { params: { path: { id } } }),
    (r) => r.data?.status === 'waiting' && r.data.waitId !== null,
  );
  return data!;
}

function deliver(id: string, signals: Array<{ id: string; waitId?: string; payload: unknown }>) {
  return server.client.POST('/v1/processes/{id}/signals', { params: { path: { id } }, body: { signals } });
}

describe('demo.approval: waits, the inbox, notes and the answer', () => {
  test('the wait appears in /v1/waits, notes queue, the addressed answer completes it', async () => {
    const { processId } = await start(server, 'demo.approval', { subject: 'release 1.0' });
    const view = await waiting(processId);
    assert.equal(view.waitKind, 'external');

    const inbox = await server.client.GET('/v1/waits');
    assert.equal(inbox.response.status, 200);
    const entry = inbox.data!.items.find((wait) => wait.processId === processId);
    assert.deepEqual(
      { ...entry, since: undefined, answerSchema: undefined, description: undefined },
      {
        processId,
        rootId: processId,
        waitId: view.waitId,
        waitKind: 'external',
        key: 'approval',
        deployment: 'demo.approval',
        since: undefined,
        answerSchema: undefined,
        prompt: null,
        description: undefined,
      },
    );
    // The wait says what answer it admits (the structure issue's defect 1).
    assert.deepEqual((entry!.answerSchema as { required?: string[] }).required, ['approved']);
    assert.equal(typeof entry!.description, 'string');
    assert.ok(!Number.isNaN(Date.parse(entry!.since)));

    const note = await deliver(processId, [{ id: 'note-1', payload: { note: 'looks good' } }]);
    assert.equal(note.response.status, 200);
    assert.deepEqual(note.data, { accepted: true });
    const stillWaiting = await waiting(processId);
    assert.equal(stillWaiting.waitId, view.waitId);

    const answer = await deliver(processId, [{ id: 'answer-1', waitId: view.waitId!, payload: { approved: true, comment: 'ship it' } }]);
    assert.deepEqual(answer.data, { accepted: true });
    const result = await resultOf(server, processId);
    assert.deepEqual(result.output, { subject: 'release 1.0', approved: true, comment: 'ship it', notes: ['looks good'] });

    const after = await server.client.GET('/v1/waits');
    assert.ok(!after.data!.items.some((wait) => wait.processId === processId));
  });

  test('an answer addressed to another wait is 422 signal_rejected, and nothing of the batch is admitted', async () => {
    const { processId } = await start(server, 'demo.approval', { subject: 'atomic' });
    await waiting(processId);
    const result = await deliver(processId, [
      { id: 'note-a', payload: { note: 'first' } },
      { id: 'answer-x', waitId: 'wait:not-the-current-one', payload: { approved: true } },
    ]);
    expectProblem(result, 422, 'signal_rejected');
    const receipts = await server.client.GET('/v1/processes/{id}/signals', { params: { path: { id: processId } } });
    assert.equal(receipts.response.status, 200);
    assert.ok(receipts.data!.items.length > 0, 'the receipts page lists what the mailbox holds');
    assert.ok(!receipts.data!.items.some((receipt) => receipt.id === 'note-a'));
  });

  test('an unaddressed payload outside the signal schema is 422 schema_validation_failed', async () => {
    const { processId } = await start(server, 'demo.approval', { subject: 'schema' });
    await waiting(processId);
    const problem = expectProblem(await deliver(processId, [{ id: 'bad-note', payload: { nope: true } }]), 422, 'schema_validation_failed');
    assert.ok(problem.errors === undefined || problem.errors.every((error) => typeof error.pointer === 'string'));
  });

  test('a full mailbox is 409 resource_limit_exceeded', async () => {
    const { data } = await server.client.POST('/v1/processes', {
      body: { deployment: 'demo.approval', input: { subject: 'small mailbox' }, treeLimits: { maxPendingSignals: 2 } },
    });
    await waiting(data!.processId);
    const notes = Array.from({ length: 5 }, (_, index) => ({ id: `note-${index}`, payload: { note: `n${index}` } }));
    expectProblem(await deliver(data!.processId, notes), 409, 'resource_limit_exceeded');
  });
});

describe('demo.counter: deduplication and conflicts', () => {
  test('a repeated id with the same content is accepted false; other content is 409 signal_conflict', async () => {
    const { processId } = await start(server, 'demo.counter', { target: 3 });
    const view = await waiting(processId);
    const add = { id: 'add-1', waitId: view.waitId!, payload: { add: 1 } };
    assert.deepEqual((await deliver(processId, [add])).data, { accepted: true });
    assert.deepEqual((await deliver(processId, [add])).data, { accepted: false });
    expectProblem(await deliver(processId, [{ ...add, payload: { add: 2 } }]), 409, 'signal_conflict');

    const next = await until(
      () => server.client.GET('/v1/processes/{id}', { params: { path: { id: processId } } }),
      (r) => r.data?.status === 'waiting' && r.data.waitId !== view.waitId,
    );
    await deliver(processId, [{ id: 'add-2', waitId: next.data!.waitId!, payload: { add: 2 } }]);
    const result = await resultOf(server, processId);
    assert.deepEqual(result.output, { total: 3, rounds: 2 });

    // Terminal: the same batch again is still accepted false; anything new is 409 process_finished.
    assert.deepEqual((await deliver(processId, [add])).data, { accepted: false });
    expectProblem(await deliver(processId, [{ id: 'add-3', payload: { add: 1 } }]), 409, 'process_finished');
  });
});

describe('errors', () => {
  test('an unknown process is 404 process_not_found', async () => {
    expectProblem(await deliver('process:00000000000000000000000000000000', [{ id: 's', payload: {} }]), 404, 'process_not_found');
  });

  test('an empty batch, a bad signal id or the reserved engine namespace is 400 invalid_request', async () => {
    const id = 'process:00000000000000000000000000000000';
    expectProblem(await deliver(id, []), 400, 'invalid_request');
    const bad = expectProblem(await deliver(id, [{ id: 'has space', payload: {} }]), 400, 'invalid_request');
    assert.deepEqual(bad.errors?.map((error) => error.pointer), ['/body/signals/0/id']);
    const { processId } = await start(server, 'demo.approval', { subject: 'reserved' });
    expectProblem(await deliver(processId, [{ id: 'signal:engine:forged', payload: { note: 'x' } }]), 400, 'invalid_request');
  });

  test('a finished tree no runtime here holds answers from its stored head: 409 process_finished, never a restore', async () => {
    const { processId } = await start(server, 'demo.echo', { value: 'gone' });
    await resultOf(server, processId);
    const release = await server.client.DELETE('/v1/trees/{rootId}', { params: { path: { rootId: processId } } });
    assert.equal(release.response.status, 204);
    expectProblem(await deliver(processId, [{ id: 'late', payload: {} }]), 409, 'process_finished');
    const tree = await server.client.GET('/v1/trees/{rootId}', { params: { path: { rootId: processId } } });
    assert.equal(tree.data?.active, false, 'the signal did not bring the finished tree back');
  });
});
