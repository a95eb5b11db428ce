/**
 * The answer contract of external waits: a static declaration in the Descriptor or a run-time one
 * carried by the wait Effect, enforced at signal admission (owner lane, whole batch), committed
 * with the wait, kept across restore, checked by restore validation, and listed by `currentWait`.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Deployment } from '../../../src/kernel/deployment.js';
import { Effect } from '../../../src/kernel/effect.js';
import { ErrorCode } from '../../../src/kernel/errors.js';
import { WaitId, WaitKey, type ProcessId } from '../../../src/kernel/identity.js';
import { MailboxRecord } from '../../../src/kernel/mailbox.js';
import { Payload } from '../../../src/kernel/payload.js';
import { Schema, SchemaValidationError } from '../../../src/kernel/schema.js';
import { SignalRequest } from '../../../src/kernel/signal.js';
import { Transition } from '../../../src/kernel/transition.js';
import { TreeSnapshot } from '../../../src/kernel/tree-snapshot.js';
import { CurrentWait, type WaitOptions } from '../../../src/kernel/wait.js';
import { committedStatus, deploy, hostRequest, ProgramDefinition, RecordingCommitter, rejectsWith, setup, type Setup } from './harness.js';

const decisionSchema = Schema.of({
  type: 'object',
  properties: { approved: { type: 'boolean' } },
  required: ['approved'],
  additionalProperties: false,
});
const countSchema = Schema.of({
  type: 'object',
  properties: { add: { type: 'integer' } },
  required: ['add'],
  additionalProperties: false,
});
const noteSchema = Schema.of({ type: 'object', properties: { note: { type: 'string' } }, required: ['note'], additionalProperties: false });
const declared = [{ key: WaitKey.parse('decision'), description: 'Approve or reject the request.', answerSchema: decisionSchema }];

interface GateNote {
  readonly phase: 'opening' | 'waiting';
  readonly waitId?: string;
  readonly notes: readonly unknown[];
}

/**
 * Step 1 opens one external wait under `key` (with `options` on the Effect); Step 2 records the
 * minted WaitId from the opening and waits; then it completes with `{answer, notes}` once the
 * answer is in the window. Unaddressed notes are collected in arrival order.
 */
function gateProgram(config: { key?: string; options?: WaitOptions; waits?: typeof declared } = {}): ProgramDefinition {
  const key = WaitKey.parse(config.key ?? 'decision');
  return new ProgramDefinition({
    name: 'test.gate',
    signalSchema: noteSchema,
    waits: config.waits,
    step({ state, signals }) {
      if (state.note === undefined) {
        return { transition: Transition.continue(0, [Effect.wait(key, config.options)]), note: JSON.stringify({ phase: 'opening', notes: [] }) };
      }
      const note = JSON.parse(state.note) as GateNote;
      const notes = [...note.notes];
      if (note.phase === 'opening') {
        const index = signals.findIndex((signal) => signal.engineOwned && signal.waitId !== undefined);
        const opening = signals[index];
        if (opening?.waitId === undefined) throw new Error('expected the wait opening');
        for (const signal of signals.slice(0, index)) notes.push(signal.payload.decode());
        const next: GateNote = { phase: 'waiting', waitId: opening.waitId.toString(), notes };
        return { transition: Transition.wait(index + 1, opening.waitId), note: JSON.stringify(next) };
      }
      const waitId = WaitId.parse(note.waitId as string);
      let answer: unknown;
      for (const signal of signals) {
        if (!signal.engineOwned && waitId.equals(signal.waitId)) answer = signal.payload.decode();
        else notes.push(signal.payload.decode());
      }
      if (answer === undefined) return { transition: Transition.wait(signals.length, waitId), note: JSON.stringify({ ...note, notes }) };
      return Transition.complete(signals.length, Payload.encode({ answer, notes }));
    },
  });
}

const staticGate = deploy(gateProgram({ waits: declared }), undefined, 'answers-static');
const runtimeGate = deploy(gateProgram({ key: 'round-1', options: { answerSchema: countSchema, prompt: 'How much to add?' } }), undefined, 'answers-runtime');

