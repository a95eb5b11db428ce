import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import request from 'supertest';
import { problemOf, startServer, until, type TestServer } from './server.js';

/**
 * Process-owned gates (issue 16): the face of every external wait, answered exactly once with a
 * provenance only the server sets, and in parity with the low-level path (signals addressed by waitId).
 */

let server: TestServer;
before(async () => {
  server = await startServer();
});
after(async () => {
  await server.close();
});

async function startWaiting(deployment: string, input: unknown): Promise<{ processId: string; waitId: string }> {
  const started = await request(server.url).post('/v1/processes').send({ deployment, input });
  assert.equal(started.status, 201, started.text);
  const processId = started.body.processId as string;
  const view = await until(
    async () => (await request(server.url).get(`/v1/processes/${encodeURIComponent(processId)}`)).body,
    (body) => body.status === 'waiting' && typeof body.waitId === 'string',
  );
  return { processId, waitId: view.waitId as string };
}

async function gateOf(processId: string): Promise<any> {
  const page = await request(server.url).get(`/v1/gates?rootId=${encodeURIComponent(processId)}`);
  assert.equal(page.status, 200, page.text);
  assert.equal(page.body.items.length, 1, page.text);
  return page.body.items[0];
}

const answerGate = (gateId: string, body: unknown) => request(server.url).post(`/v1/gates/${encodeURIComponent(gateId)}/answer`).send(body as object);
const getGate = (gateId: string) => request(server.url).get(`/v1/gates/${encodeURIComponent(gateId)}`);
const signal = (processId: string, signals: unknown[]) => request(server.url).post(`/v1/processes/${encodeURIComponent(processId)}/signals`).send({ signals });

