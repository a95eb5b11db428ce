/**
 * InputGate through the Engine and through the HTTP API: an unaddressed signal and a malformed
 * answer are refused at admission (nothing is recorded, the wait stays open), the wait publishes
 * the request as its prompt with the answer schema, and the gate completes with the original
 * answer Signal — its caller-chosen id, its wait id and its payload.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { ErrorCode, Payload, SignalId, SignalRequest, WaitId } from '../../../src/kernel/index.js';
import { committedStatus, rejectsWith, setup } from '../../kernel/engine/harness.js';
import { startServer, until, type TestServer } from '../../plugins/server.js';
import { deployment, gateDefinition } from './fixtures.js';

const gate = deployment('test.coordination.gate', gateDefinition);
const request = (id: string, payload: unknown, waitId?: WaitId) =>
  SignalRequest.create({ id: SignalId.parseExternal(id), waitId, payload: Payload.encode(payload) });

test('InputGate (Engine): refuses an unaddressed signal and a malformed answer at admission, completes with the original answer signal', async () => {
  const { engine, recorder } = setup();
  const process = await engine.start(gate, Payload.encode({ question: 'ship it?' }));
  await committedStatus(recorder, process.id, 'waiting');
  const snapshot = () => engine.inspectTree(process.id).processes[0]!.snapshot;
  const waitId = snapshot().waitId as WaitId;
  assert.ok(waitId instanceof WaitId);
  const before = snapshot().mailbox.records().length;

  // No signal schema: every unaddressed signal is refused before the mailbox.
  await rejectsWith(process.deliverSignals(request('note-1', { approved: true })), ErrorCode.schemaValidationFailed);
  // The declared answer schema is enforced at admission.
  await rejectsWith(process.deliverSignals(request('answer-1', { approved: 'yes' }, waitId)), ErrorCode.schemaValidationFailed);
  assert.equal(snapshot().mailbox.records().length, before, 'nothing was recorded');
  assert.equal(snapshot().status, 'waiting');
  assert.ok(snapshot().waitId?.equals(waitId), 'the wait stays open');

  assert.equal(await process.deliverSignals(request('answer-1', { approved: true, comment: 'ok' }, waitId)), true);
  const result = await process.await();
  assert.equal(result.status, 'completed');
  assert.deepEqual(result.output?.decode(), { id: 'answer-1', wait_id: waitId.toString(), payload: { approved: true, comment: 'ok' } });
  await engine.close();
});

test('InputGate (Engine): a request too large for a wait prompt is refused at start', async () => {
  const { engine } = setup();
  const error = await rejectsWith(engine.start(gate, Payload.encode({ question: 'x'.repeat(5000) })), 'process_start_failed');
  assert.match(error.message, /published as the wait prompt/);
  await engine.close();
});

let server: TestServer;
before(async () => {
  server = await startServer();
});
after(async () => {
  await server.close();
});

async function call(method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
  const response = await fetch(`${server.url}${path}`, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, body: text === '' ? undefined : JSON.parse(text) };
}

test('example.coordination.input (HTTP): the inbox shows the request and answer schema; a 4xx for an unaddressed signal and a malformed answer records nothing; the answer completes it', async () => {
  const started = await call('POST', '/v1/processes', { deployment: 'example.coordination.input', input: { question: 'Ship v2?', options: ['yes', 'no'] } });
  assert.equal(started.status, 201);
  const id = started.body.processId as string;
  const view = (await until(() => call('GET', `/v1/processes/${id}`), (read) => read.body.status === 'waiting')).body;
  const waitId = view.waitId as string;

  const inbox = (await call('GET', '/v1/waits?deployment=example.coordination.input')).body.items.find((item: { processId: string }) => item.processId === id);
  assert.equal(inbox.key, 'coordination.input');
  assert.equal(inbox.waitId, waitId);
  assert.deepEqual(JSON.parse(inbox.prompt), { question: 'Ship v2?', options: ['yes', 'no'] });
  assert.deepEqual(inbox.answerSchema.required, ['choice']);

  const signalsBefore = (await call('GET', `/v1/processes/${id}/signals`)).body.items.length;
  const unaddressedAnswer = await call('POST', `/v1/processes/${id}/signals`, { signals: [{ id: 'note-1', payload: { choice: 'yes' } }] });
  assert.equal(unaddressedAnswer.status, 422);
  assert.equal(unaddressedAnswer.body.code, 'schema_validation_failed');
  const malformed = await call('POST', `/v1/processes/${id}/signals`, { signals: [{ id: 'answer-1', waitId, payload: { choice: 7 } }] });
  assert.equal(malformed.status, 422);
  assert.equal(malformed.body.code, 'schema_validation_failed');
  assert.equal((await call('GET', `/v1/processes/${id}/signals`)).body.items.length, signalsBefore, 'nothing was admitted');
  assert.equal((await call('GET', `/v1/processes/${id}`)).body.status, 'waiting');

  const answered = await call('POST', `/v1/processes/${id}/signals`, { signals: [{ id: 'answer-1', waitId, payload: { choice: 'yes', note: 'go' } }] });
  assert.equal(answered.status, 200);
  const done = await call('GET', `/v1/processes/${id}/result?waitMs=10000`);
  assert.equal(done.body.status, 'completed');
  assert.deepEqual(done.body.output, { id: 'answer-1', wait_id: waitId, payload: { choice: 'yes', note: 'go' } });
});