function snapshotOf(context: Pick<Setup, 'engine'>, id: ProcessId) {
  return context.engine.inspectTree(id).processes[0]!.snapshot;
}

function answer(id: string, waitId: WaitId, value: unknown): SignalRequest {
  return SignalRequest.create({ id, waitId, payload: Payload.encode(value) });
}

async function waitingOn(deployment: Deployment, context: Setup = setup()) {
  const process = await context.engine.start(deployment, Payload.encode({}));
  await committedStatus(context.recorder, process.id, 'waiting');
  const waitId = snapshotOf(context, process.id).waitId as WaitId;
  assert.ok(waitId instanceof WaitId);
  return { ...context, process, waitId };
}

async function refused(action: Promise<unknown>, pointer: string): Promise<SchemaValidationError> {
  const error = await rejectsWith(action, ErrorCode.schemaValidationFailed);
  assert.ok(error instanceof SchemaValidationError);
  assert.deepEqual(
    error.details.map((violation) => violation.pointer),
    [pointer],
  );
  return error;
}

test('an answer the declared schema rejects is refused at admission with its pointer: nothing admitted, nothing committed', async () => {
  const context = await waitingOn(staticGate);
  const { process, waitId, committer, recorder } = context;
  const before = snapshotOf(context, process.id);
  const attempts = committer.attempts.length;
  await refused(process.deliverSignals(answer('bad', waitId, { approved: 'yes' })), '/approved');
  const after = snapshotOf(context, process.id);
  assert.equal(after.mailbox.json(), before.mailbox.json(), 'the mailbox is unchanged');
  assert.equal(committer.attempts.length, attempts, 'no commit was issued');
  assert.equal(after.status, 'waiting');
  assert.ok(after.waitId?.equals(waitId), 'the wait stays open and current');
  assert.ok(!recorder.events().some((event) => event.name === 'agent.signal.accepted'));
  // A refused identity was never admitted, so it may be used again for a good answer.
  assert.equal(await process.deliverSignals(answer('bad', waitId, { approved: true })), true);
  const result = await process.await();
  assert.equal(result.status, 'completed');
  assert.deepEqual(result.output?.decode(), { answer: { approved: true }, notes: [] });
});

test('a batch with a good note and a bad answer admits neither; the good pair then completes', async () => {
  const context = await waitingOn(staticGate);
  const { process, waitId, committer } = context;
  const attempts = committer.attempts.length;
  await refused(process.deliverSignals(hostRequest('n1', { note: 'first' }), answer('a1', waitId, { approved: true, extra: 1 })), '');
  const snapshot = snapshotOf(context, process.id);
  assert.deepEqual(
    snapshot.signalReceipts().filter((receipt) => !receipt.id.engineOwned).map((receipt) => receipt.id.toString()),
    [],
  );
  assert.equal(committer.attempts.length, attempts);
  assert.equal(await process.deliverSignals(hostRequest('n1', { note: 'first' }), answer('a1', waitId, { approved: false })), true);
  const result = await process.await();
  assert.deepEqual(result.output?.decode(), { answer: { approved: false }, notes: [{ note: 'first' }] });
});

