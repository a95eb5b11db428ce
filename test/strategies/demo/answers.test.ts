/**
 * The demo waits declare their answer contracts: demo.approval statically in its Descriptor,
 * demo.counter on each round's wait Effect (its keys are decided at run time). A malformed answer is
 * refused at admission and the Process keeps waiting, instead of being accepted and then failing.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { approvalAnswerSchema, approvalDefinition, approvalWaitKey } from '../../../strategies/demo/approval.js';
import { counterAnswerSchema, counterDefinition } from '../../../strategies/demo/counter.js';
import { Deployment } from '../../../src/kernel/deployment.js';
import { Digest } from '../../../src/kernel/digest.js';
import { Engine } from '../../../src/kernel/engine.js';
import { ErrorCode } from '../../../src/kernel/errors.js';
import type { Event } from '../../../src/kernel/event.js';
import { WaitKey, type WaitId } from '../../../src/kernel/identity.js';
import { Payload } from '../../../src/kernel/payload.js';
import type { Process } from '../../../src/kernel/process.js';
import { SchemaValidationError } from '../../../src/kernel/schema.js';
import { SignalRequest } from '../../../src/kernel/signal.js';
import { MemoryTreeCommitter } from '../../../src/store/memory-committer.js';
import { ObservationRecorder } from '../../../src/testing/scripted-dispatcher.js';

const approval = Deployment.create({
  definition: approvalDefinition,
  implementationDigest: Digest.of('test:demo.approval'),
  configurationDigest: Digest.of('test:demo.approval'),
});
const counter = Deployment.create({
  definition: counterDefinition,
  implementationDigest: Digest.of('test:demo.counter'),
  configurationDigest: Digest.of('test:demo.counter'),
});

function engine() {
  const recorder = new ObservationRecorder();
  return { engine: new Engine({ committer: new MemoryTreeCommitter(), eventListeners: [recorder] }), recorder };
}

const waitingCommitted = (process: Process, count: number) => {
  let seen = 0;
  return (event: Event) =>
    event.processId.equals(process.id) && event.name === 'agent.step.committed' && event.stepCommitted()?.status === 'waiting' && ++seen === count;
};

async function refusedAt(action: Promise<unknown>, pointer: string): Promise<void> {
  await assert.rejects(action, (error: unknown) => {
    assert.ok(error instanceof SchemaValidationError, String(error));
    assert.equal(error.code, ErrorCode.schemaValidationFailed);
    assert.deepEqual(
      error.details.map((violation) => violation.pointer),
      [pointer],
    );
    return true;
  });
}

const answer = (id: string, waitId: WaitId, value: unknown) => SignalRequest.create({ id, waitId, payload: Payload.encode(value) });

test('demo.approval declares its answer and refuses {"approved":"yes"}; the wait stays open', async () => {
  const declared = approval.descriptor.wait(WaitKey.parse(approvalWaitKey));
  assert.ok(declared?.answerSchema.equals(approvalAnswerSchema));
  const { engine: kernel, recorder } = engine();
  const process = await kernel.start(approval, Payload.encode({ subject: 'release 1.0' }));
  await recorder.awaitEvent(waitingCommitted(process, 1));
  const snapshot = () => kernel.inspectTree(process.id).processes[0]!.snapshot;
  const wait = snapshot().currentWait(approval.descriptor);
  assert.ok(wait?.answerSchema?.equals(approvalAnswerSchema));
  assert.equal(wait?.description, 'The approval decision on the subject: {approved: boolean, comment?: string}.');
  const waitId = wait!.waitId;
  await refusedAt(process.deliverSignals(answer('a', waitId, { approved: 'yes' })), '/approved');
  assert.equal(snapshot().status, 'waiting');
  assert.equal(snapshot().signalReceipts().filter((receipt) => !receipt.id.engineOwned).length, 0);
  assert.equal(await process.deliverSignals(answer('a', waitId, { approved: true, comment: 'ship it' })), true);
  const result = await process.await();
  assert.equal(result.status, 'completed');
  assert.deepEqual(result.output?.decode(), { subject: 'release 1.0', approved: true, comment: 'ship it', notes: [] });
});

test('demo.counter carries its answer on each round and refuses {"add":"2"}; the round stays open', async () => {
  const { engine: kernel, recorder } = engine();
  const process = await kernel.start(counter, Payload.encode({ target: 3 }));
  await recorder.awaitEvent(waitingCommitted(process, 1));
  const snapshot = () => kernel.inspectTree(process.id).processes[0]!.snapshot;
  const first = snapshot().currentWait(counter.descriptor);
  assert.ok(first?.answerSchema?.equals(counterAnswerSchema));
  assert.equal(first?.key.toString(), 'round-1');
  assert.equal(first?.prompt, 'Round 1: the total is 0 of 3; answer {add: integer}.');
  await refusedAt(process.deliverSignals(answer('add-1', first!.waitId, { add: '2' })), '/add');
  assert.equal(snapshot().status, 'waiting');
  assert.equal(await process.deliverSignals(answer('add-1', first!.waitId, { add: 2 })), true);
  await recorder.awaitEvent(waitingCommitted(process, 2));
  const second = snapshot().currentWait(counter.descriptor);
  assert.equal(second?.prompt, 'Round 2: the total is 2 of 3; answer {add: integer}.');
  await refusedAt(process.deliverSignals(answer('add-2', second!.waitId, { add: 1.5 })), '/add');
  assert.equal(await process.deliverSignals(answer('add-2', second!.waitId, { add: 1 })), true);
  const result = await process.await();
  assert.equal(result.status, 'completed');
  assert.deepEqual(result.output?.decode(), { total: 3, rounds: 2 });
});