describe('process-owned gates', () => {
  test('an open wait is listed as an open gate: id, kind, subject, prompt and schema from the wait', async () => {
    const { processId, waitId } = await startWaiting('demo.approval', { subject: 'deploy v2' });
    const gate = await gateOf(processId);
    assert.equal(gate.state, 'open');
    assert.equal(gate.kind, 'approval');
    assert.equal(gate.owner, 'process');
    assert.deepEqual(gate.subject, { processId, rootId: processId, deployment: 'demo.approval', waitId, key: 'approval' });
    assert.deepEqual(gate.prompt.fields.map((field: { name: string; required: boolean }) => [field.name, field.required]), [['approved', true], ['comment', false]]);
    assert.equal(gate.answerSchema.required[0], 'approved');
    assert.equal(typeof gate.openedAt, 'string');
    assert.equal(gate.answer, null);
    const one = await getGate(gate.gateId);
    assert.equal(one.status, 200);
    assert.deepEqual(one.body, gate);
    const listed = await request(server.url).get('/v1/gates?kind=approval&deployment=demo.approval');
    assert.ok(listed.body.items.some((item: { gateId: string }) => item.gateId === gate.gateId));
    const forms = await request(server.url).get('/v1/gates?kind=form&deployment=demo.approval');
    assert.equal(forms.body.items.length, 0);
  });

  test('a malformed answer is 422 with pointers on both paths and the gate stays open', async () => {
    const { processId, waitId } = await startWaiting('demo.approval', { subject: 'typo' });
    const gate = await gateOf(processId);
    const refused = problemOf(await answerGate(gate.gateId, { answer: { approved: 'yes' }, requestId: 'r-1' }), 422, 'schema_validation_failed');
    assert.deepEqual(refused.errors?.map((error) => error.pointer), ['/body/answer/approved']);
    // The low-level path refuses the same answer the same way.
    problemOf(await signal(processId, [{ id: 's-1', waitId, payload: { approved: 'yes' } }]), 422, 'schema_validation_failed');
    const still = await getGate(gate.gateId);
    assert.equal(still.body.state, 'open');
    // The refused request id is free for a good answer.
    const accepted = await answerGate(gate.gateId, { answer: { approved: true }, requestId: 'r-1' });
    assert.equal(accepted.status, 200, accepted.text);
  });

  test('answered exactly once: the winner is recorded (human, actor); a retry of it is 200; another is 409 on both paths', async () => {
    const { processId, waitId } = await startWaiting('demo.approval', { subject: 'once' });
    const gate = await gateOf(processId);
    const first = await answerGate(gate.gateId, { answer: { approved: true, comment: 'ok' }, requestId: 'req-a', actor: 'ada' });
    assert.equal(first.status, 200, first.text);
    assert.equal(first.body.accepted, true);
    assert.equal(first.body.gate.state, 'answered');
    assert.equal(first.body.gate.answer.provenance, 'human');
    assert.equal(first.body.gate.answer.actor, 'ada');
    assert.equal(first.body.gate.answer.requestId, 'req-a');

    const again = await answerGate(gate.gateId, { answer: { approved: true, comment: 'ok' }, requestId: 'req-a', actor: 'ada' });
    assert.equal(again.status, 200, again.text);
    assert.equal(again.body.accepted, false);

    const second = await answerGate(gate.gateId, { answer: { approved: false }, requestId: 'req-b', actor: 'bob' });
    const problem = problemOf(second, 409, 'gate_already_answered') as unknown as { firstAnswer: { provenance: string; actor: string; answeredAt: string } };
    assert.equal(problem.firstAnswer.provenance, 'human');
    assert.equal(problem.firstAnswer.actor, 'ada');
    assert.equal(problem.firstAnswer.answeredAt, first.body.gate.answer.answeredAt);
    // The same request id with another answer is another answer: refused too.
    problemOf(await answerGate(gate.gateId, { answer: { approved: false }, requestId: 'req-a' }), 409, 'gate_already_answered');
    // The low-level path sees the wait answered.
    assert.equal((await signal(processId, [{ id: 'late', waitId, payload: { approved: false } }])).status, 409);
    const result = await request(server.url).get(`/v1/processes/${encodeURIComponent(processId)}/result?waitMs=10000`);
    assert.deepEqual(result.body.output.approved, true);
    const read = await getGate(gate.gateId);
    assert.equal(read.body.state, 'answered');
    assert.equal(read.body.answer.provenance, 'human');
  });

  test('an answer through the low-level path answers the gate (provenance api), and the gate route then refuses', async () => {
    const { processId, waitId } = await startWaiting('demo.approval', { subject: 'parity' });
    const gate = await gateOf(processId);
    assert.equal((await signal(processId, [{ id: 'direct', waitId, payload: { approved: true } }])).status, 200);
    const problem = problemOf(await answerGate(gate.gateId, { answer: { approved: true }, requestId: 'late' }), 409, 'gate_already_answered') as unknown as { firstAnswer: { provenance: string; actor: null } };
    assert.equal(problem.firstAnswer.provenance, 'api');
    assert.equal(problem.firstAnswer.actor, null);
    const read = await getGate(gate.gateId);
    assert.equal(read.body.state, 'answered');
    assert.equal(read.body.answer.signalId, 'direct');
  });

  test('provenance cannot be supplied: a body naming one is refused and nothing is admitted', async () => {
    const { processId } = await startWaiting('demo.approval', { subject: 'forge' });
    const gate = await gateOf(processId);
    for (const provenance of ['policy', 'human', 'api']) {
      problemOf(await answerGate(gate.gateId, { answer: { approved: true }, requestId: 'forged', provenance }), 400, 'invalid_request');
    }
    assert.equal((await getGate(gate.gateId)).body.state, 'open');
    const accepted = await answerGate(gate.gateId, { answer: { approved: true }, requestId: 'plain', actor: 'policy' });
    assert.equal(accepted.body.gate.answer.provenance, 'human');
  });

  test('a wait that ends unanswered closes its gate (409 gate_closed); an unknown gate is 404', async () => {
    const { processId } = await startWaiting('demo.approval', { subject: 'closing' });
    const gate = await gateOf(processId);
    const cancel = await request(server.url).post(`/v1/processes/${encodeURIComponent(processId)}/cancel`).send({ reason: 'no' });
    assert.equal(cancel.status, 202, cancel.text);
    await request(server.url).get(`/v1/processes/${encodeURIComponent(processId)}/result?waitMs=10000`);
    assert.equal((await getGate(gate.gateId)).body.state, 'closed');
    problemOf(await answerGate(gate.gateId, { answer: { approved: true }, requestId: 'too-late' }), 409, 'gate_closed');
    const closed = await request(server.url).get(`/v1/gates?rootId=${encodeURIComponent(processId)}&state=closed`);
    assert.deepEqual(closed.body.items.map((item: { gateId: string }) => item.gateId), [gate.gateId]);
    problemOf(await getGate('gate:bm90LWEtZ2F0ZQ'), 404, 'gate_not_found');
    problemOf(await getGate(gate.gateId.replace('gate:', 'gate:x')), 404, 'gate_not_found');
    problemOf(await request(server.url).get('/v1/gates?state=answered'), 400, 'invalid_request');
  });

  test('agency: what HTTP callers send is the user\'s, engine-minted records the machine\'s, in the signal listing', async () => {
    const { processId } = await startWaiting('demo.approval', { subject: 'agency' });
    assert.equal((await signal(processId, [{ id: 'note-1', payload: { note: 'from a person' } }])).status, 200);
    const gate = await gateOf(processId);
    assert.equal((await answerGate(gate.gateId, { answer: { approved: true }, requestId: 'yes' })).status, 200);
    const page = await request(server.url).get(`/v1/processes/${encodeURIComponent(processId)}/signals?limit=1000`);
    const agency = Object.fromEntries((page.body.items as Array<{ id: string; agency: string }>).map((item) => [item.id, item.agency]));
    assert.equal(agency['note-1'], 'user');
    assert.equal(agency[gate.answer?.signalId ?? (await getGate(gate.gateId)).body.answer.signalId], 'user');
    const engine = Object.entries(agency).filter(([id]) => id.startsWith('signal:engine:'));
    assert.ok(engine.length > 0 && engine.every(([, value]) => value === 'machine'), JSON.stringify(agency));
    // A caller cannot choose it: the signal schema has no such member.
    problemOf(await request(server.url).post(`/v1/processes/${encodeURIComponent(processId)}/signals`).send({ signals: [{ id: 'n2', payload: {}, agency: 'machine' }] }), 400, 'invalid_request');
  });

  test('demo.counter: every wait is its own gate; answered ones are listed per tree', async () => {
    const { processId } = await startWaiting('demo.counter', { target: 3 });
    const first = await gateOf(processId);
    assert.equal(first.kind, 'form');
    assert.equal((await answerGate(first.gateId, { answer: { add: 1 }, requestId: 'a1' })).status, 200);
    const second = await until(() => gateOf(processId).catch(() => undefined), (gate) => gate !== undefined && gate.gateId !== first.gateId);
    assert.equal((await answerGate(second.gateId, { answer: { add: 2 }, requestId: 'a2' })).status, 200);
    const answered = await request(server.url).get(`/v1/gates?rootId=${encodeURIComponent(processId)}&state=answered`);
    assert.deepEqual(new Set(answered.body.items.map((item: { gateId: string }) => item.gateId)), new Set([first.gateId, second.gateId]));
  });
});