test('currentWait lists the id, key, kind, effective schema, prompt and description', async () => {
  const context = await waitingOn(staticGate);
  const wait = snapshotOf(context, context.process.id).currentWait(staticGate.descriptor);
  assert.ok(wait !== undefined && Object.isFrozen(wait));
  assert.ok(wait.waitId.equals(context.waitId));
  assert.equal(wait.key.toString(), 'decision');
  assert.equal(wait.kind, 'external');
  assert.ok(wait.answerSchema?.equals(decisionSchema));
  assert.equal(wait.description, 'Approve or reject the request.');
  assert.equal(wait.prompt, undefined);
  // The descriptor must be the one the Process's DeploymentRef names.
  await rejectsWith(() => snapshotOf(context, context.process.id).currentWait(runtimeGate.descriptor), ErrorCode.invalidDescriptor);
  await context.process.kill('done');
  assert.equal((await context.process.await()).status, 'killed');
  assert.equal(snapshotOf(context, context.process.id).currentWait(staticGate.descriptor), undefined);

  const runtime = await waitingOn(runtimeGate);
  const carried = snapshotOf(runtime, runtime.process.id).currentWait(runtimeGate.descriptor);
  assert.ok(carried?.answerSchema?.equals(countSchema));
  assert.equal(carried?.prompt, 'How much to add?');
  assert.equal(carried?.description, undefined);
  assert.equal(carried?.key.toString(), 'round-1');
  await runtime.process.kill('done');

  // A declared key may still carry a run-time prompt; a wait with no contract admits any answer.
  const promptedGate = deploy(gateProgram({ waits: declared, options: { prompt: 'Ship 1.0?' } }), undefined, 'answers-prompted');
  const prompted = await waitingOn(promptedGate);
  const both = snapshotOf(prompted, prompted.process.id).currentWait(promptedGate.descriptor);
  assert.equal(both?.prompt, 'Ship 1.0?');
  assert.equal(both?.description, 'Approve or reject the request.');
  assert.ok(both?.answerSchema?.equals(decisionSchema));
  await prompted.process.kill('done');
  const openGate = deploy(gateProgram(), undefined, 'answers-open');
  const open = await waitingOn(openGate);
  assert.equal(snapshotOf(open, open.process.id).currentWait(openGate.descriptor)?.answerSchema, undefined);
  assert.equal(await open.process.deliverSignals(answer('any', open.waitId, ['anything', 1])), true);
  assert.deepEqual((await open.process.await()).output?.decode(), { answer: ['anything', 1], notes: [] });
});

test('a wait Effect carrying a schema for a key the descriptor declares fails the Process (contract)', async () => {
  const context = setup();
  const conflicting = deploy(gateProgram({ waits: declared, options: { answerSchema: countSchema } }), undefined, 'answers-conflict');
  const result = await context.engine.run(conflicting, Payload.encode({}));
  assert.equal(result.status, 'failed');
  assert.equal(result.termination.cause, 'contract_failure');
  assert.equal(result.termination.failure?.code, 'execution.effect.invalid');
});

