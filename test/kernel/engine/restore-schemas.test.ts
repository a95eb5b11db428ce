/**
 * Issue 10, fix 2: restore (and its validation) checks the Deployment's output and Signal schemas
 * against the captured state, as the seed's RestoreTree and ValidateRestorableTree do. Each head
 * here is an acknowledged one edited to break one schema and installed as the store's head; the
 * unedited (or conformingly edited) head restores, so the refusal is the schema's.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ErrorCode } from '../../../src/kernel/errors.js';
import { MailboxRecord } from '../../../src/kernel/mailbox.js';
import { Payload } from '../../../src/kernel/payload.js';
import { PreparedStep } from '../../../src/kernel/prepared-step.js';
import { Schema } from '../../../src/kernel/schema.js';
import { Transition } from '../../../src/kernel/transition.js';
import type { TreeSnapshot } from '../../../src/kernel/tree-snapshot.js';
import { installHead, withRoot } from './edited-heads.js';
import { deploy, hostRequest, ProgramDefinition, published, RecordingCommitter, rejectsWith, setup, type Setup } from './harness.js';

const outputSchema = Schema.of({ type: 'object', properties: { value: { type: 'string' } }, required: ['value'], additionalProperties: false });
const signalSchema = Schema.of({ type: 'object', properties: { n: { type: 'number' } }, required: ['n'], additionalProperties: false });

/** Step 1 pauses; after a resume, Step 2 completes with `{"value":"ok"}`, consuming every signal. */
const program = deploy(
  new ProgramDefinition({
    name: 'test.restore_schemas',
    outputSchema,
    signalSchema,
    step: ({ step, signals }) => (step === 1 ? Transition.pause(0, 'held') : Transition.complete(signals.length, Payload.encode({ value: 'ok' }))),
  }),
  undefined,
  'restore-schemas',
);

async function pausedHead(): Promise<{ first: Setup; head: TreeSnapshot }> {
  const first = setup();
  const process = await first.engine.start(program, Payload.encode({}));
  await published(first.recorder, process.id, 'agent.process.paused');
  return { first, head: await first.engine.captureTree(process.id) };
}

/** Installs `edited` as the head, then shows validation and restore both refuse it, activating nothing. */
async function refusedOnRestore(first: Setup, edited: TreeSnapshot, reason: RegExp): Promise<void> {
  await installHead(first.committer, edited);
  const second = setup({ committer: new RecordingCommitter(first.committer.store) });
  const validation = await rejectsWith(second.engine.validateRestorableTree(program, edited), ErrorCode.invalidTreeSnapshot);
  assert.match(validation.message, reason);
  const restore = await rejectsWith(second.engine.restoreTree(program, edited), ErrorCode.invalidTreeSnapshot);
  assert.match(restore.message, reason);
  assert.equal(second.committer.attempts.length, 0, 'nothing was activated');
  assert.equal(second.engine.process(edited.rootId), undefined, 'nothing was published');
}

test('restore refuses a completed output that violates the output schema', async () => {
  const { first, head } = await pausedHead();
  const process = first.engine.process(head.rootId)!;
  await process.resume();
  assert.equal((await process.await()).status, 'completed');
  const completed = await first.engine.captureTree(process.id);
  await setup().engine.validateRestorableTree(program, completed);
  const edited = withRoot(completed, (root) => root.with({ output: Payload.encode({ value: 7 }) }));
  await refusedOnRestore(first, edited, /completed output does not satisfy the output schema/);
});

test('restore refuses a prepared completion output that violates the output schema', async () => {
  const { first, head } = await pausedHead();
  const completing = (value: unknown) =>
    withRoot(head, (root) =>
      root.with({
        status: 'running',
        pauseReason: undefined,
        prepared: PreparedStep.create({
          processId: root.processId,
          stepSequence: root.committedSteps + 1n,
          candidateState: root.committedExecutionState,
          intent: Transition.complete(0, Payload.encode(value)),
        }),
      }),
    );
  // The conforming candidate is adopted on restore: the output check guards a real path.
  const good = setup();
  await good.engine.validateRestorableTree(program, completing({ value: 'prepared' }));
  await refusedOnRestore(first, completing({ value: 'prepared', extra: true }), /prepared completion output does not satisfy the output schema/);
});

test('a restored prepared completion with a conforming output completes with it', async () => {
  const { first, head } = await pausedHead();
  const edited = withRoot(head, (root) =>
    root.with({
      status: 'running',
      pauseReason: undefined,
      prepared: PreparedStep.create({
        processId: root.processId,
        stepSequence: root.committedSteps + 1n,
        candidateState: root.committedExecutionState,
        intent: Transition.complete(0, Payload.encode({ value: 'prepared' })),
      }),
    }),
  );
  await installHead(first.committer, edited);
  const second = setup({ committer: new RecordingCommitter(first.committer.store) });
  const restored = await second.engine.restoreTree(program, edited);
  const result = await restored.await();
  assert.equal(result.status, 'completed');
  assert.deepEqual(result.output?.decode(), { value: 'prepared' });
});

test('restore refuses a pending unaddressed signal that violates the signal schema', async () => {
  const { first, head } = await pausedHead();
  const withSignal = (value: unknown) => withRoot(head, (root) => root.with({ mailbox: root.mailbox.append(MailboxRecord.external(hostRequest('late', value))) }));
  await setup().engine.validateRestorableTree(program, withSignal({ n: 1 }));
  await refusedOnRestore(first, withSignal({ n: 'one' }), /pending signal late does not satisfy the signal schema/);
});

test('a consumed signal keeps only its digest and is not checked again', async () => {
  // Delivered, consumed by the completing Step: the completed head keeps no payload to check, and
  // it restores under the same deployment.
  const { first, head } = await pausedHead();
  const process = first.engine.process(head.rootId)!;
  assert.equal(await process.deliverSignals(hostRequest('s', { n: 2 })), true);
  await process.resume();
  assert.equal((await process.await()).status, 'completed');
  const completed = await first.engine.captureTree(process.id);
  assert.equal(completed.root.mailbox.record(0)?.payload, undefined);
  const second = setup({ committer: new RecordingCommitter(first.committer.store) });
  const restored = await second.engine.restoreTree(program, completed);
  assert.equal((await restored.await()).status, 'completed');
});