test('a run-time schema is committed with the wait, survives capture and restore, and is enforced after it', async () => {
  const first = await waitingOn(runtimeGate);
  await refused(first.process.deliverSignals(answer('a', first.waitId, { add: '2' })), '/add');
  const head = await first.engine.captureTree(first.process.id);
  const opening = head.root.mailbox.wait(first.waitId);
  assert.ok(opening?.answerSchema?.equals(countSchema), 'the schema is in the committed wait record');
  assert.equal(opening?.prompt, 'How much to add?');
  assert.match(head.json(), /"opens":\{"answer_schema":\{/);

  // Restore from the stored bytes into a second Engine (fencing the first).
  const stored = TreeSnapshot.parse(head.json());
  const second = setup({ committer: new RecordingCommitter(first.committer.store) });
  const restored = await second.engine.restoreTree(runtimeGate, stored);
  const wait = snapshotOf(second, restored.id).currentWait(runtimeGate.descriptor);
  assert.ok(wait?.answerSchema?.equals(countSchema));
  assert.equal(wait?.prompt, 'How much to add?');
  const attempts = second.committer.attempts.length;
  await refused(restored.deliverSignals(answer('a', first.waitId, { add: '2' })), '/add');
  assert.equal(second.committer.attempts.length, attempts);
  assert.equal(await restored.deliverSignals(answer('a', first.waitId, { add: 2 })), true);
  const result = await restored.await();
  assert.deepEqual(result.output?.decode(), { answer: { add: 2 }, notes: [] });
  // Closed by the consumed answer, the wait's opening no longer keeps its contract.
  const final = second.engine.inspectTree(restored.id).processes[0]!.snapshot;
  assert.equal(final.mailbox.wait(first.waitId)?.answerSchema, undefined);
  assert.doesNotMatch(final.json(), /answer_schema/);
});

/** The waiting head with one more record: a pending answer to the current wait (no longer waiting). */
function withPendingAnswerWire(head: TreeSnapshot, waitId: WaitId, value: unknown): string {
  const tree = JSON.parse(head.json()) as { process_snapshots: Array<Record<string, unknown>> };
  const root = tree.process_snapshots[0] as Record<string, unknown> & { mailbox: { records: unknown[] } };
  root.mailbox.records.push({ id: 'late', payload: value, wait_id: waitId.toString() });
  root.status = 'running';
  delete root.current_wait_id;
  return JSON.stringify(tree);
}

test('restore validation rejects a pending answer its run-time schema rejects', async () => {
  const context = await waitingOn(runtimeGate);
  const head = await context.engine.captureTree(context.process.id);
  await rejectsWith(() => TreeSnapshot.parse(withPendingAnswerWire(head, context.waitId, { add: '2' })), ErrorCode.invalidTreeSnapshot);
  // The same edit with a conforming answer is a valid, restorable head (not activated: the store's
  // head is the unedited one).
  const good = TreeSnapshot.parse(withPendingAnswerWire(head, context.waitId, { add: 2 }));
  await setup().engine.validateRestorableTree(runtimeGate, good);
});

test('restore validation rejects a pending answer its declared schema rejects', async () => {
  const context = await waitingOn(staticGate);
  const head = await context.engine.captureTree(context.process.id);
  const withAnswer = (value: unknown) => {
    const root = head.root;
    const mailbox = root.mailbox.append(MailboxRecord.external(answer('late', context.waitId, value)));
    const next = root.with({ mailbox, status: 'running', currentWaitId: undefined });
    return TreeSnapshot.create({ incarnationId: head.incarnationId, treeLimits: head.treeLimits, processes: [next] });
  };
  const bad = withAnswer({ approved: 'yes' });
  const second = setup({ committer: new RecordingCommitter(context.committer.store) });
  const rejection = await rejectsWith(second.engine.validateRestorableTree(staticGate, bad), ErrorCode.invalidTreeSnapshot);
  assert.match(rejection.message, /\/approved/);
  await rejectsWith(second.engine.restoreTree(staticGate, bad), ErrorCode.invalidTreeSnapshot);
  assert.equal(second.committer.attempts.length, 0, 'nothing was activated');
  await second.engine.validateRestorableTree(staticGate, withAnswer({ approved: true }));
});

test('restore validation rejects a wait that carries a schema for a key its descriptor declares', async () => {
  // Captured under a deployment without the declaration, presented as one that declares the key.
  const context = await waitingOn(deploy(gateProgram({ options: { answerSchema: decisionSchema } }), undefined, 'answers-undeclared'));
  const head = await context.engine.captureTree(context.process.id);
  const declaring = gateProgram({ waits: declared });
  const json = head.json().replaceAll(context.process.deploymentRef.contractDigest.toString(), declaring.descriptor().digest().toString());
  // The ref's own digest covers the contract digest: rebuild it from the declaring deployment.
  const impostor = deploy(declaring, undefined, 'answers-impostor');
  const wire = JSON.parse(json) as { process_snapshots: Array<{ deployment_ref: unknown }> };
  wire.process_snapshots[0]!.deployment_ref = JSON.parse(impostor.ref.json());
  const tree = TreeSnapshot.parse(JSON.stringify(wire));
  await rejectsWith(setup().engine.validateRestorableTree(impostor, tree), ErrorCode.invalidTreeSnapshot);
});

test('CurrentWait values are validated and frozen', async () => {
  const waitId = WaitId.parse(`wait:${'a'.repeat(64)}`);
  const key = WaitKey.parse('k');
  const wait = CurrentWait.create({ waitId, key, kind: 'external', answerSchema: countSchema, prompt: 'Add?' });
  assert.ok(Object.isFrozen(wait));
  assert.equal(wait.description, undefined);
  await rejectsWith(() => CurrentWait.create({ waitId, key, kind: 'children', answerSchema: countSchema }), ErrorCode.invalidSnapshot);
  await rejectsWith(() => CurrentWait.create({ waitId, key, kind: 'other' as never }), ErrorCode.invalidSnapshot);
  await rejectsWith(() => CurrentWait.create({ waitId, key, kind: 'external', prompt: ' ' }), ErrorCode.invalidSnapshot);
  await rejectsWith(() => CurrentWait.create({ waitId: 'wait:x' as never, key, kind: 'external' }), ErrorCode.invalidSnapshot);
});
